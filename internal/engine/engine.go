// Package engine is the router's core: it owns the current index generation
// (the catalog of skills), keeps it in step with the disk through the loader's
// indexer and watcher, and answers the domain calls behind the API: list, get,
// load, reindex, status. The gRPC server translates to and from these calls
// and holds no logic of its own.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/telemetry"
)

// Config configures an Engine.
type Config struct {
	Loader loader.Config
	// Watch turns on file system events.
	Watch bool
	// Debounce coalesces bursts of file events.
	Debounce time.Duration
	// RescanInterval is the safety-net full scan period; 0 disables it.
	RescanInterval time.Duration
	// MaxResourceBytes caps level-3 loads.
	MaxResourceBytes int64
	// AllowlistFile is ALLOWLIST.txt, read on each AuthorizeExec when it
	// changed.
	AllowlistFile string
	// Settings are the initial hot-reloadable settings.
	Settings Settings
	Version  string
	// Recorder receives skill events and metrics; nil records nothing.
	Recorder *telemetry.Recorder
	// Embedder embeds skills and tasks; nil means keyword-only matching.
	Embedder *embed.Manager
	// Embed is the embedding configuration; a degraded Embedder is reloaded
	// with it on every reindex, so a fixed model is picked up by itself.
	Embed embed.Config
}

// Flags are the feature flags.
type Flags struct {
	SkillsV1   bool
	SkillsExec bool
}

// Settings are what a config reload may change while the router runs.
type Settings struct {
	Flags Flags
	// DefaultTokenBudget and MaxTokenBudget bound level-2 loads.
	DefaultTokenBudget, MaxTokenBudget int
	// Match configures matching; its cosine threshold is replaced by the
	// embedding model's.
	Match match.Config
}

// Engine serves the current generation of the skill catalog.
type Engine struct {
	cfg     Config
	db      *store.DB
	ix      *loader.Indexer
	log     *slog.Logger
	rec     *telemetry.Recorder
	started time.Time

	current  atomic.Pointer[generation]
	settings atomic.Pointer[Settings]
	allow    *allowlist.File
	execs    decisions

	reindexMu sync.Mutex // one reindex (scan, embed, publish) at a time

	mu          sync.Mutex // guards the fields below
	lastStats   loader.Stats
	lastErr     error
	lastReindex time.Time
	configState ConfigState
	watcher     *loader.Watcher
	cancel      context.CancelFunc
	done        chan struct{}
}

// New creates an engine over an open store. Call Start to build the first
// generation.
func New(cfg Config, db *store.DB, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix, err := loader.NewIndexer(cfg.Loader, db, log.With("component", "loader"))
	if err != nil {
		return nil, err
	}
	e := &Engine{cfg: cfg, db: db, ix: ix, log: log, rec: cfg.Recorder, started: time.Now(),
		allow: &allowlist.File{Path: cfg.AllowlistFile}}
	e.rec.RegisterIndexGauge(e.indexSize)
	e.SetSettings(cfg.Settings)
	return e, nil
}

