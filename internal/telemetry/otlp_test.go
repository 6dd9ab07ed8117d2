package telemetry_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/mcpsag/router/internal/telemetry"
	"github.com/mcpsag/router/internal/testlog"
)

// otlpSink is an in-process OTLP receiver: the three collector services
// over gRPC, and the same over HTTP/protobuf at /v1/{traces,metrics,logs}.
type otlpSink struct {
	mu      sync.Mutex
	spans   []*tracepb.ResourceSpans
	metrics []*metricspb.ResourceMetrics
	logs    []*logspb.ResourceLogs
}

type traceSvc struct {
	coltrace.UnimplementedTraceServiceServer
	s *otlpSink
}

func (v traceSvc) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.spans = append(v.s.spans, req.ResourceSpans...)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

type metricsSvc struct {
	colmetrics.UnimplementedMetricsServiceServer
	s *otlpSink
}

func (v metricsSvc) Export(_ context.Context, req *colmetrics.ExportMetricsServiceRequest) (*colmetrics.ExportMetricsServiceResponse, error) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.metrics = append(v.s.metrics, req.ResourceMetrics...)
	return &colmetrics.ExportMetricsServiceResponse{}, nil
}

type logsSvc struct {
	collogs.UnimplementedLogsServiceServer
	s *otlpSink
}

func (v logsSvc) Export(_ context.Context, req *collogs.ExportLogsServiceRequest) (*collogs.ExportLogsServiceResponse, error) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	v.s.logs = append(v.s.logs, req.ResourceLogs...)
	return &collogs.ExportLogsServiceResponse{}, nil
}

// serveGRPC starts the receiver's gRPC server and returns its endpoint URL.
func (s *otlpSink) serveGRPC(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltrace.RegisterTraceServiceServer(srv, traceSvc{s: s})
	colmetrics.RegisterMetricsServiceServer(srv, metricsSvc{s: s})
	collogs.RegisterLogsServiceServer(srv, logsSvc{s: s})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// serveHTTP starts the receiver's HTTP/protobuf server and returns its
// endpoint URL.
func (s *otlpSink) serveHTTP(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		req := &coltrace.ExportTraceServiceRequest{}
		if decodeOTLP(w, r, req) {
			_, _ = traceSvc{s: s}.Export(r.Context(), req)
			writeOTLP(w, &coltrace.ExportTraceServiceResponse{})
		}
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, r *http.Request) {
		req := &colmetrics.ExportMetricsServiceRequest{}
		if decodeOTLP(w, r, req) {
			_, _ = metricsSvc{s: s}.Export(r.Context(), req)
			writeOTLP(w, &colmetrics.ExportMetricsServiceResponse{})
		}
	})
	mux.HandleFunc("POST /v1/logs", func(w http.ResponseWriter, r *http.Request) {
		req := &collogs.ExportLogsServiceRequest{}
		if decodeOTLP(w, r, req) {
			_, _ = logsSvc{s: s}.Export(r.Context(), req)
			writeOTLP(w, &collogs.ExportLogsServiceResponse{})
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// decodeOTLP reads an OTLP/HTTP protobuf body (gzip or not) into msg, or
// answers 400 and returns false.
func decodeOTLP(w http.ResponseWriter, r *http.Request, msg proto.Message) bool {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err == nil {
		err = proto.Unmarshal(b, msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeOTLP(w http.ResponseWriter, msg proto.Message) {
	out, _ := proto.Marshal(msg)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// anyString renders an OTLP value the way attribute.Value.Emit renders the
// value it came from.
func anyString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return v.String()
}

func kvMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := make(map[string]*commonpb.AnyValue, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// receivedLog is one log record with its scope and resource.
type receivedLog struct {
	scope    string
	resource map[string]*commonpb.AnyValue
	rec      *logspb.LogRecord
}

func (s *otlpSink) logRecords() []receivedLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []receivedLog
	for _, rl := range s.logs {
		res := kvMap(rl.GetResource().GetAttributes())
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				out = append(out, receivedLog{scope: sl.GetScope().GetName(), resource: res, rec: lr})
			}
		}
	}
	return out
}

func TestOTLPExport(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			clearEnv(t)
			sink := &otlpSink{}
			endpoint := sink.serveHTTP(t)
			if protocol == "grpc" {
				endpoint = sink.serveGRPC(t)
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000") // only Shutdown's flush
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test")

			ctx := context.Background()
			stderr := &testlog.Buffer{}
			tel, err := telemetry.Setup(ctx, telemetry.Config{ServiceVersion: "1.2.3",
				Logger: slog.New(slog.NewJSONHandler(stderr, nil))})
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			evCtx := recordAll(t, tel)
			sc := trace.SpanContextFromContext(evCtx)
			tel.Logger().InfoContext(evCtx, "bridged log line", "component", "test")
			cc, srv := startGRPC(t, tel)
			if err := callEcho(ctx, cc, "Ping"); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			srv.GracefulStop()

			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if err := tel.Shutdown(sctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}

			logs := sink.logRecords()
			byEvent := map[string][]receivedLog{}
			for _, l := range logs {
				byEvent[l.rec.EventName] = append(byEvent[l.rec.EventName], l)
			}
			for _, tt := range wantEvents {
				recs := byEvent[tt.event]
				if len(recs) <= tt.index {
					t.Errorf("%s: received %d records, want more than %d", tt.event, len(recs), tt.index)
					continue
				}
				l := recs[tt.index]
				if l.scope != tt.scope {
					t.Errorf("%s: scope %q, want %q", tt.event, l.scope, tt.scope)
				}
				if got := hex.EncodeToString(l.rec.TraceId); got != sc.TraceID().String() {
					t.Errorf("%s: trace_id %s, want %s", tt.event, got, sc.TraceID())
				}
				if got := hex.EncodeToString(l.rec.SpanId); got != sc.SpanID().String() {
					t.Errorf("%s: span_id %s, want %s", tt.event, got, sc.SpanID())
				}
				if int(l.rec.SeverityNumber) != int(tt.sev) {
					t.Errorf("%s: severity %v, want %v", tt.event, l.rec.SeverityNumber, tt.sev)
				}
				if got := anyString(l.resource["service.name"]); got != telemetry.DefaultServiceName {
					t.Errorf("%s: service.name %q, want %q", tt.event, got, telemetry.DefaultServiceName)
				}
				if got := anyString(l.resource["service.version"]); got != "1.2.3" {
					t.Errorf("%s: service.version %q, want 1.2.3", tt.event, got)
				}
				attrs := kvMap(l.rec.Attributes)
				for k, want := range tt.want {
					v, ok := attrs[k]
					if !ok {
						t.Errorf("%s: attribute %s missing", tt.event, k)
						continue
					}
					if got := anyString(v); got != want {
						t.Errorf("%s: attribute %s = %q, want %q", tt.event, k, got, want)
					}
				}
			}
			// Candidates travel as a list of key-value lists.
			if sel := byEvent[telemetry.EventSkillSelected]; len(sel) > 0 {
				cands := kvMap(sel[0].rec.Attributes)["candidates"].GetArrayValue().GetValues()
				if len(cands) != 2 {
					t.Errorf("candidates: received %d, want 2", len(cands))
				} else if got := anyString(kvMap(cands[0].GetKvlistValue().GetValues())["skill"]); got != "pdf-tools" {
					t.Errorf("candidates[0].skill = %q, want pdf-tools", got)
				}
			}
			// The slog bridge carries trace correlation too.
			var bridged bool
			for _, l := range logs {
				if l.rec.Body.GetStringValue() == "bridged log line" {
					bridged = hex.EncodeToString(l.rec.TraceId) == sc.TraceID().String()
				}
			}
			if !bridged {
				t.Error("slog bridge: record missing or not correlated with the span")
			}

			// Spans: the test span and the otelgrpc server span.
			spanNames := map[string]string{}
			sink.mu.Lock()
			for _, rs := range sink.spans {
				for _, ss := range rs.ScopeSpans {
					for _, sp := range ss.Spans {
						spanNames[sp.Name] = hex.EncodeToString(sp.TraceId)
					}
				}
			}
			metricNames := map[string]bool{}
			for _, rm := range sink.metrics {
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						metricNames[m.Name] = true
					}
				}
			}
			sink.mu.Unlock()
			if got := spanNames["test-op"]; got != sc.TraceID().String() {
				t.Errorf("span test-op: trace %q, want %s (spans: %v)", got, sc.TraceID(), spanNames)
			}
			if _, ok := spanNames["mcpsag.test.Echo/Ping"]; !ok {
				t.Errorf("gRPC server span missing (spans: %v)", spanNames)
			}
			for _, name := range allMetricNames {
				if !metricNames[name] {
					t.Errorf("metric %s not received", name)
				}
			}
		})
	}
}

