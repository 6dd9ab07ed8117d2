package telemetry

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Recorder emits the router's skill events: each call writes one OTel log
// record (correlated with the span in ctx) and updates the matching
// metrics. Every method is safe on a nil *Recorder, which does nothing, so
// callers never check. Methods never return errors.
type Recorder struct {
	events   otellog.Logger // scope ScopeName
	audit    otellog.Logger // scope AuditScopeName
	log      *slog.Logger   // stderr mirror of events, at Debug (Warn for warnings)
	auditLog *slog.Logger   // stderr mirror of audit records, at Info

	recordTaskText bool
	hashKey        []byte

	matchDuration   metric.Float64Histogram
	matchCandidates metric.Int64Histogram
	abstentions     metric.Int64Counter
	selections      metric.Int64Counter
	loads           metric.Int64Counter
	loadDuration    metric.Float64Histogram
	loadTokens      metric.Int64Counter
	truncations     metric.Int64Counter
	resRequests     metric.Int64Counter
	resServed       metric.Int64Counter
	execDecisions   metric.Int64Counter
	execResults     metric.Int64Counter
	execDuration    metric.Float64Histogram
	fallbacks       metric.Int64Counter
	cacheHits       metric.Int64ObservableCounter
	cacheMisses     metric.Int64ObservableCounter
	reindexDuration metric.Float64Histogram
	adminCalls      metric.Int64Counter
	mcpCalls        metric.Int64Counter
	authFailures    metric.Int64Counter
	toolCalls       metric.Int64Counter
	toolDuration    metric.Float64Histogram

	indexFn     atomic.Pointer[func() IndexSize]
	embeddingFn atomic.Pointer[func() Embedding]
	stateFn     atomic.Pointer[func() RouterState]

	// instruments are the counters and histograms made above, for the
	// zero series /metrics serves until they record.
	instruments []instrument

	cacheMu     sync.Mutex
	cachePushed map[string]*[2]int64                   // cache -> hits, misses from EmbeddingCache
	cacheFns    map[string]func() (hits, misses int64) // from RegisterEmbeddingCache
}

// Bucket boundaries, in the instrument's unit.
var (
	latencyBuckets   = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	longBuckets      = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	candidateBuckets = []float64{0, 1, 2, 3, 4, 5, 10, 20, 50}
)

func newRecorder(mp metric.MeterProvider, lp otellog.LoggerProvider, log *slog.Logger, cfg Config) (*Recorder, error) {
	r := &Recorder{
		events:         lp.Logger(ScopeName),
		audit:          lp.Logger(AuditScopeName),
		log:            log.With("component", "events"),
		auditLog:       log.With("component", "audit"),
		recordTaskText: cfg.RecordTaskText,
		hashKey:        cfg.TaskHashKey,
		cachePushed:    make(map[string]*[2]int64),
		cacheFns:       make(map[string]func() (int64, int64)),
	}
	if len(r.hashKey) == 0 {
		r.hashKey = make([]byte, 32)
		if _, err := rand.Read(r.hashKey); err != nil {
			return nil, fmt.Errorf("telemetry: task hash key: %w", err)
		}
	}

	b := &instrumentMaker{m: mp.Meter(ScopeName), r: r}
	r.makeCallInstruments(b)
	r.makeCacheCounters(b)
	r.makeServiceInstruments(b)
	r.makeEmbeddingGauges(b)
	b.add(r.registerStateGauges(b.m, cfg.Ready))
	for _, err := range b.errs {
		if err != nil {
			return nil, fmt.Errorf("telemetry: create instrument: %w", err)
		}
	}
	return r, nil
}

// instrumentMaker makes a Recorder's instruments on one meter, keeps their
// errors, and declares each for the zero fill of /metrics
// (Recorder.instruments).
type instrumentMaker struct {
	m    metric.Meter
	r    *Recorder
	errs []error
}

func (b *instrumentMaker) add(err error) { b.errs = append(b.errs, err) }

