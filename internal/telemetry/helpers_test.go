package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
	"github.com/mcpsag/router/internal/testlog"
)

// otelEnv lists the variables that would make a test export somewhere
// unexpected; clearEnv blanks them for the test.
var otelEnv = []string{
	"OTEL_SDK_DISABLED",
	"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
	"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
	"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
	"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SEMCONV_STABILITY_OPT_IN",
}

func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range otelEnv {
		t.Setenv(k, "")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// memLogs is an in-memory log processor: it keeps a clone of every record.
type memLogs struct {
	mu   sync.Mutex
	recs []sdklog.Record
}

func (m *memLogs) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (m *memLogs) OnEmit(_ context.Context, r *sdklog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs = append(m.recs, r.Clone())
	return nil
}
func (m *memLogs) Shutdown(context.Context) error   { return nil }
func (m *memLogs) ForceFlush(context.Context) error { return nil }

func (m *memLogs) records() []sdklog.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]sdklog.Record(nil), m.recs...)
}

// byEvent returns the records with the given event name.
func (m *memLogs) byEvent(name string) []sdklog.Record {
	var out []sdklog.Record
	for _, r := range m.records() {
		if r.EventName() == name {
			out = append(out, r)
		}
	}
	return out
}

// memTelemetry is a Telemetry whose every signal goes to memory.
type memTelemetry struct {
	*telemetry.Telemetry
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	logs   *memLogs
	stderr *testlog.Buffer
}

