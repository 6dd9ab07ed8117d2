package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/models"
)

// TestStartAndStopAreLogged runs the router binary as an operator does and
// reads what it logs: the start line names the config file, every
// listener, the model and whether pprof is on; a SIGTERM is logged when it
// arrives, then the drain's start and end with the calls in flight (a
// health watch the grace period cuts off); a second signal is logged and
// stops at once. Before, only "router stopped" was.
func TestStartAndStopAreLogged(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	cfgFile := filepath.Join(t.TempDir(), "router.yaml")
	writeFile(t, cfgFile, "shutdown: {drain: 200ms, grace: 1s}\ntelemetry: {pprof: true}\n")
	p := startRouter(t, nil, "--workspace", ws, "--config", cfgFile, "--state-dir", t.TempDir(),
		"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0")
	start := p.waitLog(t, time.Minute, "the listening line", msgIs("router listening"))
	for key, want := range map[string]any{"config": cfgFile, "pprof": true, "workspace": ws} {
		if start[key] != want {
			t.Errorf("router listening: %s = %v, want %v", key, start[key], want)
		}
	}
	for _, key := range []string{"addr", "mcp_addr", "admin_addr", "socket"} {
		if s, _ := start[key].(string); s == "" {
			t.Errorf("router listening: %s = %v, want the listener's address", key, start[key])
		}
	}
	if m, _ := start["model"].(string); !strings.HasPrefix(m, "bundled "+models.DefaultName+" (") {
		t.Errorf("router listening: model = %q, want the bundled model and where it was unpacked", m)
	}
	p.waitLog(t, time.Minute, "the first index", msgIs("index generation published"))

	// A health watch is a stream that stays open: in flight until the
	// grace period cuts it off.
	conn, err := grpc.NewClient(start["addr"].(string), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := watch.Recv(); err != nil {
		t.Fatal(err)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	for _, want := range []struct {
		msg   string
		attrs map[string]any
	}{
		{"signal received: stopping", map[string]any{"signal": "terminated", "drain": "200ms", "grace": "1s"}},
		{"drain started: health says NOT_SERVING, calls in flight get the grace period", map[string]any{"grpc_in_flight": 1.0, "mcp_in_flight": 0.0}},
		{"drain ended: the grace period is over; calls still in flight were cut off", map[string]any{"level": "WARN", "grpc_in_flight": 1.0}},
		{"router stopped", nil},
	} {
		line, err := p.lookFor(0, msgIs(want.msg))
		if err != nil {
			t.Errorf("no %q line: %v\n%s", want.msg, err, strings.Join(p.stderr(), "\n"))
			continue
		}
		for k, v := range want.attrs {
			if line[k] != v {
				t.Errorf("%q: %s = %v, want %v", want.msg, k, line[k], v)
			}
		}
	}

	// Without calls in flight the drain ends with none.
	writeFile(t, cfgFile, "shutdown: {drain: 0s, grace: 10s}\n")
	p = startRouter(t, nil, "--workspace", ws, "--config", cfgFile, "--state-dir", t.TempDir(), "--addr", "127.0.0.1:0")
	p.waitLog(t, time.Minute, "the first index", msgIs("index generation published"))
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if line, err := p.lookFor(0, msgIs("drain ended: every call finished")); err != nil {
		t.Errorf("no drain's end: %v\n%s", err, strings.Join(p.stderr(), "\n"))
	} else if line["grpc_in_flight"] != 0.0 || line["socket_in_flight"] != 0.0 || line["mcp_in_flight"] != 0.0 {
		t.Errorf("drain ended with %v, want no call in flight", line)
	}

	// A second signal stops at once, during a drain of a minute.
	writeFile(t, cfgFile, "shutdown: {drain: 1m, grace: 1s}\n")
	p = startRouter(t, nil, "--workspace", ws, "--config", cfgFile, "--state-dir", t.TempDir(), "--addr", "127.0.0.1:0")
	p.waitLog(t, time.Minute, "the first index", msgIs("index generation published"))
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, 30*time.Second, "the drain's start", msgIs("drain started: health says NOT_SERVING, calls in flight get the grace period"))
	began := time.Now()
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after a second signal, want 0", code)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the router took %s to stop after a second signal, during a drain of a minute", took)
	}
	for msg, attrs := range map[string]map[string]any{
		"signal received: stopping": {"signal": "interrupt"},
		"second signal received: stopping at once, without waiting for calls in flight": {"signal": "terminated", "level": "WARN"},
		"drain ended: stopped at once, without waiting for calls in flight":             {"level": "WARN"},
	} {
		line, err := p.lookFor(0, msgIs(msg))
		if err != nil {
			t.Errorf("no %q line: %v\n%s", msg, err, strings.Join(p.stderr(), "\n"))
			continue
		}
		for k, v := range attrs {
			if line[k] != v {
				t.Errorf("%q: %s = %v, want %v", msg, k, line[k], v)
			}
		}
	}
}
