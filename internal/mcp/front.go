package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpsag/router/internal/skill"
)

// Options configure a Front. The zero value works.
type Options struct {
	// Name and Version identify the server to clients (serverInfo).
	Name, Version string
	// Agent is the agent a client acts for when it names none: its skills
	// are the prompts and resources, and tools default to it.
	Agent string
	// Logger receives errors (internal errors with their request id) and
	// reload notes. Nil discards.
	Logger *slog.Logger
	// TracerProvider makes one span per MCP request. Nil makes none.
	TracerProvider trace.TracerProvider
	// Auditor records every call. Nil records nothing.
	Auditor Auditor
	// PageSize bounds the items of one tools/list, prompts/list and
	// resources/list page; 0 means 100.
	PageSize int
	// PollInterval is how often Run asks for the index generation when the
	// router cannot say when it changes (is not a skill.GenerationWatcher);
	// 0 means 2s.
	PollInterval time.Duration
	// MaxViews bounds the distinct views (agent and features) kept at
	// once; 0 means 64. A request for one more is refused.
	MaxViews int
	// Features are what Serve offers its session (ProbeFeatures finds
	// those of a remote router's token); 0 means every feature.
	Features Features
}

// View is what a client sees: the agent whose skills are listed as prompts
// and resources (and that tool calls default to), and the features its token
// allows.
type View struct {
	Agent    string
	Features Features
}

// Front serves a skill.Router over MCP: one *mcpsdk.Server per View, kept
// current by Run. It is safe for concurrent use.
type Front struct {
	router skill.Router
	opts   Options
	log    *slog.Logger
	tracer trace.Tracer

	mu    sync.Mutex
	views map[View]*view

	rateAudits rateSampler

	// statusErr is the last error of reading the router's status, logged
	// when it changes.
	statusErr struct {
		sync.Mutex
		last string
	}
}

// New returns a Front over r.
func New(r skill.Router, opts Options) *Front {
	if opts.Name == "" {
		opts.Name = "mcpsag-router"
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 2 * time.Second
	}
	if opts.MaxViews <= 0 {
		opts.MaxViews = 64
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &Front{
		router: r,
		opts:   opts,
		log:    log.With("component", "mcp"),
		tracer: tp.Tracer("github.com/mcpsag/router/internal/mcp"),
		views:  map[View]*view{},
	}
}

// ErrTooManyViews is returned by Server when MaxViews views exist already.
var ErrTooManyViews = errors.New("too many distinct agent views are open")

// Server returns the MCP server of view v, building it on first use. Its
// prompts and resources are listed from the router then; if the router is
// not ready, they stay empty until Run sees the first generation. It fails
// only when v's agent is malformed or MaxViews is reached.
func (f *Front) Server(ctx context.Context, v View) (*mcpsdk.Server, error) {
	if err := skill.ValidateAgent(v.Agent); err != nil {
		return nil, err
	}
	f.mu.Lock()
	vw, ok := f.views[v]
	if !ok {
		if len(f.views) >= f.opts.MaxViews {
			f.mu.Unlock()
			return nil, fmt.Errorf("%w (limit %d)", ErrTooManyViews, f.opts.MaxViews)
		}
		vw = f.newView(v)
		f.views[v] = vw
		vw.mu.Lock() // held until the first refresh is done
	}
	f.mu.Unlock()
	if !ok {
		// The first refresh must not be cut short by the request that
		// happened to create the view.
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		f.refresh(bctx, vw)
		cancel()
		vw.mu.Unlock()
		close(vw.ready)
		return vw.srv, nil
	}
	select {
	case <-vw.ready:
		return vw.srv, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Run keeps every view current until ctx ends: when the router serves a new
// index generation, prompts and resources are listed again and the changes
// applied, which sends list_changed notifications to connected clients.
// What changes without a new generation (the router's feature flags and MCP
// servers, which decide the tools offered, and the files of subscribed
// skills) is read again every PollInterval. It returns nil when ctx ends.
func (f *Front) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { f.poll(ctx) })
	var gen uint64
	if st, err := f.router.Status(ctx); err == nil && st != nil {
		gen = st.Generation
	}
	// Views built before gen was read may have listed an older generation.
	f.refreshAll(ctx)
	watcher, _ := f.router.(skill.GenerationWatcher)
	backoff := f.opts.PollInterval
	for {
		next, err := f.nextGeneration(ctx, watcher, gen)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			f.log.Warn("cannot follow index generations; retrying", "err", err, "retry_in", backoff)
			if !sleep(ctx, backoff) {
				return nil
			}
			continue
		}
		if next == gen {
			continue
		}
		f.log.Debug("new index generation: refreshing MCP views", "generation", next)
		gen = next
		f.refreshAll(ctx)
	}
}

// nextGeneration waits for a generation other than gen.
func (f *Front) nextGeneration(ctx context.Context, w skill.GenerationWatcher, gen uint64) (uint64, error) {
	if w != nil {
		return w.WaitGeneration(ctx, gen)
	}
	if !sleep(ctx, f.opts.PollInterval) {
		return gen, ctx.Err()
	}
	st, err := f.router.Status(ctx)
	if err != nil {
		return gen, err
	}
	return st.Generation, nil
}

// poll reads the router's state and the subscribed skills again every
// PollInterval until ctx ends.
func (f *Front) poll(ctx context.Context) {
	t := time.NewTicker(f.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ctx := skill.WithOrigin(ctx, skill.Origin{Transport: "mcp"})
		var st *skill.Status
		read := false
		for _, vw := range f.viewList() {
			vw.mu.Lock()
			if vw.key.Features&(FeatureExec|FeatureFind|FeatureCall) != 0 {
				if !read {
					st, read = f.status(ctx, vw), true
				}
				if st != nil {
					f.refreshTools(vw, st)
				}
			}
			if vw.key.Features&FeatureLoad != 0 {
				f.notifySubscribers(ctx, vw)
			}
			vw.mu.Unlock()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// viewList returns the views built so far.
func (f *Front) viewList() []*view {
	f.mu.Lock()
	defer f.mu.Unlock()
	views := make([]*view, 0, len(f.views))
	for _, vw := range f.views {
		views = append(views, vw)
	}
	return views
}

func (f *Front) refreshAll(ctx context.Context) {
	for _, vw := range f.viewList() {
		vw.mu.Lock()
		f.refresh(ctx, vw)
		vw.mu.Unlock()
	}
}
