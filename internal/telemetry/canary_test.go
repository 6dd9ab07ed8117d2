package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpsag/router/internal/telemetry"
)

// dumpValue writes v and everything nested in it.
func dumpValue(b *strings.Builder, v attribute.Value) {
	switch v.Type() {
	case attribute.MAP:
		for _, kv := range v.AsMap() {
			fmt.Fprintf(b, "%s=", kv.Key)
			dumpValue(b, kv.Value)
			b.WriteString(" ")
		}
	case attribute.SLICE:
		for _, e := range v.AsSlice() {
			dumpValue(b, e)
			b.WriteString(" ")
		}
	default:
		b.WriteString(v.Emit())
	}
}

// dumpLogs renders every field of the records that could carry text.
func dumpLogs(recs []sdklog.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%s %s %s ", r.EventName(), r.SeverityText(), r.InstrumentationScope().Name)
		dumpValue(&b, r.Body())
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			fmt.Fprintf(&b, " %s=", kv.Key)
			dumpValue(&b, kv.Value)
			return true
		})
		b.WriteString("\n")
	}
	return b.String()
}

// exported is everything one run of the canary scenario exported, by
// destination.
type exported map[string]string

// runCanaryScenario drives every path that could leak: all recorder
// events with the canary task (also quoted in candidate reasons, fired
// triggers and the abstain detail), a logger call with the canary token
// under secret-looking keys, gRPC calls carrying the token in metadata,
// the task in the request and the body in the reply, and a call to an
// unknown method whose name is the token. It returns what each exporter
// and the /metrics endpoint saw.
func runCanaryScenario(t *testing.T, cfg telemetry.Config) exported {
	t.Helper()
	cfg.AdminAddr = "127.0.0.1:0"
	m := setupMem(t, cfg)
	ctx := recordAll(t, m.Telemetry)

	m.Logger().InfoContext(ctx, "incoming request",
		"authorization", "Bearer "+canaryToken,
		"token", canaryToken,
		slog.Group("metadata", "x-api-key", canaryToken, "cookie", "session="+canaryToken),
		"tokens", 512)
	m.Logger().With("bearer", canaryToken).WarnContext(ctx, "with attrs")

	cc, srv := startGRPC(t, m.Telemetry)
	if err := callEcho(ctx, cc, "Ping"); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := callEcho(ctx, cc, "Fail"); err == nil {
		t.Fatal("Fail: got nil error")
	}
	if err := callEcho(ctx, cc, "/"+canaryToken+".Svc/Do"); status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: got %v, want Unimplemented", err)
	}
	srv.GracefulStop()

	out := exported{}
	spans, err := json.Marshal(m.spans.GetSpans())
	if err != nil {
		t.Fatal(err)
	}
	out["spans"] = string(spans)
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	mj, err := json.Marshal(rm)
	if err != nil {
		t.Fatal(err)
	}
	out["metrics"] = string(mj)
	out["logs"] = dumpLogs(m.logs.records())
	out["stderr"] = m.stderr.String()

	resp, err := http.Get("http://" + m.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	out["prometheus"] = string(body)
	return out
}

func TestCanary(t *testing.T) {
	out := runCanaryScenario(t, telemetry.Config{})

	// Positive controls: each destination saw the scenario.
	controls := map[string]string{
		"spans":      "mcpsag.test.Echo/Ping",
		"metrics":    telemetry.MetricMatchDuration,
		"logs":       telemetry.EventSkillSelected,
		"stderr":     telemetry.EventExecAttempt,
		"prometheus": "rpc_server_call_duration_seconds_bucket",
	}
	for dest, want := range controls {
		if !strings.Contains(out[dest], want) {
			t.Errorf("%s: control %q missing; the scenario did not reach it", dest, want)
		}
	}
	for dest, text := range out {
		for _, canary := range []string{"CANARY-TASK", "CANARY-TOKEN", "CANARY-BODY"} {
			if i := strings.Index(text, canary); i >= 0 {
				lo, hi := max(0, i-120), min(len(text), i+60)
				t.Errorf("%s leaks %s: ...%s...", dest, canary, text[lo:hi])
			}
		}
	}
	if !strings.Contains(out["stderr"], `"authorization":"REDACTED"`) {
		t.Error("stderr: authorization not shown as REDACTED")
	}
	if !strings.Contains(out["stderr"], `"tokens":512`) {
		t.Error("stderr: numeric tokens count was redacted")
	}
	if !strings.Contains(out["prometheus"], `rpc_method="_OTHER"`) {
		t.Errorf(`prometheus: unknown method not recorded as rpc_method="_OTHER": %s`, grepLines(out["prometheus"], "rpc_server_call_duration_seconds_count"))
	}
}

// TestCanaryTaskTextOptIn is the canary test's control: with
// RecordTaskText the task does reach the logs, so the search above would
// have found it; tokens and bodies still do not leak, and the task stays
// out of metrics and spans.
func TestCanaryTaskTextOptIn(t *testing.T) {
	out := runCanaryScenario(t, telemetry.Config{RecordTaskText: true})
	if !strings.Contains(out["logs"], canaryTask) {
		t.Error("logs: task text missing with RecordTaskText")
	}
	for dest, text := range out {
		if strings.Contains(text, "CANARY-TOKEN") || strings.Contains(text, "CANARY-BODY") {
			t.Errorf("%s leaks a token or body canary", dest)
		}
	}
	for _, dest := range []string{"spans", "metrics", "prometheus"} {
		if strings.Contains(out[dest], "CANARY-TASK") {
			t.Errorf("%s: task text leaked outside the logs", dest)
		}
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
