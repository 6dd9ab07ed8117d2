package eval

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/upstream"
)

// Options say what to index.
type Options struct {
	// Skills is a skill root (folders holding SKILL.md), or a workspace
	// holding skills/ and agents/*/skills/.
	Skills string
	// ModelDir is the embedding model folder. Empty, missing or broken
	// means dense matching is unavailable; keyword-only evaluation
	// still runs.
	ModelDir string
	// Embed configures the model beyond its folder (prefixes, body
	// characters); Dir is taken from ModelDir.
	Embed embed.Config
	// Config configures matching; nil means match.DefaultConfig().
	Config *match.Config
	// StateDir holds the store; empty means a new temporary folder,
	// removed by Close.
	StateDir string
	// Servers are MCP servers whose tools are indexed with the skills,
	// as the router indexes them; Skills may then be empty. Open waits
	// for every server's first attempt (at most ServerWait, default 2
	// minutes) and fails when one is not ready.
	Servers    []upstream.ServerConfig
	ServerWait time.Duration
	Logger     *slog.Logger
	// Progress, if set, is told the build's phase while Open runs.
	Progress Progress
}

// Progress is told how far a long step has come: its phase ("scan",
// "parse", "embed", "index", "queries", ...) and done of total units (total
// 0 when unknown). Calls never overlap; each should return quickly.
type Progress func(phase string, done, total int)

// Corpus is an indexed skill folder ready for evaluation: one generation,
// built by the same loader.Loader the router uses.
type Corpus struct {
	Index   *match.Index
	Catalog *catalog.Catalog
	// Model is the identity of the model that embedded the skills, zero
	// when dense matching is unavailable; DenseErr says why it is.
	Model    embed.Identity
	DenseErr error
	// BuildTime is what the build took (scan, parse, embed, index);
	// IndexTime the match index's share of it.
	BuildTime, IndexTime time.Duration

	gen      *loader.Generation
	loader   *loader.Loader
	db       *store.DB
	tmp      string
	manager  *embed.Manager
	upstream *upstream.Manager
}

// ErrNoModel is DenseErr when no model folder was given or it does not
// exist.
var ErrNoModel = errors.New("no embedding model folder")

// Open builds a generation of opt.Skills. It fails when the folder cannot be
// read or holds no valid skill; a missing or broken model only sets DenseErr.
func Open(ctx context.Context, opt Options) (*Corpus, error) {
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Corpus{}
	abs, err := skillsFolder(opt)
	if err != nil {
		return nil, err
	}
	state := opt.StateDir
	if state == "" {
		if c.tmp, err = os.MkdirTemp("", "mcpsag-eval-"); err != nil {
			return nil, err
		}
		state = c.tmp
	}
	ok := false
	defer func() {
		if !ok {
			_ = c.Close()
		}
	}()
	if c.db, err = store.Open(state, store.Options{Logger: log, ParserVersion: skillmd.Version}); err != nil {
		return nil, err
	}
	c.manager, c.DenseErr = openModel(ctx, opt, log)
	workspace, roots, err := skillRoots(abs, state)
	if err != nil {
		return nil, err
	}
	cfg := match.DefaultConfig()
	if opt.Config != nil {
		cfg = *opt.Config
	}
	lc := loader.Config{Workspace: workspace, Roots: roots, Embedder: c.manager, Match: cfg, Logger: log}
	if len(opt.Servers) > 0 {
		if err := c.startServers(ctx, opt, log); err != nil {
			return nil, err
		}
		lc.Tools = c.upstream
	}
	if err := c.build(ctx, lc, opt.Progress, abs); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// skillsFolder returns the absolute path of opt.Skills, which must be a
// folder; "" when it is left out to evaluate the tools of MCP servers
// alone.
func skillsFolder(opt Options) (string, error) {
	if opt.Skills == "" && len(opt.Servers) > 0 {
		return "", nil
	}
	abs, err := filepath.Abs(opt.Skills)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", abs)
	}
	return abs, nil
}

// skillRoots returns the workspace and roots to index for the folder abs:
// a workspace's roots when it holds skills/ or agents/, else abs as one
// root; with no folder, an empty root in the state folder.
func skillRoots(abs, state string) (string, []skillfs.RootSpec, error) {
	if abs == "" {
		// Tools only: an empty folder as the skill root.
		workspace := filepath.Join(state, "no-skills")
		if err := os.MkdirAll(workspace, 0o755); err != nil {
			return "", nil, err
		}
		return workspace, []skillfs.RootSpec{{Path: workspace, Kind: skill.KindProject}}, nil
	}
	for _, sub := range []string{"skills", "agents"} {
		if fi, err := os.Stat(filepath.Join(abs, sub)); err == nil && fi.IsDir() {
			return abs, skillfs.DefaultRoots(), nil
		}
	}
	return abs, []skillfs.RootSpec{{Path: abs, Kind: skill.KindProject}}, nil
}

