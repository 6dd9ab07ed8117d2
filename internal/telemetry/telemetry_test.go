package telemetry_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"

	"github.com/mcpsag/router/internal/telemetry"
)

func TestSetupNoop(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Config{Logger: discardLogger()})
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	if got := tel.AdminAddr(); got != "" {
		t.Errorf("AdminAddr: got %q, want empty", got)
	}
	if tel.MetricsHandler() != nil {
		t.Error("MetricsHandler: got a handler, want nil")
	}
	sctx, span := tel.Tracer().Start(ctx, "op")
	if span.IsRecording() {
		t.Error("span is recording with nothing configured")
	}
	span.End()
	recordAll(t, tel) // must not panic
	tel.Recorder().SkillSelected(sctx, telemetry.Selection{Task: "t"})
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

func TestSetupEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // substring; "" means Setup succeeds
	}{
		{"unknown traces exporter", map[string]string{"OTEL_TRACES_EXPORTER": "carrier-pigeon"},
			`telemetry: OTEL_TRACES_EXPORTER="carrier-pigeon" is not one the router knows; want otlp, console or none`},
		{"unknown metrics exporter", map[string]string{"OTEL_METRICS_EXPORTER": "statsd"},
			`OTEL_METRICS_EXPORTER="statsd" is not one the router knows; want otlp, prometheus, console or none`},
		{"unknown logs exporter", map[string]string{"OTEL_LOGS_EXPORTER": "OTLP"}, `OTEL_LOGS_EXPORTER="OTLP"`},
		{"unknown protocol", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "smoke-signals"},
			`OTEL_EXPORTER_OTLP_PROTOCOL="smoke-signals" is not one the router knows; want grpc or http/protobuf`},
		{"unknown protocol of a signal", map[string]string{"OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/json"}, `OTEL_EXPORTER_OTLP_LOGS_PROTOCOL="http/json"`},
		{"none everywhere", map[string]string{
			"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}, ""},
		{"sdk disabled", map[string]string{
			"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "carrier-pigeon"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			tel, err := telemetry.Setup(context.Background(), telemetry.Config{Logger: discardLogger()})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Setup: %v", err)
				}
				_ = tel.Shutdown(context.Background())
				return
			}
			if err == nil {
				_ = tel.Shutdown(context.Background())
				t.Fatalf("Setup: got nil error, want one containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Setup: got %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestSetupAdminAddrInUse(t *testing.T) {
	clearEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = telemetry.Setup(context.Background(), telemetry.Config{AdminAddr: ln.Addr().String(), Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "admin listener") {
		t.Errorf("Setup on a busy port: got %v, want an admin listener error", err)
	}
}

func TestResourceFromEnv(t *testing.T) {
	serviceName := func(cfg telemetry.Config) string {
		reader := sdkmetric.NewManualReader()
		cfg.MetricReaders = []sdkmetric.Reader{reader}
		cfg.Logger = discardLogger()
		tel, err := telemetry.Setup(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		tel.Recorder().EmbeddingFallback(context.Background(), "x")
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		v, _ := rm.Resource.Set().Value("service.name")
		return v.AsString()
	}
	clearEnv(t)
	if got := serviceName(telemetry.Config{}); got != telemetry.DefaultServiceName {
		t.Errorf("default: got %q, want %q", got, telemetry.DefaultServiceName)
	}
	if got := serviceName(telemetry.Config{ServiceName: "router-a"}); got != "router-a" {
		t.Errorf("Config.ServiceName: got %q, want router-a", got)
	}
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	if got := serviceName(telemetry.Config{ServiceName: "router-a"}); got != "from-env" {
		t.Errorf("OTEL_SERVICE_NAME: got %q, want from-env", got)
	}
}

func TestLogger(t *testing.T) {
	m := setupMem(t, telemetry.Config{LogLevel: slog.LevelInfo})
	ctx, span := m.Tracer().Start(context.Background(), "op")
	m.Logger().With("component", "loader").InfoContext(ctx, "loaded",
		"Authorization", "Bearer abc", "api_key", "k", "password", "p",
		slog.Group("grpc", "metadata", slog.GroupValue(slog.String("cookie", "c"))),
		"tokens", 42, "skill", "pdf-tools")
	span.End()

	var line map[string]any
	for _, l := range strings.Split(m.stderr.String(), "\n") {
		if strings.Contains(l, `"msg":"loaded"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("stderr line %q: %v", l, err)
			}
		}
	}
	if line == nil {
		t.Fatalf("stderr: no line for the record:\n%s", m.stderr.String())
	}
	for _, k := range []string{"Authorization", "api_key", "password"} {
		if line[k] != telemetry.Redacted {
			t.Errorf("%s: got %v, want %s", k, line[k], telemetry.Redacted)
		}
	}
	if got := line["grpc"].(map[string]any)["metadata"].(map[string]any)["cookie"]; got != telemetry.Redacted {
		t.Errorf("nested cookie: got %v, want %s", got, telemetry.Redacted)
	}
	if line["tokens"] != float64(42) || line["skill"] != "pdf-tools" || line["component"] != "loader" {
		t.Errorf("ordinary attributes changed: %v", line)
	}
	if line["trace_id"] != span.SpanContext().TraceID().String() {
		t.Errorf("trace_id: got %v, want %s", line["trace_id"], span.SpanContext().TraceID())
	}

	// The OTel half gets the same record, redacted and correlated.
	var found bool
	for _, r := range m.logs.records() {
		if r.Body().AsString() != "loaded" {
			continue
		}
		found = true
		if r.TraceID() != span.SpanContext().TraceID() {
			t.Errorf("bridged record: trace %s, want %s", r.TraceID(), span.SpanContext().TraceID())
		}
		if v := logAttrs(r)["Authorization"]; v.AsString() != telemetry.Redacted {
			t.Errorf("bridged Authorization: got %q", v.AsString())
		}
	}
	if !found {
		t.Error("bridged record missing")
	}

	// Below LogLevel: stderr (at debug in this test) has it, OTel does not.
	m.Logger().Debug("chatty")
	if !strings.Contains(m.stderr.String(), "chatty") {
		t.Error("debug line missing from stderr")
	}
	for _, r := range m.logs.records() {
		if r.Body().AsString() == "chatty" {
			t.Error("debug line exported below LogLevel")
		}
	}
}

func TestGRPCHandlerMethodNames(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	h := m.GRPCServerHandler()
	if h != m.GRPCServerHandler() {
		t.Error("GRPCServerHandler: got a new handler on the second call")
	}
	cc, _ := startGRPC(t, m.Telemetry)
	if err := callEcho(context.Background(), cc, "Ping"); err != nil {
		t.Fatal(err)
	}
	waitSpan(t, m, "mcpsag.test.Echo/Ping")
	// With an empty method set, every method is recorded as _OTHER.
	h.KnownMethods(emptyServices{})
	if err := callEcho(context.Background(), cc, "Ping"); err != nil {
		t.Fatal(err)
	}
	waitSpan(t, m, "_OTHER")
}

// waitSpan waits for a span named name: the server ends a call's span
// after the client has its answer.
func waitSpan(t *testing.T, m *memTelemetry, name string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var names []string
		for _, s := range m.spans.GetSpans() {
			if s.Name == name {
				return
			}
			names = append(names, s.Name)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q; got %v", name, names)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type emptyServices struct{}

func (emptyServices) GetServiceInfo() map[string]grpc.ServiceInfo { return nil }

// TestLoggerNamesOneComponent: a component's logger made from another's
// names the innermost component once; JSON readers reject or misread a
// key written twice.
func TestLoggerNamesOneComponent(t *testing.T) {
	m := setupMem(t, telemetry.Config{LogLevel: slog.LevelInfo})
	m.Logger().With("component", "router").With("component", "watch", "root", "skills").Info("watching")
	m.Logger().With("component", "mcp").WithGroup("req").With("id", 7).Info("grouped")
	for _, l := range strings.Split(strings.TrimSpace(m.stderr.String()), "\n") {
		if !strings.Contains(l, `"watching"`) && !strings.Contains(l, `"grouped"`) {
			continue
		}
		if n := strings.Count(l, `"component"`); n != 1 {
			t.Errorf("%d component keys in %s", n, l)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		switch line["msg"] {
		case "watching":
			if line["component"] != "watch" || line["root"] != "skills" {
				t.Errorf("watching: %v", line)
			}
		case "grouped":
			if line["component"] != "mcp" || line["req"].(map[string]any)["id"] != 7.0 {
				t.Errorf("grouped: %v", line)
			}
		}
	}
}