// setupMem builds a Telemetry with in-memory exporters for every signal and
// a debug-level stderr logger captured in a buffer. It is shut down at the
// end of the test.
func setupMem(t *testing.T, cfg telemetry.Config) *memTelemetry {
	t.Helper()
	clearEnv(t)
	m := &memTelemetry{
		spans:  tracetest.NewInMemoryExporter(),
		reader: sdkmetric.NewManualReader(),
		logs:   &memLogs{},
		stderr: &testlog.Buffer{},
	}
	cfg.ServiceVersion = "v0.0.0-test"
	cfg.Logger = slog.New(slog.NewJSONHandler(m.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.LogLevel == nil {
		cfg.LogLevel = slog.LevelDebug
	}
	cfg.SpanProcessors = append(cfg.SpanProcessors, sdktrace.NewSimpleSpanProcessor(m.spans))
	cfg.MetricReaders = append(cfg.MetricReaders, m.reader)
	cfg.LogProcessors = append(cfg.LogProcessors, m.logs)
	tel, err := telemetry.Setup(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	m.Telemetry = tel
	return m
}

// Canary values: they must never appear in exported telemetry (the task
// text only when RecordTaskText is set).
const (
	canaryTask  = "CANARY-TASK-7f3a9c please convert the quarterly report"
	canaryToken = "CANARY-TOKEN-d41d8cd98f00b204"
	canaryBody  = "CANARY-BODY-5e2b you are a helpful skill"
)

func testSkill(name string) *skill.Skill {
	return &skill.Skill{
		Name:    name,
		RelPath: name + "/SKILL.md",
		Root:    skill.Root{Path: "/srv/skills", Display: "skills", Kind: skill.KindProject},
	}
}

// recordAll records one of each event inside a span named "test-op" and
// returns that span's context. The task text is canaryTask.
func recordAll(t *testing.T, tel *telemetry.Telemetry) context.Context {
	t.Helper()
	rec := tel.Recorder()
	rec.RegisterIndexGauge(func() telemetry.IndexSize {
		return telemetry.IndexSize{Served: 8, Disabled: 1, Shadowed: 2, AgentScoped: 1, Invalid: 3}
	})
	ctx, span := tel.Tracer().Start(context.Background(), "test-op")
	defer span.End()

	rec.SkillSelected(ctx, telemetry.Selection{
		Task: canaryTask, Agent: "codex", TopK: 3,
		Result: skill.MatchResult{
			Candidates: []skill.Candidate{
				{Skill: testSkill("pdf-tools"), Cosine: 0.82, BM25: 7.5, Fused: 0.82, DenseRank: 1, BM25Rank: 1,
					TriggersFired: []string{"CANARY-TASK-7f3a9c"}, Reason: "quotes " + canaryTask},
				{Skill: testSkill("xlsx-report"), Cosine: 0.61, BM25: 2.1, Fused: 0.61, DenseRank: 2, BM25Rank: 3},
			},
			Mode: skill.ModeHybrid, Fusion: skill.FusionTiebreak, Generation: 4,
		},
		Latency: 3 * time.Millisecond,
	})
	rec.SkillSelected(ctx, telemetry.Selection{
		Task: canaryTask, Agent: "codex", TopK: 3,
		Result: skill.MatchResult{Abstained: true, AbstainReason: skill.AbstainBelowThreshold,
			AbstainDetail: "best 0.41 < 0.75 for " + canaryTask, Mode: skill.ModeHybrid},
		Latency: 2 * time.Millisecond,
	})
	rec.SkillLoaded(ctx, telemetry.Load{
		Skill: "pdf-tools", Source: skill.KindProject, Agent: "codex", Level: skill.LevelBody,
		Path: "pdf-tools/SKILL.md", Tokens: 5000, TotalTokens: 7310, Budget: 5000, Truncated: true,
		Latency: 4 * time.Millisecond,
	})
	rec.ResourceRequested(ctx, telemetry.ResourceRequest{
		Skill: "pdf-tools", Agent: "codex", Resource: "references/forms.md", Bytes: 2048, Allowed: true,
	})
	rec.ResourceRequested(ctx, telemetry.ResourceRequest{
		Skill: "pdf-tools", Agent: "codex", Resource: "../../etc/passwd", Allowed: false, DenyReason: "path_escape",
	})
	rec.ExecAttempted(ctx, telemetry.ExecAttempt{
		DecisionID: "dec-1", Skill: "pdf-tools", Script: "scripts/fill_form.py", Caller: "flow-runner",
		Principal: "token:ci-bot", Agent: "codex", Decision: skill.DecisionDeny, Reason: "not_allowlisted",
		Peer: "127.0.0.1:5555",
	})
	rec.ExecReported(ctx, telemetry.ExecResult{
		DecisionID: "dec-1", Skill: "pdf-tools", Script: "scripts/fill_form.py", Caller: "flow-runner",
		ExitCode: 2, Duration: 1500 * time.Millisecond, ErrorClass: "exit_code",
	})
	rec.EmbeddingFallback(ctx, "model_missing")
	rec.RegisterEmbeddingCache(telemetry.CacheQuery, func() (int64, int64) { return 3, 1 })
	rec.EmbeddingCache(ctx, telemetry.CacheQuery, 2, 0)
	rec.EmbeddingCache(ctx, telemetry.CacheDocument, 10, 4)
	rec.Reindexed(ctx, telemetry.Reindex{Full: true, Duration: 250 * time.Millisecond, Scanned: 14, Added: 14,
		Parsed: 14, Embedded: 11, Invalid: 3, Generation: 4})
	rec.Reindexed(ctx, telemetry.Reindex{Duration: time.Millisecond, Err: fmt.Errorf("scan: %w", context.Canceled)})
	rec.AdminCalled(ctx, auth.AdminCall{Method: "/mcpsag.router.v1.SkillRouter/Reindex",
		Principal: "token:ops", Decision: skill.DecisionAllow, Peer: "127.0.0.1:5556", Code: "OK"})
	rec.AuthFailed(ctx, auth.AuthFailure{Peer: "192.0.2.7", Method: "/mcpsag.router.v1.SkillRouter/Match",
		Reason: auth.ReasonBadToken, Audit: true})
	rec.AuthFailed(ctx, auth.AuthFailure{Peer: "192.0.2.7", Method: "/mcpsag.router.v1.SkillRouter/Match",
		Reason: auth.ReasonClientLimited, Audit: true, Unaudited: 41, RetryAfter: 6 * time.Second})
	rec.AuthFailed(ctx, auth.AuthFailure{Peer: "192.0.2.7", Reason: auth.ReasonClientLimited})
	return ctx
}

// echoDesc is a tiny hand-written service. Ping answers canaryBody, as a
// Load reply would carry a skill body; Fail returns INTERNAL.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "mcpsag.test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Ping", Handler: echoHandler(nil)},
		{MethodName: "Fail", Handler: echoHandler(status.Error(codes.Internal, "boom"))},
	},
}

func echoHandler(fail error) grpc.MethodHandler {
	return func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		if fail != nil {
			return nil, fail
		}
		return wrapperspb.String(canaryBody), nil
	}
}

// callEcho invokes method (a full method name, or a method of
// mcpsag.test.Echo) with canaryTask as the request and a bearer token in
// the metadata, and returns the call's error.
func callEcho(ctx context.Context, cc *grpc.ClientConn, method string) error {
	if !strings.HasPrefix(method, "/") {
		method = "/mcpsag.test.Echo/" + method
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+canaryToken)
	return cc.Invoke(ctx, method, wrapperspb.String(canaryTask), new(wrapperspb.StringValue))
}

