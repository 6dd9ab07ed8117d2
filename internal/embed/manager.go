package embed

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// FallbackReporter receives an event each time embeddings become
// unavailable (matching falls back to keyword-only), with a Reason as a
// string. The telemetry package exports it as skill_embedding_fallback.
// Implementations must not block.
type FallbackReporter interface {
	EmbeddingFallback(ctx context.Context, reason string)
}

// Manager owns the current model and its state: loaded, or degraded with a
// reason. It implements Embedder with a bounded LRU cache for queries, and
// is safe for concurrent use.
//
// When a load fails, or a model run fails or times out, the Manager drops
// the model, logs once, reports one fallback event, and answers Embed with
// ErrUnavailable until Reload succeeds. A caller's own cancellation or
// deadline does not degrade it.
type Manager struct {
	log      *slog.Logger
	reporter FallbackReporter

	reloadMu sync.Mutex // serialises Reload

	mu    sync.RWMutex
	cfg   Config
	cur   *generation // nil when degraded or released
	state state
	// released is the model Release unloaded, until the next Embed loads
	// it again; nil otherwise.
	released *releasedModel

	computed     atomic.Int64 // texts run through any model, warm-up excluded
	hits, misses atomic.Int64
	fallbacks    atomic.Int64
}

// generation is one loaded model with its query cache.
type generation struct {
	model *Model
	cache *lru
	cfg   Config // as given to Reload, to tell whether a reload changes anything
}

// releasedModel is what a Manager keeps of a model it released, to name
// it until it is loaded again (from Manager.cfg, which Release keeps).
type releasedModel struct {
	id       Identity
	load     LoadInfo
	resolved Config // as the model resolved it (Model.Config)
}

type state struct {
	reason Reason // empty when loaded
	detail string
	since  time.Time
}

// NewManager returns a Manager in state not_loaded; call Reload to load
// cfg.Dir. logger and reporter may be nil.
func NewManager(cfg Config, logger *slog.Logger, reporter FallbackReporter) *Manager {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{
		log:      logger.With("component", "embed"),
		reporter: reporter,
		cfg:      cfg,
		state:    state{reason: ReasonNotLoaded, detail: "no model loaded yet", since: time.Now()},
	}
}

// Reload loads the model that cfg describes and makes it current. If the
// current model came from the same cfg and no file in its folder changed,
// it does nothing. On failure the Manager becomes degraded and Reload
// returns the error (its Reason via ReasonOf); the previous model, if any,
// is closed either way once its runs finish.
func (m *Manager) Reload(ctx context.Context, cfg Config) error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()

	m.mu.RLock()
	cur := m.cur
	m.mu.RUnlock()
	if cur != nil && reflect.DeepEqual(cur.cfg, cfg) {
		if files, err := findFiles(cur.model.files.dir); err == nil && files.stamp == cur.model.files.stamp {
			return nil
		}
	}

	model, err := Open(ctx, cfg)
	if err != nil {
		m.mu.Lock()
		m.cfg = cfg
		old := m.cur
		m.cur, m.released = nil, nil
		m.mu.Unlock()
		m.retire(old)
		m.degrade(ctx, nil, ReasonOf(err), err)
		return err
	}
	model.shared = &m.computed
	m.mu.Lock()
	m.cfg = cfg
	old := m.cur
	m.cur = &generation{model: model, cache: newLRU(model.Config().QueryCacheSize), cfg: cfg}
	wasReleased := m.released != nil
	m.released = nil
	was := m.state
	m.state = state{since: time.Now()}
	m.mu.Unlock()
	m.retire(old)

	info := model.LoadInfo()
	attrs := []any{
		"model", model.Identity().Name, "dimension", model.Identity().Dimension,
		"fingerprint", model.Identity().Fingerprint, "load_ms", info.LoadDuration.Milliseconds(),
		"warmup_ms", info.WarmupDuration.Milliseconds(), "query_latency_us", info.QueryLatency.Microseconds(),
	}
	switch {
	case wasReleased:
		m.log.Info("embedding model loaded again: it is needed", attrs...)
	case was.reason != "" && was.reason != ReasonNotLoaded:
		m.log.Info("embedding model recovered", append(attrs, "previous_reason", string(was.reason))...)
	default:
		m.log.Info("embedding model loaded", attrs...)
	}
	return nil
}

