package telemetry_test

import (
	"context"
	"regexp"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// The recorder must satisfy the interface the embedding package reports
// fallbacks through.
var _ interface {
	EmbeddingFallback(ctx context.Context, reason string)
} = (*telemetry.Recorder)(nil)

func logAttrs(r sdklog.Record) map[string]attribute.Value {
	m := make(map[string]attribute.Value)
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		m[string(kv.Key)] = kv.Value
		return true
	})
	return m
}

func TestEvents(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	ctx := recordAll(t, m.Telemetry)
	sc := trace.SpanContextFromContext(ctx)

	for _, tt := range wantEvents {
		t.Run(tt.event, func(t *testing.T) {
			recs := m.logs.byEvent(tt.event)
			if len(recs) <= tt.index {
				t.Fatalf("got %d %s records, want more than %d", len(recs), tt.event, tt.index)
			}
			r := recs[tt.index]
			if got := r.InstrumentationScope().Name; got != tt.scope {
				t.Errorf("scope: got %q, want %q", got, tt.scope)
			}
			if r.TraceID() != sc.TraceID() || r.SpanID() != sc.SpanID() {
				t.Errorf("correlation: got trace %s span %s, want %s %s", r.TraceID(), r.SpanID(), sc.TraceID(), sc.SpanID())
			}
			if r.Severity() != tt.sev {
				t.Errorf("severity: got %v, want %v", r.Severity(), tt.sev)
			}
			got := logAttrs(r)
			for k, want := range tt.want {
				v, ok := got[k]
				if !ok {
					t.Errorf("attribute %s missing", k)
					continue
				}
				if v.Emit() != want {
					t.Errorf("attribute %s: got %q, want %q", k, v.Emit(), want)
				}
			}
		})
	}
}

func TestSkillSelectedCandidates(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	recordAll(t, m.Telemetry)
	r := m.logs.byEvent(telemetry.EventSkillSelected)[0]
	a := logAttrs(r)
	if h := a["task.hash"].AsString(); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(h) {
		t.Errorf("task.hash: got %q, want 32 hex digits", h)
	}
	if _, ok := a["task.text"]; ok {
		t.Error("task.text recorded without RecordTaskText")
	}
	cands := a["candidates"].AsSlice()
	if len(cands) != 2 {
		t.Fatalf("candidates: got %d, want 2", len(cands))
	}
	first := make(map[string]string)
	for _, kv := range cands[0].AsMap() {
		first[string(kv.Key)] = kv.Value.Emit()
	}
	want := map[string]string{"rank": "1", "skill": "pdf-tools", "source": "project", "score.fused": "0.82",
		"score.cosine": "0.82", "score.bm25": "7.5", "rank.dense": "1", "rank.bm25": "1"}
	for k, w := range want {
		if first[k] != w {
			t.Errorf("candidate[0].%s: got %q, want %q", k, first[k], w)
		}
	}
}

func TestTaskHashIsKeyed(t *testing.T) {
	hashWith := func(key string) string {
		m := setupMem(t, telemetry.Config{TaskHashKey: []byte(key)})
		m.Recorder().SkillSelected(context.Background(), telemetry.Selection{Task: "same task"})
		return logAttrs(m.logs.byEvent(telemetry.EventSkillSelected)[0])["task.hash"].AsString()
	}
	a1, a2, b := hashWith("key-a"), hashWith("key-a"), hashWith("key-b")
	if a1 != a2 {
		t.Errorf("same key: got %s and %s, want equal", a1, a2)
	}
	if a1 == b {
		t.Errorf("different keys: both %s, want different", a1)
	}
}

// metricValue sums the matching data points of the named metric: values
// for sums and gauges, counts for histograms. attrs filters data points by
// attribute (Emit form).
func metricValue(t *testing.T, rm metricdata.ResourceMetrics, name string, attrs map[string]string) (float64, bool) {
	t.Helper()
	match := func(set attribute.Set) bool {
		for k, v := range attrs {
			got, ok := set.Value(attribute.Key(k))
			if !ok || got.Emit() != v {
				return false
			}
		}
		return true
	}
	var sum float64
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			if md.Name != name {
				continue
			}
			found = true
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						sum += float64(dp.Value)
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						sum += float64(dp.Value)
					}
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						sum += float64(dp.Count)
					}
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					if match(dp.Attributes) {
						sum += float64(dp.Count)
					}
				}
			default:
				t.Fatalf("%s: unexpected data type %T", name, md.Data)
			}
		}
	}
	return sum, found
}

