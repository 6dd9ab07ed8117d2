package reliability

import (
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
