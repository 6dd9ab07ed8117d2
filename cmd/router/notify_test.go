package main

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestSystemdNotify runs the router as systemd runs a Type=notify service
// with a watchdog: READY=1 comes once it serves (its /readyz says so at
// that moment), WATCHDOG=1 more often than WATCHDOG_USEC, and STOPPING=1
// on SIGTERM.
func TestSystemdNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	next := func(within time.Duration) string {
		t.Helper()
		buf := make([]byte, 4096)
		_ = conn.SetReadDeadline(time.Now().Add(within))
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no notification within %s: %v", within, err)
		}
		return string(buf[:n])
	}

	const watchdog = 400 * time.Millisecond
	p := startRouter(t, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"},
		"--workspace", daemontest.CopyExamples(t), "--state-dir", t.TempDir(), "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	ready := next(time.Minute)
	if !strings.HasPrefix(ready, "READY=1\n") || !strings.Contains(ready, "STATUS=serving 7 skills") {
		t.Fatalf("first notification %q, want READY=1 and the status", ready)
	}
	admin := p.waitLog(t, 10*time.Second, "the listening line", msgIs("router listening"))["admin_addr"].(string)
	resp, err := http.Get("http://" + admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz %s after READY=1", resp.Status)
	}

	start := time.Now()
	for range 4 {
		if got := next(watchdog); got != "WATCHDOG=1" {
			t.Fatalf("notification %q, want WATCHDOG=1", got)
		}
	}
	if took := time.Since(start); took > 4*watchdog {
		t.Errorf("4 watchdog pings took %s, want them every half of %s", took, watchdog)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		got := next(10 * time.Second)
		if got == "WATCHDOG=1" {
			continue // sent before the signal arrived
		}
		if got != "STOPPING=1" {
			t.Fatalf("notification %q after SIGTERM, want STOPPING=1", got)
		}
		break
	}
	<-p.done
	if p.code != 0 {
		t.Errorf("exit %d", p.code)
	}
}
