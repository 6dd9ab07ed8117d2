// Package router implements skill.Router, the service behind every front end.
// It serves one index generation at a time (Generation, the view of a
// generation it needs) through an atomic pointer, which its Source publishes
// (the daemon adapts internal/loader to it), and answers
// the domain calls: match, list, get, staged load with untrusted-content
// framing, exec and tool-call decisions, reindex and status. Telemetry is
// not recorded here: the telemetry package wraps a Router in a decorator.
package router

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/skill"
)

// Config configures a Router.
type Config struct {
	// Source makes the generations the router serves.
	Source Source
	// Workspace is the skills' workspace: replies show the paths inside
	// it relative to it.
	Workspace string
	// StateDir and ModelDir are the state folder and the embedding
	// model's configured folder (empty for the bundled one): Status names
	// them, the workspace and the temporary folder by placeholders
	// (<state>, <model>, <workspace>, <temp>), not as host paths.
	StateDir, ModelDir string
	// MaxResourceBytes caps level-3 loads.
	MaxResourceBytes int64
	// AllowlistFile is ALLOWLIST.txt, read on each AuthorizeExec when it
	// changed.
	AllowlistFile string
	// Settings are the initial hot-reloadable settings.
	Settings Settings
	Version  string
	// Upstream is the manager of the configured MCP servers (the loader
	// indexes their tools); nil means none.
	Upstream Upstream
	Logger   *slog.Logger
}

// Upstream is what the router needs of the MCP servers' manager;
// upstream.Manager is one.
type Upstream interface {
	// Servers describes every configured server.
	Servers() []skill.ServerStatus
	// Call calls a tool and returns its result bounded, text unframed.
	Call(ctx context.Context, t *skill.Tool, args json.RawMessage) (*skill.ToolResult, error)
}

// Settings are what a config reload may change while the router runs.
type Settings struct {
	Flags skill.Flags
	// DefaultTokenBudget and MaxTokenBudget bound level-2 loads.
	DefaultTokenBudget, MaxTokenBudget int
}

// Router serves the current generation. It implements skill.Router and
// skill.GenerationWatcher.
type Router struct {
	cfg     Config
	log     *slog.Logger
	started time.Time
	// hostPaths hides the host's folders in Status.
	hostPaths hostPaths

	current  atomic.Pointer[Generation]
	views    views // of the served generation
	settings atomic.Pointer[Settings]
	allow    *allowlist.File
	execs    decisions

	mu          sync.Mutex // guards the fields below
	configState skill.ConfigState
	published   chan struct{} // closed and replaced when a generation is published
}

var (
	_ skill.Router            = (*Router)(nil)
	_ skill.GenerationWatcher = (*Router)(nil)
)

// New creates a router. Call Start to serve the first generation.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{cfg: cfg, log: cfg.Logger, started: time.Now(), hostPaths: newHostPaths(cfg),
		allow: &allowlist.File{Path: cfg.AllowlistFile}, published: make(chan struct{})}
	s := cfg.Settings
	r.settings.Store(&s)
	return r
}

// Start serves the first generation its loader builds, then every later
// one, until Close. It returns the first build's error; the router is then
// not ready.
func (r *Router) Start(ctx context.Context) error {
	return r.cfg.Source.Start(ctx, r.publish)
}

// Reindex rescans the roots now and publishes a new generation when anything
// changed.
func (r *Router) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	st, err := r.cfg.Source.Reindex(ctx, req.Full)
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// publish makes g the served generation and wakes WaitGeneration callers.
func (r *Router) publish(g *Generation) {
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
func (r *Router) generation() (*Generation, error) {
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
// flight finish with the settings they started with.
func (r *Router) SetSettings(s Settings) { r.settings.Store(&s) }

// SetConfigState records the state of the configuration file for Status.
func (r *Router) SetConfigState(c skill.ConfigState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configState = c
}

// Close stops its source's builds and waits for the index snapshot of the
// served generation to be written. It closes neither the store nor the
// model.
func (r *Router) Close() error { return r.cfg.Source.Close() }

// displayPath shows a path relative to the workspace when it lies inside it,
// so replies do not reveal the host's layout.
func (r *Router) displayPath(p string) string {
	if rel, err := filepath.Rel(r.cfg.Workspace, p); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return filepath.Base(p)
}