// build builds the corpus's generation through a loader of lc, telling
// progress how far it has come, and fails when it holds nothing to match
// (abs is the skills folder, "" for tools alone).
func (c *Corpus) build(ctx context.Context, lc loader.Config, progress Progress, abs string) error {
	var err error
	if c.loader, err = loader.New(lc, c.db); err != nil {
		return err
	}
	start := time.Now()
	stop := c.watchBuild(progress)
	g, _, err := c.loader.Build(ctx)
	stop()
	if err != nil {
		return fmt.Errorf("index %s: %w", abs, err)
	}
	c.BuildTime = time.Since(start)
	if len(g.Catalog.Winners()) == 0 {
		if abs == "" {
			return errors.New("the MCP servers listed no tools")
		}
		return fmt.Errorf("no valid skill under %s", abs)
	}
	if c.DenseErr == nil && g.Model.Fingerprint == "" {
		c.DenseErr = errors.New("embedding the skills failed")
	}
	c.use(g)
	return nil
}

// startServers connects the MCP servers and waits until each has listed its
// tools.
func (c *Corpus) startServers(ctx context.Context, opt Options, log *slog.Logger) error {
	c.upstream = upstream.New(upstream.Options{ClientName: "mcpsag-eval", Logger: log})
	c.upstream.Apply(opt.Servers)
	wait := opt.ServerWait
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := c.upstream.Wait(wctx); err != nil {
		return fmt.Errorf("wait for the MCP servers: %w", err)
	}
	var errs []error
	for _, s := range c.upstream.Servers() {
		if s.State != skill.ServerReady && s.State != skill.ServerDisabled {
			errs = append(errs, fmt.Errorf("MCP server %s is %s: %s", s.Name, s.State, s.LastError))
		}
	}
	return errors.Join(errs...)
}

// Servers describes the MCP servers whose tools are indexed.
func (c *Corpus) Servers() []skill.ServerStatus {
	if c.upstream == nil {
		return nil
	}
	return c.upstream.Servers()
}

// openModel loads the embedding model of opt, or says why dense matching is
// unavailable.
// evalQueryCache is the query cache of an evaluation's model, unless its
// options set one: room for every task of the largest dev sets and their
// parts.
const evalQueryCache = 1 << 16

func openModel(ctx context.Context, opt Options, log *slog.Logger) (*embed.Manager, error) {
	if opt.ModelDir == "" {
		return nil, ErrNoModel
	}
	if _, err := os.Stat(opt.ModelDir); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoModel, opt.ModelDir)
	}
	ecfg := opt.Embed
	ecfg.Dir = opt.ModelDir
	if ecfg.QueryCacheSize == 0 {
		// An evaluation ranks the same tasks again and again (for each
		// weight tried, each sub-catalog): they are embedded once.
		ecfg.QueryCacheSize = evalQueryCache
	}
	m := embed.NewManager(ecfg, log, nil)
	if err := m.Reload(ctx, ecfg); err != nil {
		m.Close()
		return nil, fmt.Errorf("load model %s: %w", opt.ModelDir, err)
	}
	return m, nil
}

// watchBuild reports the loader's progress to p every 100ms until stop
// returns.
func (c *Corpus) watchBuild(p Progress) (stop func()) {
	if p == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if st := c.loader.Progress(); st.Running {
					p(st.Phase, st.Done, st.Total)
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (c *Corpus) use(g *loader.Generation) {
	c.gen, c.Index, c.Catalog, c.Model = g, g.Index, g.Catalog, g.Model
	c.IndexTime = g.Index.Stats().Duration
}

// Build returns another Index over the same skills and vectors with cfg, as
// the router does on a configuration reload.
func (c *Corpus) Build(ctx context.Context, cfg match.Config) (*match.Index, error) {
	g, err := c.loader.WithMatchConfig(ctx, c.gen, cfg)
	if err != nil {
		return nil, err
	}
	return g.Index, nil
}

// Close releases the model and the store and removes a temporary state
// folder.
func (c *Corpus) Close() error {
	if c.loader != nil {
		c.loader.Flush()
	}
	var errs []error
	if c.upstream != nil {
		errs = append(errs, c.upstream.Close())
	}
	if c.manager != nil {
		errs = append(errs, c.manager.Close())
	}
	if c.db != nil {
		errs = append(errs, c.db.Close())
	}
	if c.tmp != "" {
		errs = append(errs, os.RemoveAll(c.tmp))
	}
	return errors.Join(errs...)
}

// phase returns a Progress that reports under the given phase name; nil
// stays nil.
func (p Progress) phase(name string) Progress {
	if p == nil {
		return nil
	}
	return func(_ string, done, total int) { p(name, done, total) }
}