func TestMetrics(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	recordAll(t, m.Telemetry)
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		attrs map[string]string
		want  float64
	}{
		{telemetry.MetricMatchDuration, nil, 2},
		{telemetry.MetricMatchDuration, map[string]string{"outcome": "abstained", "mode": "hybrid"}, 1},
		{telemetry.MetricMatchCandidates, nil, 2},
		{telemetry.MetricMatchAbstentions, map[string]string{"reason": "below_threshold"}, 1},
		{telemetry.MetricMatchSelections, map[string]string{"skill": "pdf-tools", "source": "project"}, 1},
		{telemetry.MetricLoads, map[string]string{"level": "body", "skill": "pdf-tools", "truncated": "true"}, 1},
		{telemetry.MetricLoadDuration, map[string]string{"level": "body"}, 1},
		{telemetry.MetricLoadTokens, map[string]string{"level": "body"}, 5000},
		{telemetry.MetricLoadTruncations, map[string]string{"skill": "pdf-tools"}, 1},
		{telemetry.MetricResourceRequests, map[string]string{"allowed": "true", "reason": ""}, 1},
		{telemetry.MetricResourceRequests, map[string]string{"allowed": "false", "reason": "path_escape"}, 1},
		{telemetry.MetricResourceServed, map[string]string{"skill": "pdf-tools"}, 2048},
		{telemetry.MetricExecDecisions, map[string]string{"decision": "deny", "reason": "not_allowlisted"}, 1},
		{telemetry.MetricExecResults, map[string]string{"outcome": "error", "error.type": "exit_code"}, 1},
		{telemetry.MetricExecDuration, nil, 1},
		{telemetry.MetricEmbedFallbacks, map[string]string{"reason": "model_missing"}, 1},
		{telemetry.MetricEmbedCacheHits, map[string]string{"cache": "query"}, 5},
		{telemetry.MetricEmbedCacheMisses, map[string]string{"cache": "query"}, 1},
		{telemetry.MetricEmbedCacheHits, map[string]string{"cache": "document"}, 10},
		{telemetry.MetricEmbedCacheMisses, map[string]string{"cache": "document"}, 4},
		{telemetry.MetricIndexSkills, map[string]string{"state": "served"}, 8},
		{telemetry.MetricIndexSkills, map[string]string{"state": "invalid"}, 3},
		{telemetry.MetricReindexDuration, map[string]string{"outcome": "ok", "full": "true"}, 1},
		{telemetry.MetricAdminCalls, map[string]string{"method": "/mcpsag.router.v1.SkillRouter/Reindex", "decision": "allow"}, 1},
		{telemetry.MetricAuthFailures, map[string]string{"reason": "bad_token"}, 1},
		{telemetry.MetricAuthFailures, map[string]string{"reason": "client_limited"}, 2},
	}
	for _, tt := range tests {
		got, ok := metricValue(t, rm, tt.name, tt.attrs)
		if !ok {
			t.Errorf("%s: not exported", tt.name)
			continue
		}
		if got != tt.want {
			t.Errorf("%s%v: got %v, want %v", tt.name, tt.attrs, got, tt.want)
		}
	}
}

// TestUnknownSkillNotALabel: a skill name that was not found, or not looked
// up because script execution is off, is no label of the exec decisions;
// a found one is.
func TestUnknownSkillNotALabel(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	r := m.Recorder()
	r.ExecAttempted(context.Background(), telemetry.ExecAttempt{
		Skill: "made-up-123", Script: "x.sh", Decision: skill.DecisionDeny, Reason: string(skill.DenyNotFound)})
	r.ExecAttempted(context.Background(), telemetry.ExecAttempt{
		Skill: "made-up-456", Script: "x.sh", Decision: skill.DecisionDeny, Reason: string(skill.DenyExecDisabled)})
	r.ExecAttempted(context.Background(), telemetry.ExecAttempt{
		Skill: "pdf-forms", Script: "x.sh", Decision: skill.DecisionDeny, Reason: string(skill.DenyNotAllowlisted)})
	var rm metricdata.ResourceMetrics
	if err := m.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"made-up-123", "made-up-456"} {
		if n, _ := metricValue(t, rm, telemetry.MetricExecDecisions, map[string]string{"skill": name}); n != 0 {
			t.Errorf("skill %s became a label (%v points)", name, n)
		}
	}
	for _, reason := range []string{"not_found", "exec_disabled"} {
		if n, _ := metricValue(t, rm, telemetry.MetricExecDecisions, map[string]string{"skill": "", "reason": reason}); n != 1 {
			t.Errorf("%s decision: got %v, want 1", reason, n)
		}
	}
	if n, _ := metricValue(t, rm, telemetry.MetricExecDecisions, map[string]string{"skill": "pdf-forms"}); n != 1 {
		t.Errorf("a skill that was looked up: got %v points labelled with it, want 1", n)
	}
	// The audit record keeps the requested name.
	a := logAttrs(m.logs.byEvent(telemetry.EventExecAttempt)[0])
	if got := a["skill"].AsString(); got != "made-up-123" {
		t.Errorf("audit skill: got %q, want made-up-123", got)
	}
}

func TestAbstainWithoutReason(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	m.Recorder().SkillSelected(context.Background(), telemetry.Selection{Task: "x", Result: skill.MatchResult{}})
	a := logAttrs(m.logs.byEvent(telemetry.EventSkillSelected)[0])
	if a["abstained"].AsBool() != true || a["abstain.reason"].AsString() != "no_match" {
		t.Errorf("empty result: got abstained=%v reason=%q, want true, no_match", a["abstained"].AsBool(), a["abstain.reason"].AsString())
	}
}

func TestNilSafe(t *testing.T) {
	ctx := context.Background()
	var r *telemetry.Recorder
	r.SkillSelected(ctx, telemetry.Selection{Task: "t"})
	r.SkillLoaded(ctx, telemetry.Load{})
	r.ResourceRequested(ctx, telemetry.ResourceRequest{})
	r.ExecAttempted(ctx, telemetry.ExecAttempt{})
	r.ExecReported(ctx, telemetry.ExecResult{})
	r.EmbeddingFallback(ctx, "x")
	r.EmbeddingCache(ctx, telemetry.CacheQuery, 1, 1)
	r.RegisterEmbeddingCache(telemetry.CacheQuery, func() (int64, int64) { return 0, 0 })
	r.Reindexed(ctx, telemetry.Reindex{})
	r.AdminCalled(ctx, auth.AdminCall{})
	r.AuthFailed(ctx, auth.AuthFailure{})
	r.RegisterIndexGauge(func() telemetry.IndexSize { return telemetry.IndexSize{} })

	var tel *telemetry.Telemetry
	if tel.Recorder() != nil {
		t.Error("nil Telemetry: Recorder not nil")
	}
	tel.Logger().Info("dropped")
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("nil Telemetry: Shutdown: %v", err)
	}
	if tel.AdminAddr() != "" {
		t.Error("nil Telemetry: AdminAddr not empty")
	}
}
