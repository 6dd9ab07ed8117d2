package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

func TestHealth(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{
		Configure: func(c *config.Config) { c.Shutdown.Drain = 2 * time.Second },
	})

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"router service", []string{"health"}, 0, "SERVING\n"},
		{"whole server", []string{"health", "--service", ""}, 0, "SERVING\n"},
		{"unknown service", []string{"health", "--service", "no.such.Service"}, 1, "SERVICE_UNKNOWN\n"},
		{"stray argument", []string{"health", "extra"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := ctl(t, r.Addr, tc.args...)
			if res.code != tc.code || res.stdout != tc.stdout {
				t.Errorf("exit %d stdout %q, want %d %q (stderr %q)", res.code, res.stdout, tc.code, tc.stdout, res.stderr)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		res := ctl(t, r.Addr, "--json", "health")
		var got healthOutput
		if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, res.stdout)
		}
		want := healthOutput{Addr: r.Addr, Service: "mcpsag.router.v1.SkillRouter", Status: "SERVING", Serving: true}
		if res.code != 0 || got != want {
			t.Errorf("exit %d, got %+v, want %+v", res.code, got, want)
		}
	})

	t.Run("draining", func(t *testing.T) {
		stopped := make(chan struct{})
		go func() { r.Stop(t); close(stopped) }()
		defer func() { <-stopped }()
		deadline := time.Now().Add(time.Second + 500*time.Millisecond)
		for {
			res := ctl(t, r.Addr, "--timeout", "2s", "--json", "health")
			var got healthOutput
			if json.Unmarshal([]byte(res.stdout), &got) == nil && got.Status == "NOT_SERVING" {
				if res.code != 1 || got.Serving {
					t.Errorf("NOT_SERVING: exit %d, serving %v", res.code, got.Serving)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("still %+v (exit %d) after the drain began", got, res.code)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("router down", func(t *testing.T) {
		res := ctl(t, "127.0.0.1:1", "--timeout", "2s", "health")
		if res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, "Unavailable") {
			t.Errorf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
		}
	})
}
