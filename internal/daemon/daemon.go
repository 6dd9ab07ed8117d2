// Package daemon runs the router: it resolves the configuration, opens the
// state directory, starts the gRPC server, builds the first index and stops in
// two stages. cmd/router is a thin wrapper around Main; end-to-end tests start
// Main on a loopback port.
package daemon

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/mcpsag/router/internal/buildinfo"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/generation"
	"github.com/mcpsag/router/internal/router"
	"github.com/mcpsag/router/internal/server"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/telemetry"
	"github.com/mcpsag/router/internal/tlsconfig"
	"github.com/mcpsag/router/models"
)

// Main is one router process.
type Main struct {
	Config config.Config
	// Overrides and Getenv are the flags and environment the config was
	// resolved with; config reloads resolve again with them.
	Overrides config.Overrides
	Getenv    func(string) string
	// PrintConfig asks Run's caller to print the config and exit.
	PrintConfig bool
	Stderr      io.Writer

	log      *slog.Logger
	tel      *telemetry.Telemetry
	db       *store.DB
	embedder *embed.Manager
	router   *router.Router
	srv      *server.Server
	lis      net.Listener
	served   chan error
	// bundledModel is where the bundled model was unpacked.
	bundledModel string
	// stopReload ends the config watcher.
	stopReload context.CancelFunc
	reloaded   chan struct{}
}

// usage is the router's --help text.
const usage = `router serves skills to agents over gRPC: it indexes SKILL.md folders,
matches tasks to skills and loads them progressively.

Usage:
  router [flags]

Settings come from, in increasing precedence: defaults, the config file
(--config, else <workspace>/.mcp/.mcp-config.yaml when present), MCPSAG_*
environment variables, and these flags:

`

// ParseFlags reads command line flags and the environment and resolves the
// configuration.
func (m *Main) ParseFlags(args []string, getenv func(string) string) error {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	var o config.Overrides
	fs.StringVar(&o.Addr, "addr", "", "gRPC listen `address` (MCPSAG_ADDR; default 127.0.0.1:7443)")
	fs.StringVar(&o.Workspace, "workspace", "", "workspace `dir` holding skills/ and agents/*/skills/ (MCPSAG_WORKSPACE; default .)")
	fs.StringVar(&o.StateDir, "state-dir", "", "`dir` for the cache (MCPSAG_STATE_DIR; default <workspace>/.mcp/state)")
	fs.StringVar(&o.ConfigFile, "config", "", "config `file` (MCPSAG_CONFIG; default <workspace>/.mcp/.mcp-config.yaml)")
	fs.StringVar(&o.AdminAddr, "admin-addr", "", "`address` for /metrics; empty disables it (MCPSAG_ADMIN_ADDR)")
	fs.StringVar(&o.ModelDir, "model-dir", "", "embedding model `dir`; empty uses the bundled model (MCPSAG_MODEL_DIR)")
	fs.StringVar(&o.LogLevel, "log-level", "", "debug, info, warn or error (MCPSAG_LOG_LEVEL; default info)")
	fs.BoolVar(&m.PrintConfig, "print-config", false, "print the effective configuration and exit")
	version := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; router takes flags only (see router --help)", fs.Arg(0))
	}
	if *version {
		fmt.Fprintln(m.Stderr, "router", buildinfo.Read())
		return flag.ErrHelp
	}
	cfg, err := config.Resolve(o, getenv)
	if err != nil {
		return err
	}
	m.Config, m.Overrides, m.Getenv = cfg, o, getenv
	return nil
}