func (b *instrumentMaker) declare(name, unit, desc string, histogram bool) {
	b.r.instruments = append(b.r.instruments, instrument{name: name, unit: unit, help: desc, scope: ScopeName, histogram: histogram})
}

// f64h makes and declares a float histogram with buckets.
func (b *instrumentMaker) f64h(name, unit, desc string, buckets []float64) metric.Float64Histogram {
	h, err := b.m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	b.add(err)
	b.declare(name, unit, desc, true)
	return h
}

// i64c makes and declares an integer counter.
func (b *instrumentMaker) i64c(name, unit, desc string) metric.Int64Counter {
	c, err := b.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.add(err)
	b.declare(name, unit, desc, false)
	return c
}

// makeCallInstruments makes the instruments of the skill events: match,
// load, resource requests, exec, and keyword-only fallbacks.
func (r *Recorder) makeCallInstruments(b *instrumentMaker) {
	r.matchDuration = b.f64h(MetricMatchDuration, "s", "Time to answer a Match, by outcome (selected, abstained).", latencyBuckets)
	var err error
	r.matchCandidates, err = b.m.Int64Histogram(MetricMatchCandidates, metric.WithUnit("{candidate}"),
		metric.WithDescription("Candidates returned per Match."),
		metric.WithExplicitBucketBoundaries(candidateBuckets...))
	b.add(err)
	b.declare(MetricMatchCandidates, "{candidate}", "Candidates returned per Match.", true)
	r.abstentions = b.i64c(MetricMatchAbstentions, "{abstention}", "Matches that returned no skill, by reason.")
	r.selections = b.i64c(MetricMatchSelections, "{selection}", "Matches whose top candidate was the skill.")
	r.loads = b.i64c(MetricLoads, "{load}", "Skill loads, by level.")
	r.loadDuration = b.f64h(MetricLoadDuration, "s", "Time to serve a Load, by level.", latencyBuckets)
	r.loadTokens = b.i64c(MetricLoadTokens, "{token}", "Estimated tokens served by Load, by level.")
	r.truncations = b.i64c(MetricLoadTruncations, "{truncation}", "Level-2 loads cut to the token budget.")
	r.resRequests = b.i64c(MetricResourceRequests, "{request}", "Level-3 resource requests, by allowed and deny reason.")
	r.resServed = b.i64c(MetricResourceServed, "By", "Bytes of resource files served.")
	r.execDecisions = b.i64c(MetricExecDecisions, "{decision}", "AuthorizeExec decisions, by decision and reason.")
	r.execResults = b.i64c(MetricExecResults, "{result}", "Reported script results, by outcome and error type.")
	r.execDuration = b.f64h(MetricExecDuration, "s", "Reported script run time.", longBuckets)
	r.fallbacks = b.i64c(MetricEmbedFallbacks, "{fallback}", "Switches to keyword-only matching, by reason.")
}

// makeCacheCounters makes the embedding caches' hit and miss counters,
// observed from the caches' own counts (observeCaches).
func (r *Recorder) makeCacheCounters(b *instrumentMaker) {
	var err error
	r.cacheHits, err = b.m.Int64ObservableCounter(MetricEmbedCacheHits, metric.WithUnit("{lookup}"),
		metric.WithDescription("Embedding cache hits, by cache (query, document)."))
	b.add(err)
	r.cacheMisses, err = b.m.Int64ObservableCounter(MetricEmbedCacheMisses, metric.WithUnit("{lookup}"),
		metric.WithDescription("Embedding cache misses, by cache (query, document)."))
	b.add(err)
	b.declare(MetricEmbedCacheHits, "{lookup}", "Embedding cache hits, by cache (query, document).", false)
	b.declare(MetricEmbedCacheMisses, "{lookup}", "Embedding cache misses, by cache (query, document).", false)
	if err == nil {
		_, err = b.m.RegisterCallback(r.observeCaches, r.cacheHits, r.cacheMisses)
		b.add(err)
	}
}

