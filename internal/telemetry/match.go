package telemetry

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpsag/router/internal/skill"
)

// Selection describes one answered Match, for SkillSelected.
type Selection struct {
	// Task is the task text. The event carries its keyed hash and length;
	// the text itself only with Config.RecordTaskText.
	Task  string
	Agent string
	TopK  int
	// Result is what Match returned. Candidate reasons and fired triggers
	// are not recorded: they quote the task.
	Result  skill.MatchResult
	Latency time.Duration
}

// SkillSelected records a Match answer: event skill_selected, the match
// duration and candidate-count histograms, and either an abstention (by
// reason) or a selection of the top candidate (by skill). Call it after
// every Match that returned a result, abstentions included.
func (r *Recorder) SkillSelected(ctx context.Context, s Selection) {
	if r == nil {
		return
	}
	res := s.Result
	outcome := "selected"
	if res.Abstained || len(res.Candidates) == 0 {
		outcome = "abstained"
	}
	mode := string(res.Mode)

	r.matchDuration.Record(ctx, s.Latency.Seconds(), metric.WithAttributes(
		attribute.String(keyOutcome, outcome),
		attribute.String(keyMode, mode),
		attribute.Bool(keyDegraded, res.Degraded)))
	r.matchCandidates.Record(ctx, int64(len(res.Candidates)))
	reason := string(res.AbstainReason)
	if outcome == "abstained" {
		if reason == "" {
			reason = string(skill.AbstainNoMatch)
		}
		r.abstentions.Add(ctx, 1, metric.WithAttributes(attribute.String(keyReason, reason)))
	} else if top := res.Candidates[0].Skill; top != nil {
		r.selections.Add(ctx, 1, metric.WithAttributes(
			attribute.String(keySkill, top.Name),
			attribute.String(keySource, string(top.Root.Kind))))
	}

	cands := candidateValues(res.Candidates)
	attrs := []attribute.KeyValue{
		attribute.String(keyTaskHash, r.taskHash(s.Task)),
		attribute.Int(keyTaskChars, utf8.RuneCountInString(s.Task)),
		attribute.String(keyAgent, clip(s.Agent)),
		attribute.Int("top_k", s.TopK),
		attribute.Slice(keyCandidates, cands...),
		attribute.Int(keyCandidateN, len(res.Candidates)),
		attribute.Bool(keyAbstained, outcome == "abstained"),
		attribute.String(keyMode, mode),
		attribute.String("fusion", string(res.Fusion)),
		attribute.Bool(keyDegraded, res.Degraded),
		attribute.Int64("index.generation", int64(res.Generation)),
		attribute.Float64(keyDurationMS, ms(s.Latency)),
	}
	if outcome == "abstained" {
		attrs = append(attrs, attribute.String(keyAbstainReason, reason))
	}
	if r.recordTaskText {
		attrs = append(attrs, attribute.String(keyTaskText, s.Task))
	}
	r.emit(ctx, r.events, EventSkillSelected, otellog.SeverityInfo, false, attrs)
}

// candidateValues are the candidates of a match as the skill_selected
// event carries them: rank, skill, source, scores and ranks; not their
// reasons or fired triggers, which quote the task.
func candidateValues(cs []skill.Candidate) []attribute.Value {
	out := make([]attribute.Value, 0, len(cs))
	for i, c := range cs {
		name, source := "", ""
		if c.Skill != nil {
			name, source = c.Skill.Name, string(c.Skill.Root.Kind)
		}
		out = append(out, attribute.MapValue(
			attribute.Int("rank", i+1),
			attribute.String(keySkill, name),
			attribute.String(keySource, source),
			attribute.Float64("score.fused", c.Fused),
			attribute.Float64("score.cosine", c.Cosine),
			attribute.Float64("score.bm25", c.BM25),
			attribute.Int("rank.dense", c.DenseRank),
			attribute.Int("rank.bm25", c.BM25Rank),
			attribute.Float64("trigger_boost", c.TriggerBoost),
			attribute.Bool("name_mentioned", c.NameMentioned),
		))
	}
	return out
}

// EmbeddingFallback records that matching fell back to keywords only:
// event skill_embedding_fallback and the fallbacks counter. reason should
// be a short stable code (model_missing, model_corrupt, embed_error,
// timeout, ...), not an error message: it becomes a metric label. It
// satisfies the embedding package's fallback-reporter interface.
func (r *Recorder) EmbeddingFallback(ctx context.Context, reason string) {
	if r == nil {
		return
	}
	reason = clip(reason)
	r.fallbacks.Add(ctx, 1, metric.WithAttributes(attribute.String(keyReason, reason)))
	r.emit(ctx, r.events, EventEmbeddingFallback, otellog.SeverityWarn, false,
		[]attribute.KeyValue{attribute.String(keyReason, reason)})
}