// startGRPC serves the health and echo services on loopback with tel's
// stats handler and returns a client connection and the server. Unknown
// methods go to an UnknownServiceHandler (answering UNIMPLEMENTED), so that
// grpc-go reports them to the stats handler; without one it skips the End
// event for them. The server records a call's span and duration after the
// client has its answer: GracefulStop the server before reading them.
func startGRPC(t *testing.T, tel *telemetry.Telemetry) (*grpc.ClientConn, *grpc.Server) {
	t.Helper()
	h := tel.GRPCServerHandler()
	srv := grpc.NewServer(grpc.StatsHandler(h),
		grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
			return status.Error(codes.Unimplemented, "no such method")
		}))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	srv.RegisterService(&echoDesc, struct{}{})
	h.KnownMethods(srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc, srv
}

// eventWant is what one record emitted by recordAll must look like.
type eventWant struct {
	event string
	index int // which record of that event
	scope string
	sev   otellog.Severity
	want  map[string]string // attribute -> Value.Emit()
}

const (
	events = telemetry.ScopeName
	audit  = telemetry.AuditScopeName
)

// wantEvents describes the records recordAll emits.
var wantEvents = []eventWant{
	{telemetry.EventSkillSelected, 0, events, otellog.SeverityInfo, map[string]string{
		"agent": "codex", "top_k": "3", "candidates.count": "2", "abstained": "false",
		"mode": "hybrid", "fusion": "tiebreak", "degraded": "false", "index.generation": "4",
		"task.chars": "54", "duration_ms": "3",
	}},
	{telemetry.EventSkillSelected, 1, events, otellog.SeverityInfo, map[string]string{
		"abstained": "true", "abstain.reason": "below_threshold", "candidates.count": "0",
	}},
	{telemetry.EventSkillLoaded, 0, events, otellog.SeverityInfo, map[string]string{
		"skill": "pdf-tools", "source": "project", "level": "body", "path": "pdf-tools/SKILL.md",
		"tokens": "5000", "tokens.total": "7310", "tokens.budget": "5000", "truncated": "true", "duration_ms": "4",
	}},
	{telemetry.EventResourceRequested, 0, events, otellog.SeverityInfo, map[string]string{
		"skill": "pdf-tools", "resource": "references/forms.md", "bytes": "2048", "allowed": "true",
	}},
	{telemetry.EventResourceRequested, 1, events, otellog.SeverityInfo, map[string]string{
		"resource": "../../etc/passwd", "bytes": "0", "allowed": "false", "deny.reason": "path_escape",
	}},
	{telemetry.EventExecAttempt, 0, audit, otellog.SeverityInfo, map[string]string{
		"log.type": "audit", "decision.id": "dec-1", "skill": "pdf-tools", "script": "scripts/fill_form.py",
		"caller": "flow-runner", "principal": "token:ci-bot", "decision": "deny", "reason": "not_allowlisted",
		"client.address": "127.0.0.1:5555",
	}},
	{telemetry.EventExecResult, 0, audit, otellog.SeverityInfo, map[string]string{
		"log.type": "audit", "decision.id": "dec-1", "exit_code": "2", "duration_ms": "1500",
		"outcome": "error", "error.type": "exit_code",
	}},
	{telemetry.EventEmbeddingFallback, 0, events, otellog.SeverityWarn, map[string]string{
		"reason": "model_missing",
	}},
	{telemetry.EventReindexed, 0, events, otellog.SeverityInfo, map[string]string{
		"full": "true", "outcome": "ok", "duration_ms": "250", "scanned": "14", "invalid": "3", "embedded": "11",
	}},
	{telemetry.EventReindexed, 1, events, otellog.SeverityInfo, map[string]string{"outcome": "canceled"}},
	{telemetry.EventAdminCall, 0, audit, otellog.SeverityInfo, map[string]string{
		"log.type": "audit", "method": "/mcpsag.router.v1.SkillRouter/Reindex", "principal": "token:ops",
		"decision": "allow", "code": "OK",
	}},
	{telemetry.EventAuthFailure, 0, audit, otellog.SeverityWarn, map[string]string{
		"log.type": "audit", "method": "/mcpsag.router.v1.SkillRouter/Match", "reason": "bad_token",
		"client.address": "192.0.2.7", "unaudited": "0",
	}},
	{telemetry.EventAuthFailure, 1, audit, otellog.SeverityWarn, map[string]string{
		"reason": "client_limited", "unaudited": "41", "retry_after_ms": "6000",
	}},
}