// makeServiceInstruments makes the instruments of the calls around the
// skills: reindexing, admin and MCP calls, failed authentication, and the
// calls of tools of MCP servers.
func (r *Recorder) makeServiceInstruments(b *instrumentMaker) {
	r.reindexDuration = b.f64h(MetricReindexDuration, "s", "Time to reindex, by outcome and full.", longBuckets)
	r.adminCalls = b.i64c(MetricAdminCalls, "{call}", "Admin calls, by method and decision.")
	r.mcpCalls = b.i64c(MetricMCPCalls, "{call}", "MCP requests, by method, decision and outcome.")
	r.authFailures = b.i64c(MetricAuthFailures, "{call}", "Calls that failed authentication or were refused after too many failures, by reason.")
	r.toolCalls = b.i64c(MetricToolCalls, "{call}", "Calls to tools of MCP servers, by server, decision, reason and outcome.")
	r.toolDuration = b.f64h(MetricToolCallDuration, "s", "Time of allowed tool calls, by server and outcome.", longBuckets)
}

// makeEmbeddingGauges makes the gauges observed from the index and the
// embedding model: skills by state, the background embedding's backlog,
// and the model matching uses.
func (r *Recorder) makeEmbeddingGauges(b *instrumentMaker) {
	_, err := b.m.Int64ObservableGauge(MetricIndexSkills, metric.WithUnit("{skill}"),
		metric.WithDescription("Skills in the index, by state (served, disabled, shadowed, agent_scoped, invalid)."),
		metric.WithInt64Callback(r.observeIndex))
	b.add(err)
	backlog, err := b.m.Int64ObservableGauge(MetricEmbedBacklog, metric.WithUnit("{text}"),
		metric.WithDescription("Skill texts the model still has to embed in the background; 0 once its vectors are served."))
	b.add(err)
	served, err := b.m.Int64ObservableGauge(MetricEmbedServed, metric.WithUnit("1"),
		metric.WithDescription("1 for the embedding model whose vectors matching uses, by tier (primary, fast, none) and model."))
	b.add(err)
	if backlog == nil || served == nil {
		return
	}
	_, err = b.m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		fp := r.embeddingFn.Load()
		if fp == nil || *fp == nil {
			return nil
		}
		e := (*fp)()
		o.ObserveInt64(backlog, e.Backlog)
		o.ObserveInt64(served, 1, metric.WithAttributes(attribute.String(keyTier, e.Tier), attribute.String(keyModel, e.Model)))
		return nil
	}, backlog, served)
	b.add(err)
}

// IndexSize is a snapshot of the index for the skillrouter.index.skills
// gauge.
type IndexSize struct {
	Served      int64 // skills served to callers without an agent
	Disabled    int64 // disabled in a registry
	Shadowed    int64 // lost a name collision
	AgentScoped int64 // visible to one agent only
	Invalid     int64 // SKILL.md files skipped because of errors
}

// Embedding is a snapshot of the embedding state for the
// skillrouter.embed.backlog and skillrouter.embed.served gauges.
type Embedding struct {
	// Tier is the model whose vectors matching uses: "primary", "fast"
	// (served while the primary model's are computed, or when it is
	// unavailable) or "none" (keywords only); Model names it.
	Tier, Model string
	// Backlog counts the texts the primary model still has to embed in
	// the background.
	Backlog int64
}

// RegisterEmbeddingGauge sets the function the embedding gauges read at
// each collection; like RegisterIndexGauge's, it must be fast.
func (r *Recorder) RegisterEmbeddingGauge(f func() Embedding) {
	if r == nil {
		return
	}
	r.embeddingFn.Store(&f)
}

// RegisterIndexGauge sets the function the skillrouter.index.skills gauge
// reads at each collection. It must be fast and safe to call from any
// goroutine; a later call replaces the function. Until it is called, the
// gauge reports nothing.
func (r *Recorder) RegisterIndexGauge(f func() IndexSize) {
	if r == nil {
		return
	}
	r.indexFn.Store(&f)
}