// Start builds the first generation, then keeps it fresh in the background
// (file events and periodic rescans) until Close. It returns the first
// reindex's error; the engine is then not ready.
func (e *Engine) Start(ctx context.Context) error {
	// The watcher exists before the first reindex, so that pass's scan
	// also tells it which folders to watch.
	if e.cfg.Watch {
		w, err := loader.NewWatcher(e.cfg.Debounce, e.log.With("component", "watch"))
		if err != nil {
			e.log.Warn("file watching unavailable; relying on periodic rescans", "err", err)
		} else {
			e.mu.Lock()
			e.watcher = w
			e.mu.Unlock()
		}
	}
	if _, err := e.Reindex(ctx, false); err != nil {
		if e.watcher != nil {
			e.watcher.Close()
		}
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	e.mu.Lock()
	e.cancel, e.done = cancel, make(chan struct{})
	e.mu.Unlock()
	go e.refreshLoop(bg)
	return nil
}

// refreshLoop reindexes on file events and on the rescan timer.
func (e *Engine) refreshLoop(ctx context.Context) {
	defer close(e.done)
	var changes <-chan struct{}
	if e.watcher != nil {
		go e.watcher.Run(ctx)
		changes = e.watcher.Changes()
	}
	var tick <-chan time.Time
	if e.cfg.RescanInterval > 0 {
		t := time.NewTicker(e.cfg.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		case <-tick:
		}
		if _, err := e.Reindex(ctx, false); err != nil && ctx.Err() == nil {
			e.log.Error("background reindex failed; serving the previous generation", "err", err)
		}
	}
}

// Reindex rescans the roots and publishes a new generation when anything
// changed. On error the previous generation keeps serving.
func (e *Engine) Reindex(ctx context.Context, full bool) (loader.Stats, error) {
	e.reindexMu.Lock()
	defer e.reindexMu.Unlock()
	start := time.Now()
	cat, st, scan, err := e.ix.Reindex(ctx, full)
	changed := false
	if err == nil {
		var vectors *skillVectors
		var verr error
		vectors, st.Embedded, verr = e.refreshVectors(ctx, cat, st.Published)
		if verr != nil && ctx.Err() != nil {
			err = verr
		} else if cur := e.current.Load(); cur == nil || cur.cat != cat || cur.vectors != vectors {
			ix, berr := e.buildIndex(ctx, cat, vectors)
			if berr != nil {
				err = berr
			} else {
				e.current.Store(&generation{cat: cat, vectors: vectors, index: ix})
				changed = true
			}
		}
		st.Duration = time.Since(start)
	}
	e.rec.Reindexed(ctx, telemetry.Reindex{
		Full: full, Duration: st.Duration, Err: err, Generation: st.Generation,
		Scanned: st.Scanned, Added: st.Added, Changed: st.Changed, Removed: st.Removed,
		Unchanged: st.Unchanged, Invalid: st.Invalid, Parsed: st.Parsed, Embedded: st.Embedded,
	})
	e.mu.Lock()
	e.lastReindex = time.Now()
	e.lastErr = err
	if err == nil && changed {
		e.lastStats = st
	}
	e.mu.Unlock()
	if err != nil {
		return st, err
	}
	if changed {
		e.log.Info("index generation published", "generation", st.Generation, "skills", len(cat.Winners()),
			"scanned", st.Scanned, "added", st.Added, "changed", st.Changed, "removed", st.Removed,
			"invalid", st.Invalid, "parsed", st.Parsed, "embedded", st.Embedded, "duration", st.Duration.String())
	}
	e.syncWatchesFrom(scan)
	return st, nil
}

// syncWatchesFrom watches every folder of the scan plus the workspace and the
// parents of roots, so new roots and agent folders are seen.
func (e *Engine) syncWatchesFrom(scan loader.ScanResult) {
	e.mu.Lock()
	w := e.watcher
	e.mu.Unlock()
	if w == nil {
		return
	}
	dirs := append([]string{e.cfg.Loader.Workspace}, scan.Dirs...)
	for _, spec := range e.cfg.Loader.Roots {
		dirs = append(dirs, watchAnchors(e.cfg.Loader.Workspace, spec.Path)...)
	}
	if len(e.cfg.Loader.Roots) == 0 {
		for _, spec := range loader.DefaultRoots() {
			dirs = append(dirs, watchAnchors(e.cfg.Loader.Workspace, spec.Path)...)
		}
	}
	w.Sync(existing(dirs))
}

// generation is what one index generation serves: the catalog and, when
// embeddings are available, a vector for each skill that wins its name.
type generation struct {
	cat     *loader.Catalog
	vectors *skillVectors // nil when keyword-only
	index   *match.Index
}

// Catalog returns the current generation's catalog, or an Unavailable error
// before the first one is built.
func (e *Engine) Catalog() (*loader.Catalog, error) {
	g := e.current.Load()
	if g == nil {
		return nil, skill.Errorf(skill.CodeUnavailable, "the skill index is still loading; retry shortly")
	}
	return g.cat, nil
}

// Ready reports whether a generation is being served.
func (e *Engine) Ready() bool { return e.current.Load() != nil }

// Settings returns the settings in force.
func (e *Engine) Settings() Settings { return *e.settings.Load() }

// SetSettings replaces the hot-reloadable settings (config reload). Calls in
// flight finish with the settings they started with. A changed match
// configuration is applied to the current index (rebuilt when it changes
// what is indexed).
func (e *Engine) SetSettings(s Settings) error {
	old := e.settings.Swap(&s)
	if old == nil {
		return nil
	}
	return e.applyMatchConfig(context.Background(), old.Match, s.Match)
}

// Close stops background work. It does not close the store.
func (e *Engine) Close() error {
	e.mu.Lock()
	cancel, done, w := e.cancel, e.done, e.watcher
	e.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	<-done
	if w != nil {
		return w.Close()
	}
	return nil
}

var errAgentSyntax = errors.New("agent names are 1-64 letters, digits, '.', '_' or '-'")