// allMetricNames lists every metric recordAll plus one gRPC call produce.
var allMetricNames = []string{
	telemetry.MetricMatchDuration, telemetry.MetricMatchCandidates, telemetry.MetricMatchAbstentions,
	telemetry.MetricMatchSelections, telemetry.MetricLoads, telemetry.MetricLoadDuration,
	telemetry.MetricLoadTokens, telemetry.MetricLoadTruncations, telemetry.MetricResourceRequests,
	telemetry.MetricResourceServed, telemetry.MetricExecDecisions, telemetry.MetricExecResults,
	telemetry.MetricExecDuration, telemetry.MetricEmbedFallbacks, telemetry.MetricEmbedCacheHits,
	telemetry.MetricEmbedCacheMisses, telemetry.MetricIndexSkills, telemetry.MetricReindexDuration,
	telemetry.MetricAdminCalls, telemetry.MetricRPCServerDuration,
}

// TestShutdownWithCollectorDown exports every signal over OTLP to a port
// nothing listens on, over gRPC and over HTTP, and shuts down with a
// deadline of 10 s: the stop must take well under 2 s with either (over
// gRPC, the exporter retried the refused collector with a backoff of
// seconds until the deadline: 5.1 s at the router's stop, against 0.13 s
// over HTTP).
func TestShutdownWithCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+closed)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
			t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "600000")
			ctx := context.Background()
			tel, err := telemetry.Setup(ctx, telemetry.Config{Logger: discardLogger()})
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}
			recordAll(t, tel)
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			err = tel.Shutdown(sctx)
			took := time.Since(start)
			t.Logf("%s: shutdown with the collector down took %v (%v)", protocol, took.Round(time.Millisecond), err)
			if took > 2*time.Second {
				t.Errorf("%s: shutdown took %v; want it bounded well under 2 s", protocol, took)
			}
		})
	}
}