func (r *Recorder) observeIndex(_ context.Context, o metric.Int64Observer) error {
	fp := r.indexFn.Load()
	if fp == nil || *fp == nil {
		return nil
	}
	s := (*fp)()
	for _, st := range []struct {
		state string
		n     int64
	}{
		{"served", s.Served},
		{"disabled", s.Disabled},
		{"shadowed", s.Shadowed},
		{"agent_scoped", s.AgentScoped},
		{"invalid", s.Invalid},
	} {
		o.Observe(st.n, metric.WithAttributes(attribute.String(keyState, st.state)))
	}
	return nil
}

// emit writes one event as an OTel log record on lg and mirrors it to the
// stderr logger (audit records at Info, the rest at Debug).
func (r *Recorder) emit(ctx context.Context, lg otellog.Logger, name string, sev otellog.Severity, audit bool, attrs []attribute.KeyValue) {
	if audit {
		attrs = append(attrs, attribute.String(keyLogType, "audit"))
	}
	if tr := skill.OriginFrom(ctx).Transport; tr != "" {
		attrs = append(attrs, attribute.String(keyTransport, tr))
	}
	if lg.Enabled(ctx, otellog.EnabledParameters{Severity: sev, EventName: name}) {
		var rec otellog.Record
		now := time.Now()
		rec.SetTimestamp(now)
		rec.SetObservedTimestamp(now)
		rec.SetEventName(name)
		rec.SetSeverity(sev)
		rec.SetSeverityText(sev.String())
		rec.SetBody(attribute.StringValue(name))
		rec.AddAttributes(attrs...)
		lg.Emit(ctx, rec)
	}

	level := slog.LevelDebug
	if audit {
		level = slog.LevelInfo
	}
	if sev >= otellog.SeverityWarn {
		level = slog.LevelWarn
	}
	sl := r.log
	if audit {
		sl = r.auditLog
	}
	if !sl.Enabled(ctx, level) {
		return
	}
	sattrs := make([]slog.Attr, 0, len(attrs)+3)
	sattrs = append(sattrs, slog.String("event", name))
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		sattrs = append(sattrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	for _, a := range attrs {
		sattrs = append(sattrs, slogAttr(string(a.Key), a.Value))
	}
	sl.LogAttrs(ctx, level, name, sattrs...)
}

func slogAttr(key string, v attribute.Value) slog.Attr {
	switch v.Type() {
	case attribute.BOOL:
		return slog.Bool(key, v.AsBool())
	case attribute.INT64:
		return slog.Int64(key, v.AsInt64())
	case attribute.FLOAT64:
		return slog.Float64(key, v.AsFloat64())
	case attribute.STRING:
		return slog.String(key, v.AsString())
	}
	return slog.Any(key, attrAny(v))
}

// attrAny converts v to plain Go values (maps and slices included) for the
// JSON handler.
func attrAny(v attribute.Value) any {
	switch v.Type() {
	case attribute.MAP:
		m := make(map[string]any)
		for _, kv := range v.AsMap() {
			m[string(kv.Key)] = attrAny(kv.Value)
		}
		return m
	case attribute.SLICE:
		vs := v.AsSlice()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = attrAny(e)
		}
		return out
	}
	return v.AsInterface()
}

// taskHash returns a keyed hash of task: 128 bits of HMAC-SHA256, in hex.
// It correlates repeated tasks without exposing their text; with the
// default random key it cannot be reversed by hashing guesses.
func (r *Recorder) taskHash(task string) string {
	mac := hmac.New(sha256.New, r.hashKey)
	mac.Write([]byte(task))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

// maxAttrLen caps caller-supplied strings (paths, reasons) in events.
const maxAttrLen = 256

// clip shortens s to maxAttrLen bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxAttrLen {
		return s
	}
	cut := maxAttrLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
