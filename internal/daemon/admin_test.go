package daemon_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestPprofOptIn: Go's profiles are on the admin listener only when
// telemetry.pprof asks for them.
func TestPprofOptIn(t *testing.T) {
	get := func(t *testing.T, url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	for _, on := range []bool{false, true} {
		r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
			c.AdminAddr = "127.0.0.1:0"
			c.Telemetry.Pprof = on
		}})
		base := "http://" + r.Main.AdminAddr()
		code, body := get(t, base+"/debug/pprof/goroutine?debug=1")
		switch {
		case on && (code != http.StatusOK || !strings.Contains(body, "goroutine profile:")):
			t.Errorf("pprof on: goroutine profile %d %.100q", code, body)
		case !on && code != http.StatusNotFound:
			t.Errorf("pprof off: /debug/pprof/goroutine answered %d", code)
		}
		if code, _ := get(t, base+"/debug/pprof/heap"); on && code != http.StatusOK {
			t.Errorf("pprof on: heap profile %d", code)
		}
		if code, body := get(t, base+"/metrics"); code != http.StatusOK || !strings.Contains(body, "skillrouter_index_skills") {
			t.Errorf("pprof %v: /metrics %d", on, code)
		}
		r.Stop(t)
	}
}