// retire closes a replaced generation once its runs finish.
func (m *Manager) retire(g *generation) {
	if g != nil {
		g.model.Close()
	}
}

// degrade drops generation g (nil: whatever is current, already dropped by
// the caller) and records the reason. It logs and reports only when the
// reason changes, so a failing model is reported once.
func (m *Manager) degrade(ctx context.Context, g *generation, reason Reason, err error) {
	m.mu.Lock()
	if g != nil {
		if m.cur != g {
			// Another call already degraded or replaced this generation.
			m.mu.Unlock()
			return
		}
		m.cur = nil
	}
	changed := m.state.reason != reason
	m.state = state{reason: reason, detail: err.Error(), since: time.Now()}
	m.mu.Unlock()
	if g != nil {
		// Close waits for runs in flight, a timed-out one included.
		go m.retire(g)
	}
	if !changed {
		return
	}
	m.log.Warn("embeddings unavailable, matching falls back to keywords", "reason", string(reason), "err", err)
	if m.reporter != nil {
		m.reporter.EmbeddingFallback(context.WithoutCancel(ctx), string(reason))
	}
}

// Embed returns one L2-normalised vector per text; see Embedder. Query
// vectors come from the LRU cache when they can. When degraded it returns
// an error wrapping ErrUnavailable.
func (m *Manager) Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	g, st, err := m.current(ctx)
	if err != nil {
		return nil, err
	}
	if g == nil {
		m.fallbacks.Add(1)
		return nil, fmt.Errorf("%w (%s): %s", ErrUnavailable, st.reason, st.detail)
	}
	if kind != Query {
		return m.run(ctx, g, texts, kind)
	}
	out := make([][]float32, len(texts))
	var missTexts, missKeys []string
	missAt := map[string][]int{} // key -> positions in texts
	for i, t := range texts {
		sum := sha256.Sum256([]byte(t))
		key := string(sum[:])
		if v, ok := g.cache.get(key); ok {
			m.hits.Add(1)
			out[i] = v
			continue
		}
		m.misses.Add(1)
		if _, dup := missAt[key]; !dup {
			missTexts = append(missTexts, t)
			missKeys = append(missKeys, key)
		}
		missAt[key] = append(missAt[key], i)
	}
	if len(missTexts) == 0 {
		return out, nil
	}
	vecs, err := m.run(ctx, g, missTexts, kind)
	if err != nil {
		return nil, err
	}
	for j, v := range vecs {
		g.cache.put(missKeys[j], v)
		for n, i := range missAt[missKeys[j]] {
			if n > 0 {
				v = slices.Clone(v)
			}
			out[i] = v
		}
	}
	return out, nil
}

