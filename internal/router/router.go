// Package router implements skill.Router, the service behind every front end.
// It serves one index generation at a time through an atomic pointer, keeps
// it in step with the disk (file events and periodic rescans trigger builds
// through the generation Builder), and answers the domain calls: match, list,
// get, staged load with untrusted-content framing, exec decisions, reindex
// and status. Telemetry is not recorded here: the telemetry package wraps a
// Router in a decorator, and Config.OnPass reports every build.
package router

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

// Config configures a Router.
type Config struct {
	// Builder builds the generations the router serves.
	Builder *loader.Builder
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
	// StoreDegraded says why the cache lives in a temporary directory (see
	// store.OpenOrFallback), or ""; Status reports it as degraded.
	StoreDegraded string
	// OnPass, when set, is called after every build (requested or in the
	// background), with its error; telemetry records reindex events here.
	OnPass func(ctx context.Context, p loader.Pass, err error)
	// Upstream is the manager of the configured MCP servers (the builder
	// indexes their tools through its own Config.Tools); nil means none.
	Upstream Upstream
	// UpstreamWait bounds how long Start waits for the servers' first
	// attempts, so the first generation holds the tools of servers that
	// start quickly; 0 means 5s.
	UpstreamWait time.Duration
	Logger       *slog.Logger
}

// Upstream is what the router needs of the MCP servers' manager;
// upstream.Manager is one.
type Upstream interface {
	// Changes receives a value after the servers' tools changed.
	Changes() <-chan struct{}
	// Servers describes every configured server.
	Servers() []skill.ServerStatus
	// Call calls a tool and returns its result bounded, text unframed.
	Call(ctx context.Context, t *skill.Tool, args json.RawMessage) (*skill.ToolResult, error)
	// Wait returns when every server has finished its first attempt.
	Wait(ctx context.Context) error
}

// Settings are what a config reload may change while the router runs.
type Settings struct {
	Flags skill.Flags
	// DefaultTokenBudget and MaxTokenBudget bound level-2 loads.
	DefaultTokenBudget, MaxTokenBudget int
	// Match configures matching; its cosine threshold is replaced by the
	// embedding model's unless set.
	Match match.Config
}

// Router serves the current generation. It implements skill.Router and
// skill.GenerationWatcher.
type Router struct {
	cfg     Config
	builder *loader.Builder
	log     *slog.Logger
	started time.Time

	current  atomic.Pointer[loader.Generation]
	views    views // of the served generation
	settings atomic.Pointer[Settings]
	allow    *allowlist.File
	execs    decisions

	buildMu  sync.Mutex  // one build (scan, embed, publish) at a time; guards scanned and synced
	scanned  []string    // the folders of the last scan
	synced   []string    // the scan folders the watcher was last synced to
	watching atomic.Bool // the watcher is adding the folders of a scan
	// catchingUp is set while the served generation came from the last
	// scan (Pass.Restored) and no scan of the roots has been served since.
	catchingUp atomic.Bool

	mu          sync.Mutex // guards the fields below
	lastStats   skill.ReindexStats
	lastErr     error
	lastReindex time.Time
	configState skill.ConfigState
	published   chan struct{} // closed and replaced when a generation is published
	watcher     *skillfs.Watcher
	cancel      context.CancelFunc
	done        chan struct{}
}

var (
	_ skill.Router            = (*Router)(nil)
	_ skill.GenerationWatcher = (*Router)(nil)
)

// New creates a router. Call Start to build the first generation.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg, builder: cfg.Builder, log: cfg.Logger, started: time.Now(),
		allow: &allowlist.File{Path: cfg.AllowlistFile}, published: make(chan struct{})}
	s := cfg.Settings
	r.settings.Store(&s)
	return r
}