// Run opens the state directory, starts serving (health NOT_SERVING), builds
// the first index, then reports SERVING. It returns once the router is ready;
// Close stops it. Addr tells where it listens.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	// On failure, undo what was opened, in reverse order.
	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
		}
	}()
	cfg := m.Config
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config.Resolve
	tel, err := telemetry.Setup(ctx, telemetry.Config{
		ServiceVersion: buildinfo.Read().String(),
		AdminAddr:      cfg.AdminAddr,
		RecordTaskText: cfg.Telemetry.RecordTaskText,
		Logger:         slog.New(slog.NewJSONHandler(m.Stderr, &slog.HandlerOptions{Level: level})),
		LogLevel:       level,
	})
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	m.tel = tel
	m.log = tel.Logger()
	undo = append(undo, func() { m.closeTelemetry() })

	guard := &auth.Guard{Auditor: tel.Recorder()}
	var serverOpts []grpc.ServerOption
	if cfg.Auth.Enabled {
		if guard.Tokens, err = auth.LoadTokens(cfg.Auth.TokensFile, m.log.With("component", "auth")); err != nil {
			return err
		}
	}
	if cfg.TLS.Enabled() {
		tc, err := tlsconfig.Server(cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile)
		if err != nil {
			return err
		}
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(tc)))
	}

	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another router running? pick another --addr)", cfg.Addr, err)
	}
	m.lis = lis
	undo = append(undo, func() { lis.Close() })
	db, err := store.Open(cfg.StateDir, store.Options{
		LockTimeout:   2 * time.Second,
		Holder:        fmt.Sprintf("router pid %d listening on %s since %s", os.Getpid(), lis.Addr(), time.Now().UTC().Format(time.RFC3339)),
		Logger:        m.log.With("component", "store"),
		ParserVersion: skillmd.Version,
	})
	if err != nil {
		return err
	}
	m.db = db
	undo = append(undo, func() { m.closeStore() })
	if db.Recovered != "" {
		m.log.Warn("cache was rebuilt", "reason", db.Recovered)
	}

	if cfg.Model.Dir == "" && !cfg.Model.Disabled {
		if m.bundledModel, err = models.Default(filepath.Join(cfg.StateDir, "models")); err != nil {
			m.log.Warn("bundled model could not be unpacked; matching uses keywords only", "err", err)
		}
	}
	rec := tel.Recorder()
	if !cfg.Model.Disabled {
		m.embedder = embed.NewManager(m.embedConfig(cfg), m.log, rec)
		undo = append(undo, func() { m.closeEmbedder() })
		if err := m.embedder.Reload(ctx, m.embedConfig(cfg)); err != nil {
			m.log.Warn("embedding model not loaded; matching uses keywords only until it is fixed", "dir", m.embedConfig(cfg).Dir, "err", err)
		}
		rec.RegisterEmbeddingCache(telemetry.CacheQuery, func() (int64, int64) {
			st := m.embedder.Status()
			return st.QueryCacheHits, st.QueryCacheMisses
		})
	}
	builder, err := generation.NewBuilder(m.builderConfig(), db)
	if err != nil {
		return err
	}
	m.router = router.New(router.Config{
		Builder:          builder,
		Watch:            cfg.Watch.Enabled,
		Debounce:         cfg.Watch.Debounce,
		RescanInterval:   cfg.Watch.RescanInterval,
		MaxResourceBytes: cfg.Limits.MaxResourceBytes,
		AllowlistFile:    cfg.Exec.AllowlistFile,
		Settings:         settingsOf(cfg),
		Version:          buildinfo.Read().String(),
		OnPass:           recordPass(rec),
		Logger:           m.log.With("component", "router"),
	})
	rec.RegisterIndexGauge(func() telemetry.IndexSize {
		st, _ := m.router.Status(context.Background())
		return telemetry.IndexSize{Served: int64(st.Skills), Disabled: int64(st.Disabled), Shadowed: int64(st.Shadowed),
			AgentScoped: int64(st.AgentScoped), Invalid: int64(st.FilesInvalid)}
	})
	served := &telemetry.Router{Next: m.router, Rec: rec, Tracer: tel.Tracer()}
	stats := tel.GRPCServerHandler()
	m.srv = server.New(&server.Service{Router: served, Logger: m.log.With("component", "grpc")}, server.Options{
		Logger:             m.log.With("component", "grpc"),
		StatsHandler:       stats,
		Interceptors:       []grpc.UnaryServerInterceptor{guard.Unary()},
		StreamInterceptors: []grpc.StreamServerInterceptor{guard.Stream()},
		ServerOptions:      serverOpts,
		Timeouts:           map[string]time.Duration{routerv1.SkillRouter_Reindex_FullMethodName: 10 * time.Minute},
	})
	stats.KnownMethods(m.srv.GRPC)
	m.served = make(chan error, 1)
	go func() { m.served <- m.srv.GRPC.Serve(lis) }()
	undo = append(undo, func() { m.srv.GRPC.Stop(); m.srv = nil })
	m.log.Info("router listening", "addr", lis.Addr().String(), "admin_addr", tel.AdminAddr(),
		"tls", cfg.TLS.Enabled(), "mtls", cfg.TLS.ClientCAFile != "", "auth", cfg.Auth.Enabled,
		"workspace", cfg.Workspace, "state_dir", cfg.StateDir, "version", buildinfo.Read().String())

	if err := m.router.Start(ctx); err != nil {
		return fmt.Errorf("first index: %w", err)
	}
	m.srv.SetServing(true)
	m.watchConfig(m.router)
	return nil
}

