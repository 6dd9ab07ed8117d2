package reliability

import (
	"net"
	"testing"
	"time"
)

// TestStopWithMetricsExport stops routers that export metrics through the
// OTEL_* environment (as an OTLP collector would be set up; here to the
// console, so that no collector is needed): the exporter collects once more
// while the router shuts down, after the router and the model are closed,
// and that collection reads their gauges. Every stop must be an orderly
// exit 0.
func TestStopWithMetricsExport(t *testing.T) {
	ws := newWorkspace(t, 40, 23)
	for i := range scale(3, 10) {
		r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir(), Env: []string{
			"OTEL_METRICS_EXPORTER=console", "OTEL_METRIC_EXPORT_INTERVAL=3600000",
		}})
		if err := r.WaitCaughtUp(time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r.Stop(); err != nil || r.Crashed() {
			t.Fatalf("stop %d: %v (crashed %v)\n%s", i, err, r.Crashed(), r.logs.tail(30))
		}
	}
}

// TestStopWithCollectorDown stops routers that export every signal over
// OTLP to a port nothing listens on, over gRPC and over HTTP, with SIGTERM:
// each must exit 0 within 3 s (over gRPC the stop waited 5.1 s for the
// exporter's retries, against 0.13 s over HTTP).
func TestStopWithCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	ws := newWorkspace(t, 40, 71)
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		for i := range scale(2, 5) {
			r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir(), Env: []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + closed, "OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
				"OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=otlp", "OTEL_LOGS_EXPORTER=otlp",
			}})
			if err := r.WaitCaughtUp(time.Minute); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err := r.Stop()
			took := time.Since(start)
			t.Logf("%s, stop %d: %v", protocol, i+1, took.Round(time.Millisecond))
			if err != nil || r.Crashed() {
				t.Fatalf("%s, stop %d: %v (crashed %v)\n%s", protocol, i+1, err, r.Crashed(), r.logs.tail(30))
			}
			if took > 3*time.Second {
				t.Errorf("%s, stop %d took %v; want it bounded (3 s)", protocol, i+1, took)
			}
		}
	}
}