// Start builds the first generation, then keeps it fresh in the background
// (file events and periodic rescans) until Close. It returns the first
// build's error; the router is then not ready.
func (r *Router) Start(ctx context.Context) error {
	// The watcher exists before the first build, so that build's scan also
	// tells it which folders to watch.
	if r.cfg.Watch {
		w, err := skillfs.NewWatcher(r.cfg.Debounce, r.log.With("component", "watch"))
		if err != nil {
			r.log.Warn("file watching unavailable; relying on periodic rescans", "err", err)
		} else {
			r.mu.Lock()
			r.watcher = w
			r.mu.Unlock()
		}
	}
	if up := r.cfg.Upstream; up != nil {
		wait := r.cfg.UpstreamWait
		if wait <= 0 {
			wait = 5 * time.Second
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_ = up.Wait(wctx) // servers that are slower join in a later generation
		cancel()
	}
	// The router is ready once the first generation is published; the
	// watches on its folders (one per folder: seconds at 100,000 skills)
	// are added after, by the refresh loop. Sync then scans once more,
	// which picks up whatever changed before the watches were in place.
	r.buildMu.Lock()
	pass, err := r.buildLocked(ctx, false, nil)
	r.buildMu.Unlock()
	if err != nil {
		if r.watcher != nil {
			r.watcher.Close()
		}
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.cancel, r.done = cancel, make(chan struct{})
	r.mu.Unlock()
	go r.refreshLoop(bg, pass.Restored)
	return nil
}

// upstreamDebounce coalesces changes of several MCP servers (at start, all
// of them become ready within moments) into one build.
const upstreamDebounce = 200 * time.Millisecond

// refreshLoop rebuilds on file events, on changes of the MCP servers' tools
// and on the rescan timer. A changed tool list is served from the next
// generation: a request in flight keeps the one it started with. With
// catchUp (the first generation came from the last scan, not from the
// roots), it scans the roots first.
func (r *Router) refreshLoop(ctx context.Context, catchUp bool) {
	defer close(r.done)
	var changes, upstream <-chan struct{}
	if r.watcher != nil {
		go r.watcher.Run(ctx)
		changes = r.watcher.Changes()
	}
	if catchUp {
		if _, err := r.reindex(ctx, false); err != nil && ctx.Err() == nil {
			r.log.Error("scanning the roots after serving the last scan failed; serving it until the next reindex", "err", err)
		}
	}
	if r.watcher != nil {
		r.buildMu.Lock()
		r.syncWatcherLocked()
		r.buildMu.Unlock()
	}
	if r.cfg.Upstream != nil {
		upstream = r.cfg.Upstream.Changes()
	}
	var tick <-chan time.Time
	if r.cfg.RescanInterval > 0 {
		t := time.NewTicker(r.cfg.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		var changed []string
		select {
		case <-ctx.Done():
			return
		case <-changes:
			// Events name what changed: when it all lies in known skill
			// folders, only those are scanned again.
			// No path (a folder newly watched) means scan everything.
			if paths, all := r.watcher.TakeChanged(); !all {
				changed = paths
			}
		case <-tick:
		case <-upstream:
			t := time.NewTimer(upstreamDebounce)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if _, err := r.reindexChanged(ctx, false, changed); err != nil && ctx.Err() == nil {
			r.log.Error("background reindex failed; serving the previous generation", "err", err)
		}
	}
}

// Reindex rescans the roots now and publishes a new generation when anything
// changed.
func (r *Router) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	st, err := r.reindex(ctx, req.Full)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// phaseList renders a build's phases for the log, for example
// "scan=1.2s parse=0s store=310ms".
func phaseList(ps []loader.Phase) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", p.Name, p.Duration.Round(time.Millisecond))
	}
	return b.String()
}

// reindex runs one build and publishes its generation.
func (r *Router) reindex(ctx context.Context, full bool) (skill.ReindexStats, error) {
	return r.reindexChanged(ctx, full, nil)
}

// reindexChanged is reindex after file events that named changed paths
// (nil: scan everything).
func (r *Router) reindexChanged(ctx context.Context, full bool, changed []string) (skill.ReindexStats, error) {
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	pass, err := r.buildLocked(ctx, full, changed)
	if err == nil {
		r.syncWatcherLocked()
	}
	return pass.Stats, err
}

// buildLocked runs one build, publishes its generation and logs it. The
// caller holds buildMu.
func (r *Router) buildLocked(ctx context.Context, full bool, changed []string) (loader.Pass, error) {
	prev := r.current.Load()
	var g *loader.Generation
	var pass loader.Pass
	var err error
	if changed != nil && !full {
		g, pass, err = r.builder.BuildChanged(ctx, prev, changed, r.Settings().Match)
	} else {
		g, pass, err = r.builder.Build(ctx, prev, full, r.Settings().Match)
	}
	// The build's stats are in place before its generation is served, so
	// a Status that says serving describes the build behind it.
	st := pass.Stats
	r.mu.Lock()
	r.lastReindex, r.lastErr = time.Now(), err
	if err == nil && st.Published {
		r.lastStats = st
	}
	r.mu.Unlock()
	// Catching up is said before the generation that needs it is served,
	// and unsaid after the one that ends it is.
	if err == nil && pass.Restored {
		r.catchingUp.Store(true)
	}
	if err == nil && g != prev {
		r.publish(g)
	}
	if err == nil && !pass.Restored && !pass.Partial && r.catchingUp.Swap(false) {
		r.log.Info("caught up with the skill folders", "published", st.Published, "added", st.Added, "changed", st.Changed,
			"removed", st.Removed, "parsed", st.Parsed, "duration", st.Duration.String(), "phases", phaseList(pass.Phases))
	}
	if r.cfg.OnPass != nil {
		r.cfg.OnPass(ctx, pass, err)
	}
	if err != nil {
		return pass, err
	}
	r.scanned = pass.Dirs
	if pass.Restored {
		r.log.Info("serving the skill files the last scan found, kept in the state folder; scanning the roots now for changes made while the router was stopped",
			"skills", len(g.Catalog.Winners())-len(g.Catalog.Tools()))
	}
	if st.Published {
		r.log.Info("index generation published", "generation", st.Generation, "skills", len(g.Catalog.Winners())-len(g.Catalog.Tools()),
			"tools", len(g.Catalog.Tools()),
			"scanned", st.Scanned, "folders_reused", pass.FoldersReused, "added", st.Added, "changed", st.Changed, "removed", st.Removed,
			"invalid", st.Invalid, "parsed", st.Parsed, "embedded", st.Embedded, "duration", st.Duration.String(),
			"phases", phaseList(pass.Phases))
	}
	return pass, nil
}

// syncWatcherLocked makes the watcher watch the folders of the last scan.
// A rescan of a few folders keeps the last scan's folders: the watched set
// is then already right. The caller holds buildMu.
func (r *Router) syncWatcherLocked() {
	r.mu.Lock()
	w := r.watcher
	r.mu.Unlock()
	if w == nil || sameSlice(r.scanned, r.synced) {
		return
	}
	bc := r.builder.Config()
	r.watching.Store(true)
	w.Sync(skillfs.WatchDirs(bc.Workspace, bc.Roots, r.scanned))
	r.watching.Store(false)
	r.synced = r.scanned
}

// sameSlice reports whether a and b are the same slice (not merely equal).
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// publish makes g the served generation and wakes WaitGeneration callers.
func (r *Router) publish(g *loader.Generation) {
	r.current.Store(g)
	r.views.forget()
	r.mu.Lock()
	close(r.published)
	r.published = make(chan struct{})
	r.mu.Unlock()
}

// WaitGeneration blocks until the generation served differs from after.
func (r *Router) WaitGeneration(ctx context.Context, after uint64) (uint64, error) {
	for {
		r.mu.Lock()
		ch := r.published
		r.mu.Unlock()
		if g := r.current.Load(); g != nil && g.ID != after {
			return g.ID, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// generation returns the generation served, or an Unavailable error before
// the first one is built.
func (r *Router) generation() (*loader.Generation, error) {
	g := r.current.Load()
	if g == nil {
		return nil, skill.Errorf(skill.CodeUnavailable, "the skill index is still loading; retry shortly")
	}
	return g, nil
}

// Ready reports whether a generation is served.
func (r *Router) Ready() bool { return r.current.Load() != nil }

// Settings returns the settings in force.
func (r *Router) Settings() Settings { return *r.settings.Load() }

// SetSettings replaces the hot-reloadable settings (config reload). Calls in
// flight finish with the settings they started with. A changed match
// configuration is applied to the served generation: over its index data
// when only query-time settings changed, else by rebuilding its index.
func (r *Router) SetSettings(ctx context.Context, s Settings) error {
	old := r.settings.Swap(&s)
	if reflect.DeepEqual(old.Match, s.Match) {
		return nil
	}
	r.buildMu.Lock()
	defer r.buildMu.Unlock()
	g := r.current.Load()
	if g == nil {
		return nil
	}
	next, err := r.builder.WithMatchConfig(ctx, g, s.Match)
	if err != nil {
		return err
	}
	r.current.Store(next)
	r.views.forget()
	return nil
}

// SetEmbedConfig switches the embedding configuration (config reload): the
// model is reloaded and, when it changed, every skill is embedded again by a
// reindex. A model that fails to load leaves matching keyword-only.
func (r *Router) SetEmbedConfig(ctx context.Context, cfg embed.Config) error {
	m := r.builder.Config().Embedder
	if m == nil {
		return nil
	}
	if err := m.Reload(ctx, cfg); err != nil {
		r.log.Warn("embedding model did not load; matching uses keywords only", "err", err)
	}
	_, err := r.reindex(ctx, false)
	return err
}

// SetConfigState records the state of the configuration file for Status.
func (r *Router) SetConfigState(c skill.ConfigState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configState = c
}

// Close stops background work and waits for the index snapshot of the
// served generation to be written. It closes neither the store nor the
// model.
func (r *Router) Close() error {
	r.mu.Lock()
	cancel, done, w := r.cancel, r.done, r.watcher
	r.cancel = nil
	r.mu.Unlock()
	if cancel == nil {
		r.builder.Flush()
		return nil
	}
	cancel()
	<-done
	r.builder.Flush()
	if w != nil {
		return w.Close()
	}
	return nil
}

// displayPath shows a path relative to the workspace when it lies inside it,
// so replies do not reveal the host's layout.
func (r *Router) displayPath(p string) string {
	if rel, err := filepath.Rel(r.builder.Config().Workspace, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(p)
}