// watchConfig applies config file edits while the router runs: feature flags
// and load budgets at once; other settings after a restart (logged). A
// broken edit is logged and shown in Status, and the previous config stays.
func (m *Main) watchConfig(rt *router.Router) {
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := config.ReloadPath(m.Config, m.Overrides, getenv)
	state := skill.ConfigState{Path: path, LoadedAt: time.Now()} // touched by the reloader only
	rt.SetConfigState(state)
	log := m.log.With("component", "config")
	inForce := m.Config
	r := &config.Reloader{
		Flags: m.Overrides, Getenv: getenv, Path: path,
		OnChange: func(c config.Config) {
			if err := rt.SetSettings(context.Background(), settingsOf(c)); err != nil {
				log.Error("match settings not applied; the previous index keeps serving", "err", err)
			}
			if !reflect.DeepEqual(c.Model, inForce.Model) {
				if err := rt.SetEmbedConfig(context.Background(), m.embedConfig(c)); err != nil {
					log.Warn("reindex after a model change failed", "err", err)
				}
			}
			inForce = c
			state = skill.ConfigState{Path: path, LoadedAt: time.Now()}
			rt.SetConfigState(state)
			log.Info("config reloaded", "path", path, "applied", config.HotReloadable,
				"skills_v1", c.Flags.SkillsV1, "skills_exec", c.Flags.SkillsExec)
			if later := config.RestartNeeded(m.Config, c); len(later) > 0 {
				log.Warn("some changed settings take effect after a restart", "settings", later)
			}
		},
		OnError: func(err error) {
			state.Error = ""
			if err != nil {
				state.Error = err.Error()
				log.Error("config edit rejected; the previous config stays in force", "path", path, "err", err)
			}
			rt.SetConfigState(state)
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopReload, m.reloaded = cancel, make(chan struct{})
	go func() {
		defer close(m.reloaded)
		r.Run(ctx, m.Config)
	}()
}

// builderConfig says where the skills are and how to read and embed them.
func (m *Main) builderConfig() generation.Config {
	cfg := m.Config
	roots, _ := cfg.RootSpecsKinds() // validated by config.Resolve
	prec, _ := cfg.PrecedenceKinds()
	bc := generation.Config{
		Workspace:  cfg.Workspace,
		Precedence: prec,
		Limits:     skillmd.Limits{MaxFileBytes: cfg.Limits.MaxSkillFileBytes, MaxFrontmatterBytes: cfg.Limits.MaxFrontmatterBytes},
		Embedder:   m.embedder,
		Logger:     m.log.With("component", "builder"),
	}
	for _, r := range roots {
		bc.Roots = append(bc.Roots, skillfs.RootSpec{Path: r.Path, Kind: r.Kind, Agent: r.Agent})
	}
	return bc
}

// recordPass records every build of the router: a reindex event and the
// document cache figures.
func recordPass(rec *telemetry.Recorder) func(context.Context, generation.Pass, error) {
	return func(ctx context.Context, p generation.Pass, err error) {
		st := p.Stats
		rec.Reindexed(ctx, telemetry.Reindex{
			Duration: st.Duration, Err: err, Generation: st.Generation,
			Scanned: st.Scanned, Added: st.Added, Changed: st.Changed, Removed: st.Removed,
			Unchanged: st.Unchanged, Invalid: st.Invalid, Parsed: st.Parsed, Embedded: st.Embedded,
		})
		if p.DocumentsCached+p.DocumentsEmbedded > 0 {
			rec.EmbeddingCache(ctx, telemetry.CacheDocument, p.DocumentsCached, p.DocumentsEmbedded)
		}
	}
}

// Addr returns the address the router listens on.
func (m *Main) Addr() string {
	if m.lis == nil {
		return ""
	}
	return m.lis.Addr().String()
}

// Router returns the running router (for tests and embedding).
func (m *Main) Router() *router.Router { return m.router }

// Close stops the router in two stages: health turns NOT_SERVING (and stays
// so for the drain period, so load balancers move away), then in-flight calls
// get the grace period to finish before the server stops hard. Resources close
// in reverse order of opening. Cancelling ctx skips the waiting.
func (m *Main) Close(ctx context.Context) error {
	if m.srv != nil {
		m.srv.Health.Shutdown()
		if d := m.Config.Shutdown.Drain; d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		stopped := make(chan struct{})
		go func() { m.srv.GRPC.GracefulStop(); close(stopped) }()
		grace := time.NewTimer(m.Config.Shutdown.Grace)
		select {
		case <-stopped:
		case <-grace.C:
			m.log.Warn("grace period over; stopping with calls in flight")
			m.srv.GRPC.Stop()
		case <-ctx.Done():
			m.srv.GRPC.Stop()
		}
		grace.Stop()
		<-stopped
		if err := <-m.served; err != nil && !errors.Is(err, net.ErrClosed) {
			m.log.Warn("server ended with an error", "err", err)
		}
		m.srv = nil
	}
	var errs []error
	if m.stopReload != nil {
		m.stopReload()
		<-m.reloaded
		m.stopReload = nil
	}
	if m.router != nil {
		errs = append(errs, m.router.Close())
		m.router = nil
	}
	errs = append(errs, m.closeEmbedder(), m.closeStore())
	if m.log != nil {
		m.log.Info("router stopped")
	}
	errs = append(errs, m.closeTelemetry())
	return errors.Join(errs...)
}

// AdminAddr returns the address /metrics is served on, "" when off.
func (m *Main) AdminAddr() string { return m.tel.AdminAddr() }

// closeTelemetry flushes and stops telemetry, within a bounded time.
func (m *Main) closeTelemetry() error {
	if m.tel == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.tel.Shutdown(ctx)
	m.tel = nil
	return err
}

func (m *Main) closeEmbedder() error {
	if m.embedder == nil {
		return nil
	}
	err := m.embedder.Close()
	m.embedder = nil
	return err
}

func (m *Main) closeStore() error {
	if m.db == nil {
		return nil
	}
	err := m.db.Close()
	m.db = nil
	return err
}

// embedConfig maps the config file's model section onto the embedder's; an
// empty model.dir means the bundled model.
func (m *Main) embedConfig(cfg config.Config) embed.Config {
	mc := cfg.Model
	return embed.Config{
		Dir: cmp.Or(mc.Dir, m.bundledModel), Name: mc.Name,
		QueryPrefix: mc.QueryPrefix, DocumentPrefix: mc.DocumentPrefix,
		MaxTokens: mc.MaxTokens, BatchSize: mc.BatchSize, MatchThreshold: mc.MatchThreshold,
		BodyChars: mc.BodyChars, Timeout: mc.Timeout, QueryCacheSize: mc.QueryCacheSize,
	}
}

// settingsOf extracts the hot-reloadable settings from a configuration.
func settingsOf(cfg config.Config) router.Settings {
	return router.Settings{
		Flags:              skill.Flags{SkillsV1: cfg.Flags.SkillsV1, SkillsExec: cfg.Flags.SkillsExec},
		DefaultTokenBudget: cfg.Load.DefaultTokenBudget,
		MaxTokenBudget:     cfg.Load.MaxTokenBudget,
		Match:              cfg.Match,
	}
}