// Embedding cache names for EmbeddingCache.
const (
	CacheQuery    = "query"    // the in-memory LRU of query embeddings
	CacheDocument = "document" // the bbolt cache of skill embeddings
)

// EmbeddingCache adds hits and misses to the counters of cache (CacheQuery
// or CacheDocument), for code that learns its counts per call: after
// embedding documents, hits are the texts found in the cache and misses
// the ones computed. The hit ratio is hits / (hits + misses). It emits no
// event.
func (r *Recorder) EmbeddingCache(_ context.Context, cache string, hits, misses int) {
	if r == nil || (hits <= 0 && misses <= 0) {
		return
	}
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	c := r.cachePushed[cache]
	if c == nil {
		c = new([2]int64)
		r.cachePushed[cache] = c
	}
	c[0] += int64(max(hits, 0))
	c[1] += int64(max(misses, 0))
}

// RegisterEmbeddingCache sets a function that returns the cumulative hits
// and misses of cache, read at each metric collection, for code that keeps
// its own counters (the embedding manager's query cache). It must be fast
// and safe to call from any goroutine. Its counts add to those passed to
// EmbeddingCache for the same cache; a later call for the same cache
// replaces the function.
func (r *Recorder) RegisterEmbeddingCache(cache string, f func() (hits, misses int64)) {
	if r == nil {
		return
	}
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	r.cacheFns[cache] = f
}

func (r *Recorder) observeCaches(_ context.Context, o metric.Observer) error {
	r.cacheMu.Lock()
	totals := make(map[string][2]int64, len(r.cachePushed)+len(r.cacheFns))
	for name, c := range r.cachePushed {
		totals[name] = *c
	}
	fns := make(map[string]func() (int64, int64), len(r.cacheFns))
	for name, f := range r.cacheFns {
		fns[name] = f
	}
	r.cacheMu.Unlock()
	for name, f := range fns { // outside the lock: f may take its own locks
		if f == nil {
			continue
		}
		h, m := f()
		t := totals[name]
		totals[name] = [2]int64{t[0] + h, t[1] + m}
	}
	for name, t := range totals {
		attrs := metric.WithAttributes(attribute.String(keyCache, name))
		o.ObserveInt64(r.cacheHits, t[0], attrs)
		o.ObserveInt64(r.cacheMisses, t[1], attrs)
	}
	return nil
}

// Reindex describes one finished reindex pass, for Reindexed.
type Reindex struct {
	Full     bool
	Duration time.Duration
	// Err is the pass's error, nil on success. Only its skill.Code is
	// recorded.
	Err error

	Scanned, Added, Changed, Removed, Unchanged, Invalid, Parsed, Embedded int
	Generation                                                             uint64
}

// Reindexed records a reindex pass: event skill_reindexed and the reindex
// duration histogram (by outcome and full: ok, error, or canceled for a
// pass the router's shutdown stopped). Call it after every pass, the
// initial load and watcher-triggered passes included.
func (r *Recorder) Reindexed(ctx context.Context, x Reindex) {
	if r == nil {
		return
	}
	outcome := "ok"
	failed := x.Err != nil && !errors.Is(x.Err, context.Canceled)
	switch {
	case failed:
		outcome = "error"
	case x.Err != nil:
		outcome = "canceled" // the router is stopping
	}
	r.reindexDuration.Record(ctx, x.Duration.Seconds(), metric.WithAttributes(
		attribute.String(keyOutcome, outcome),
		attribute.Bool(keyFull, x.Full)))
	attrs := []attribute.KeyValue{
		attribute.Bool(keyFull, x.Full),
		attribute.String(keyOutcome, outcome),
		attribute.Float64(keyDurationMS, ms(x.Duration)),
		attribute.Int("scanned", x.Scanned),
		attribute.Int("added", x.Added),
		attribute.Int("changed", x.Changed),
		attribute.Int("removed", x.Removed),
		attribute.Int("unchanged", x.Unchanged),
		attribute.Int("invalid", x.Invalid),
		attribute.Int("parsed", x.Parsed),
		attribute.Int("embedded", x.Embedded),
		attribute.Int64("index.generation", int64(x.Generation)),
	}
	sev := otellog.SeverityInfo
	if failed {
		attrs = append(attrs, attribute.String(keyErrorType, skill.ErrorCode(x.Err).String()))
		sev = otellog.SeverityWarn
	}
	r.emit(ctx, r.events, EventReindexed, sev, false, attrs)
}