// current returns the current model and the state, loading a released
// model again first (its load failing degrades the Manager, which the
// state then says). The load is shared, so the caller's cancellation does
// not stop it; the error is ctx's when ctx ended meanwhile.
func (m *Manager) current(ctx context.Context) (*generation, state, error) {
	m.mu.RLock()
	g, st, released, cfg := m.cur, m.state, m.released != nil, m.cfg
	m.mu.RUnlock()
	if g != nil || !released {
		return g, st, nil
	}
	_ = m.Reload(context.WithoutCancel(ctx), cfg) // logged, and said by the state on failure
	if err := ctx.Err(); err != nil {
		return nil, st, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cur, m.state, nil
}

// Release unloads the current model until it is needed again: the next
// Embed (or Reload) loads it from the same folder and configuration, and
// in the meantime Identity, Config and Status (not degraded, Released)
// still describe it. Runs in progress finish first. The loader releases
// the fast model while the primary model's vectors are served, so its
// memory is held only while it serves or embeds.
func (m *Manager) Release() {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	m.mu.Lock()
	g := m.cur
	if g == nil {
		m.mu.Unlock()
		return
	}
	m.cur = nil
	m.released = &releasedModel{id: g.model.Identity(), load: g.model.LoadInfo(), resolved: g.model.Config()}
	m.mu.Unlock()
	m.retire(g)
	m.log.Info("embedding model unloaded until it is needed", "model", g.model.Identity().Name)
}

// run embeds with g's model and degrades on model failure.
func (m *Manager) run(ctx context.Context, g *generation, texts []string, kind Kind) ([][]float32, error) {
	vecs, err := g.model.Embed(ctx, texts, kind)
	switch {
	case err == nil:
		return vecs, nil
	case errors.Is(err, ErrInvalidKind):
		return nil, err
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return nil, err // the caller gave up; the model is fine
	case errors.Is(err, ErrClosed):
		// Reload replaced the model during the call; try the new one once.
		m.mu.RLock()
		next := m.cur
		m.mu.RUnlock()
		if next != nil && next != g {
			return m.run(ctx, next, texts, kind)
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	m.degrade(ctx, g, ReasonOf(err), err)
	m.fallbacks.Add(1)
	return nil, fmt.Errorf("%w (%s): %v", ErrUnavailable, ReasonOf(err), err)
}

// EmbedQueries embeds task texts as queries (for the matcher), in one run
// for those the query cache does not hold.
func (m *Manager) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return m.Embed(ctx, texts, Query)
}

// Identity returns the current (or released) model's identity, or the
// zero Identity when degraded.
func (m *Manager) Identity() Identity {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.cur != nil:
		return m.cur.model.Identity()
	case m.released != nil:
		return m.released.id
	}
	return Identity{}
}

// Config returns the configuration in effect: the current (or released)
// model's resolved Config, or the last one given to Reload (unresolved)
// when degraded.
func (m *Manager) Config() Config {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch {
	case m.cur != nil:
		return m.cur.model.Config()
	case m.released != nil:
		return m.released.resolved
	}
	return m.cfg
}

// Status is a snapshot of a Manager, for the Status RPC and
// `routerctl model info`.
type Status struct {
	Degraded bool
	// Released says the model is unloaded until it is needed (Release);
	// Identity and Load still describe it.
	Released bool
	Reason   Reason // empty when loaded
	Detail   string // the error behind Reason
	Since    time.Time
	Identity Identity // zero when degraded
	Load     LoadInfo // zero when degraded
	// MatchThreshold is the cosine threshold in effect for the model.
	MatchThreshold float64
	// EmbeddingsComputed counts texts run through a model since the
	// Manager was created, warm-up excluded.
	EmbeddingsComputed int64
	QueryCacheHits     int64
	QueryCacheMisses   int64
	QueryCacheEntries  int
	// FallbackCalls counts Embed calls answered with ErrUnavailable.
	FallbackCalls int64
	// Shapes is the number of input shapes compiled by the current model.
	Shapes int
	// TokenizeFallbacks counts texts the current model's tokenizer failed
	// on, embedded from their ASCII characters instead.
	TokenizeFallbacks int64
}

// Status returns the Manager's state and counters.
func (m *Manager) Status() Status {
	m.mu.RLock()
	g, st, cfg, rel := m.cur, m.state, m.cfg, m.released
	m.mu.RUnlock()
	s := Status{
		Degraded:           g == nil && rel == nil,
		Released:           rel != nil,
		Reason:             st.reason,
		Detail:             st.detail,
		Since:              st.since,
		MatchThreshold:     cfg.MatchThreshold,
		EmbeddingsComputed: m.computed.Load(),
		QueryCacheHits:     m.hits.Load(),
		QueryCacheMisses:   m.misses.Load(),
		FallbackCalls:      m.fallbacks.Load(),
	}
	if rel != nil {
		s.Identity, s.Load, s.MatchThreshold = rel.id, rel.load, rel.resolved.MatchThreshold
	}
	if g != nil {
		s.Identity = g.model.Identity()
		s.Load = g.model.LoadInfo()
		s.MatchThreshold = g.model.Config().MatchThreshold
		s.QueryCacheEntries = g.cache.len()
		s.Shapes = g.model.Shapes()
		s.TokenizeFallbacks = g.model.TokenizeFallbacks()
	}
	return s
}

// Close closes the current model. Embed returns ErrUnavailable afterwards.
func (m *Manager) Close() error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	m.mu.Lock()
	g := m.cur
	m.cur, m.released = nil, nil
	m.state = state{reason: ReasonNotLoaded, detail: "manager closed", since: time.Now()}
	m.mu.Unlock()
	m.retire(g)
	return nil
}
