// Package daemon runs the router: it resolves the configuration, opens the
// state directory, starts the gRPC server, builds the first index and stops in
// two stages. cmd/router is a thin wrapper around Main; end-to-end tests start
// Main on a loopback port.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/buildinfo"
	"github.com/mcpsag/router/internal/statedir"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/router"
	"github.com/mcpsag/router/internal/sdnotify"
	"github.com/mcpsag/router/internal/server"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/telemetry"
	"github.com/mcpsag/router/internal/tlsconfig"
	"github.com/mcpsag/router/internal/upstream"
	"github.com/mcpsag/router/models"
)

// Main is one router process.
type Main struct {
	Config config.Config
	// Overrides and Getenv are the flags and environment the config was
	// resolved with; config reloads resolve again with them, and with
	// LookupEnv when set (it tells a variable set to "" from an unset one).
	Overrides config.Overrides
	Getenv    func(string) string
	LookupEnv config.LookupEnv
	// Stderr receives the JSON log; default os.Stderr.
	Stderr io.Writer

	log      *slog.Logger
	tel      *telemetry.Telemetry
	db       *store.DB
	embedder *embed.Manager
	// fast is the fast model (config.FastModel); nil when there is none.
	fast *embed.Manager
	// modelLoaded is closed when the first model load, started by
	// openCore beside the first scan, has ended.
	modelLoaded chan struct{}
	upstream    *upstream.Manager
	loader      *loader.Loader
	router      *router.Router
	// served is the router as the fronts call it: the telemetry
	// decorator over router.
	served skill.Router
	guard  *auth.Guard
	// proxies are the trusted proxies, whose forwarded client address
	// the gRPC and MCP listeners take as the caller's.
	proxies auth.Proxies
	srv     *server.Server
	lis     net.Listener
	// sock serves the gRPC API on the state directory's socket, for the
	// standalone MCP sessions of the workspace.
	sock     *server.Server
	sockPath string
	done     chan error // the gRPC server's Serve result
	// serveEnded is closed once the gRPC server's Serve returned.
	serveEnded chan struct{}
	mcp        *mcpServer
	// serving is set once the first index is served, and cleared when a
	// shutdown begins; /readyz reports it.
	serving atomic.Bool
	// bundledModel is where the bundled model was unpacked.
	bundledModel string
	// stopReload ends the config watcher.
	stopReload context.CancelFunc
	reloaded   chan struct{}
	// notifier tells a service manager about readiness and stopping;
	// nil outside one. stopWatchdog ends its watchdog pings.
	notifier     *sdnotify.Notifier
	stopWatchdog context.CancelFunc
	watchdogDone chan struct{}
}

// Run starts the daemon: it opens the state directory, starts the gRPC
// server (health NOT_SERVING) and, with mcp.addr, the MCP Streamable HTTP
// server, builds the first index, then reports SERVING. It returns once the
// router is ready; Close stops it. Addr and MCPAddr tell where it listens.
func (m *Main) Run(ctx context.Context) (err error) {
	// On failure, undo what was opened, in reverse order.
	var undo undoList
	defer func() {
		if err != nil {
			undo.run()
		}
	}()
	cfg := m.Config
	if err := m.startTelemetry(ctx); err != nil {
		return err
	}
	undo.add(func() { m.closeTelemetry() })

	if err := m.setupGuard(); err != nil {
		return err
	}
	serverOpts, tlsConfig, err := m.serverOptions()
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another router running? pick another --addr)", cfg.Addr, err)
	}
	m.lis = lis
	undo.add(func() { lis.Close() })

	holder := fmt.Sprintf("router pid %d listening on %s since %s", os.Getpid(), lis.Addr(), time.Now().UTC().Format(time.RFC3339))
	if err := m.openCore(ctx, holder, cfg.StateDir, 2*time.Second); err != nil {
		return err
	}
	undo.add(func() { m.closeCore() })

	if err := m.startServers(lis, serverOpts, tlsConfig, &undo); err != nil {
		return err
	}
	m.logListening()
	m.warnOpenListeners()

	if err := m.router.Start(ctx); err != nil {
		return fmt.Errorf("first index: %w", err)
	}
	m.srv.SetServing(true)
	m.serving.Store(true)
	m.watchConfig(m.router)
	m.notifyReady()
	return nil
}

// undoList is what a start opened so far, to close in reverse order when a
// later step fails.
type undoList []func()

func (u *undoList) add(f func()) { *u = append(*u, f) }

func (u undoList) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}

// serverOptions are the gRPC server's options the configuration asks for
// (TLS, and the trusted proxies' tap, which it sets in m.proxies), with the
// listener's TLS configuration (nil: plain).
func (m *Main) serverOptions() ([]grpc.ServerOption, *tls.Config, error) {
	cfg := m.Config
	var opts []grpc.ServerOption
	var tlsConfig *tls.Config
	if cfg.TLS.Enabled() {
		var err error
		if tlsConfig, err = tlsconfig.Server(cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile); err != nil {
			return nil, nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
	}
	var err error
	if m.proxies, err = auth.ParseProxies(cfg.TrustedProxies); err != nil {
		return nil, nil, err
	}
	if !m.proxies.Empty() {
		// grpc.InTapHandle is experimental; it is the one hook that runs
		// before anything reads a call's peer.
		opts = append(opts, grpc.InTapHandle(m.proxies.Tap))
	}
	return opts, tlsConfig, nil
}

// startServers serves gRPC on lis, the state directory's socket and, with
// mcp.addr, MCP over HTTP, adding each to undo.
func (m *Main) startServers(lis net.Listener, serverOpts []grpc.ServerOption, tlsConfig *tls.Config, undo *undoList) error {
	m.srv = m.newServer(serverOpts...)
	m.done, m.serveEnded = make(chan error, 1), make(chan struct{})
	go func() {
		m.done <- m.srv.GRPC.Serve(lis)
		close(m.serveEnded)
	}()
	undo.add(func() { m.srv.GRPC.Stop(); m.srv = nil })
	// Standalone MCP sessions on the workspace attach here.
	m.serveSocket()
	undo.add(m.stopSocket)

	if m.Config.MCP.Addr != "" {
		var err error
		if m.mcp, err = m.startMCPHTTP(tlsConfig); err != nil {
			return err
		}
		undo.add(func() { m.mcp.stop(context.Background()); m.mcp = nil })
	}
	return nil
}

// logListening logs where the router listens and what it serves with.
func (m *Main) logListening() {
	cfg := m.Config
	m.log.Info("router listening", "addr", m.lis.Addr().String(), "mcp_addr", m.MCPAddr(), "admin_addr", m.tel.AdminAddr(),
		"socket", m.sockPath, "tls", cfg.TLS.Enabled(), "mtls", cfg.TLS.ClientCAFile != "", "auth", cfg.Auth.Enabled,
		"pprof", cfg.Telemetry.Pprof && m.tel.AdminAddr() != "", "config", configFileOf(cfg), "workspace", cfg.Workspace, "state_dir", cfg.StateDir,
		"model", m.modelOf(cfg), "version", buildinfo.Read().String())
}

// configFileOf names the config file the router read, "none" when it read
// none.
func configFileOf(cfg config.Config) string {
	if cfg.File == "" {
		return "none"
	}
	return cfg.File
}

// modelOf names the embedding model the router loads: its folder, the
// bundled model's name (and where it was unpacked), or "off".
func (m *Main) modelOf(cfg config.Config) string {
	switch {
	case cfg.Model.Disabled:
		return "off: keywords only (model.disabled)"
	case cfg.Model.Dir != "":
		return cfg.Model.Dir
	case m.bundledModel != "":
		return "bundled " + models.DefaultName + " (" + m.bundledModel + ")"
	}
	return "bundled " + models.DefaultName + " (not unpacked: keywords only)"
}

// Serve runs the router until a signal arrives on sigs or ctx ends, then
// stops it in two stages (Close); a second signal cuts the stop short.
// Each signal is logged, with what it does.
func (m *Main) Serve(ctx context.Context, sigs <-chan os.Signal) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			first <- s
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := m.Run(ctx); err != nil {
		select {
		case s := <-first:
			if m.log != nil {
				m.log.Info("signal received while starting: the start is abandoned", "signal", s.String())
			}
		default:
		}
		return err
	}
	<-ctx.Done()
	select {
	case s := <-first:
		m.log.Info("signal received: stopping", "signal", s.String(), "drain", m.Config.Shutdown.Drain.String(),
			"grace", m.Config.Shutdown.Grace.String(), "pid", os.Getpid())
	default:
	}
	closeCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		select {
		case s := <-sigs:
			m.log.Warn("second signal received: stopping at once, without waiting for calls in flight", "signal", s.String())
			stop()
		case <-closeCtx.Done():
		}
	}()
	return m.Close(closeCtx)
}

// setupGuard makes the gRPC auth guard, with the tokens file when auth is
// on.
func (m *Main) setupGuard() error {
	m.guard = &auth.Guard{Auditor: m.tel.Recorder(), Methods: server.Methods, Failures: auth.NewFailureLimiter()}
	if !m.Config.Auth.Enabled {
		return nil
	}
	var err error
	m.guard.Tokens, err = auth.LoadTokens(m.Config.Auth.TokensFile, m.log.With("component", "auth"))
	return err
}

// newServer makes the gRPC server of m.served, behind the guard.
func (m *Main) newServer(opts ...grpc.ServerOption) *server.Server {
	stats := m.tel.GRPCServerHandler()
	srv := server.New(&server.Service{Router: m.served, Logger: m.log.With("component", "grpc")}, server.Options{
		Logger:             m.log.With("component", "grpc"),
		StatsHandler:       stats,
		Interceptors:       []grpc.UnaryServerInterceptor{m.guard.Unary()},
		StreamInterceptors: []grpc.StreamServerInterceptor{m.guard.Stream()},
		Authenticate:       m.guard.Authenticate,
		ServerOptions:      opts,
		Timeouts:           map[string]time.Duration{routerv1.SkillRouter_Reindex_FullMethodName: 10 * time.Minute},
	})
	stats.KnownMethods(srv.GRPC)
	return srv
}

// startTelemetry sets up telemetry and the logger.
func (m *Main) startTelemetry(ctx context.Context) error {
	if m.Stderr == nil {
		m.Stderr = os.Stderr
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(m.Config.LogLevel)) // validated by config.Resolve
	tel, err := telemetry.Setup(ctx, telemetry.Config{
		ServiceVersion: buildinfo.Read().String(),
		AdminAddr:      m.Config.AdminAddr,
		RecordTaskText: m.Config.Telemetry.RecordTaskText,
		Pprof:          m.Config.Telemetry.Pprof,
		Ready: func() (bool, string) {
			if m.serving.Load() {
				return true, "ready"
			}
			return false, "not serving: the first index is being built, or the router is stopping"
		},
		Logger:   slog.New(slog.NewJSONHandler(m.Stderr, &slog.HandlerOptions{Level: level})),
		LogLevel: level,
	})
	if err != nil {
		return err // it says "telemetry: ..."
	}
	m.tel, m.log = tel, tel.Logger()
	return nil
}

// openCore opens the store in stateDir, the embedding model and the router
// (not yet started). holder names this process in the state directory's
// lock; lockWait is how long to wait for another holder to let go.
func (m *Main) openCore(ctx context.Context, holder, stateDir string, lockWait time.Duration) error {
	cfg := m.Config
	if err := m.openStore(holder, stateDir, lockWait); err != nil {
		return err
	}
	db := m.db
	rec := m.tel.Recorder()
	m.openEmbedders(cfg, db.Dir(), rec)
	m.openUpstream(cfg)
	// The loader starts reading the cached records and the index snapshot
	// at once (the snapshot after the last scan, when it serves that); the
	// model loads meanwhile, while the first pass scans the roots. That
	// pass waits for the load before it embeds (a Manager that has no
	// model yet reloads under the same lock).
	lc := m.loaderConfig(rec)
	var err error
	m.loader, err = loader.New(lc, db)
	if err != nil {
		m.closeUpstream()
		return err
	}
	m.loadModels(ctx, cfg, rec)
	m.router = router.New(router.Config{
		Source:           &served{loader: m.loader, db: db, embedder: m.embedder, fast: m.fast},
		Workspace:        cfg.Workspace,
		StateDir:         stateDir,
		ModelDir:         cfg.Model.Dir,
		MaxResourceBytes: cfg.Limits.MaxResourceBytes,
		AllowlistFile:    cfg.Exec.AllowlistFile,
		Settings:         settingsOf(cfg),
		Version:          buildinfo.Read().String(),
		Upstream:         m.upstream,
		Logger:           m.log.With("component", "router"),
	})
	m.registerGauges(rec)
	m.served = &telemetry.Router{Router: m.router, Rec: rec, Tracer: m.tel.Tracer()}
	return nil
}

// openStore opens the store in stateDir as m.db, and unpacks the bundled
// model into it when the configuration uses that model.
func (m *Main) openStore(holder, stateDir string, lockWait time.Duration) error {
	cfg := m.Config
	if err := checkWorkspace(cfg.Workspace); err != nil {
		return err
	}
	opts := store.Options{
		LockTimeout:   lockWait,
		Holder:        holder,
		Logger:        m.log.With("component", "store"),
		ParserVersion: skillmd.Version,
		Release:       buildinfo.Read().String(),
	}
	// A state directory that cannot hold the cache (no permission, a full
	// or read-only file system) degrades to a temporary cache, reported in
	// Status; one held by another router is an error (store.ErrLocked).
	db, err := store.OpenOrFallback(stateDir, opts)
	if err != nil {
		return err
	}
	m.db = db
	if db.Recovered != "" {
		m.log.Warn("cache was rebuilt", "reason", db.Recovered)
	}
	if cfg.Model.Dir == "" && !cfg.Model.Disabled {
		if m.bundledModel, err = models.Default(filepath.Join(db.Dir(), statedir.ModelsDir)); err != nil {
			m.log.Warn("bundled model could not be unpacked; matching uses keywords only", "err", err)
		}
	}
	return nil
}

// openEmbedders makes the embedding model's manager and the fast model's,
// with no model loaded yet (loadModels loads the model, a pass that needs
// the fast model's vectors loads it); none when the model is off.
func (m *Main) openEmbedders(cfg config.Config, dbDir string, rec *telemetry.Recorder) {
	if cfg.Model.Disabled {
		return
	}
	m.embedder = embed.NewManager(m.embedConfig(cfg), m.log, rec)
	if fc, ok := m.fastConfig(cfg, dbDir); ok {
		m.fast = embed.NewManager(fc, m.log.With("tier", "fast"), rec)
	}
}

// openUpstream connects the MCP servers of the configuration.
func (m *Main) openUpstream(cfg config.Config) {
	getenv := m.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	m.upstream = upstream.New(upstream.Options{
		ClientName: "mcpsag-router", ClientVersion: buildinfo.Read().String(), Getenv: getenv,
		Logger: m.log,
	})
	m.upstream.Apply(cfg.Servers())
}

// loadModels loads the model in the background, closing m.modelLoaded
// when done (at once without a model), and reports the query cache of the
// model's manager to telemetry. The fast model is not loaded here: the
// first pass that needs its vectors loads it (a cold start, a broken
// model), and once the model's own vectors are served it is unloaded
// again (embed.Manager.Release); a warm start never loads it.
func (m *Main) loadModels(ctx context.Context, cfg config.Config, rec *telemetry.Recorder) {
	m.modelLoaded = make(chan struct{})
	if m.embedder == nil {
		close(m.modelLoaded)
		return
	}
	go func(cfg embed.Config) {
		defer close(m.modelLoaded)
		if err := m.embedder.Reload(ctx, cfg); err != nil {
			m.log.Warn("embedding model not loaded; matching uses the fast model or keywords until it is fixed", "dir", cfg.Dir, "err", err)
		}
	}(m.embedConfig(cfg))
	// This embedder, not the field, which closeEmbedder clears before
	// telemetry's last collection (see registerGauges).
	emb := m.embedder
	rec.RegisterEmbeddingCache(telemetry.CacheQuery, func() (int64, int64) {
		st := emb.Status()
		return st.QueryCacheHits, st.QueryCacheMisses
	})
}

// registerGauges has telemetry read the index, the embedding and the
// router's state from m.router's Status.
func (m *Main) registerGauges(rec *telemetry.Recorder) {
	// The gauges read this router, not the field: closeCore clears the
	// field while a last collection may still run (OTLP's final export).
	rt := m.router
	rec.RegisterIndexGauge(func() telemetry.IndexSize {
		st, _ := rt.Status(context.Background())
		return telemetry.IndexSize{Served: int64(st.Skills), Disabled: int64(st.Disabled), Shadowed: int64(st.Shadowed),
			AgentScoped: int64(st.AgentScoped), Invalid: int64(st.FilesInvalid)}
	})
	rec.RegisterEmbeddingGauge(func() telemetry.Embedding {
		st, _ := rt.Status(context.Background())
		return embeddingGauge(*st)
	})
	rec.RegisterRouterState(func() telemetry.RouterState {
		st, _ := rt.Status(context.Background())
		return routerState(*st)
	})
}

// closeCore stops the config watcher and the router and closes the model and
// the store, in that order.
func (m *Main) closeCore() error {
	var errs []error
	if m.stopReload != nil {
		m.stopReload()
		<-m.reloaded
		m.stopReload = nil
	}
	if m.router != nil {
		m.tel.Recorder().RegisterIndexGauge(nil)
		m.tel.Recorder().RegisterEmbeddingGauge(nil)
		m.tel.Recorder().RegisterRouterState(nil)
		errs = append(errs, m.router.Close())
		m.router = nil
	}
	errs = append(errs, m.closeUpstream(), m.closeEmbedder(), m.closeStore())
	return errors.Join(errs...)
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
// get the grace period to finish before the servers stop hard. Resources
// close in reverse order of opening. Cancelling ctx skips the waiting. The
// drain's start and end are logged with the calls in flight.
func (m *Main) Close(ctx context.Context) error {
	m.serving.Store(false)
	m.notifyStopping()
	start := time.Now()
	logged := m.log != nil && m.srv != nil
	if logged {
		m.log.Info("drain started: health says NOT_SERVING, calls in flight get the grace period",
			append([]any{"drain", m.Config.Shutdown.Drain.String(), "grace", m.Config.Shutdown.Grace.String()}, m.inFlight()...)...)
	}
	if m.srv != nil {
		m.srv.Health.Shutdown()
		if d := m.Config.Shutdown.Drain; d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
	}
	left := m.stopServers(ctx)
	m.stopSocket()
	if logged {
		level, msg := slog.LevelInfo, "drain ended: every call finished"
		switch {
		case ctx.Err() != nil:
			level, msg = slog.LevelWarn, "drain ended: stopped at once, without waiting for calls in flight"
		case left != nil:
			level, msg = slog.LevelWarn, "drain ended: the grace period is over; calls still in flight were cut off"
		}
		if left == nil {
			left = []any{"grpc_in_flight", 0, "socket_in_flight", 0, "mcp_in_flight", 0}
		}
		m.log.Log(context.Background(), level, msg, append([]any{"took", time.Since(start).Round(time.Millisecond).String()}, left...)...)
	}
	err := m.closeCore()
	m.closeTelemetry()
	if m.log != nil {
		m.log.Info("router stopped")
	}
	return err
}

// stopServers stops MCP over HTTP and the gRPC server, letting calls in
// flight finish within the grace period (or until ctx ends). It returns
// the calls in flight when the grace period cut them off, as log
// attributes, and nil when every call finished.
func (m *Main) stopServers(ctx context.Context) []any {
	graceCtx, cancel := context.WithTimeout(ctx, m.Config.Shutdown.Grace)
	defer cancel()
	var mcpLeft int64
	cut := false
	if m.mcp != nil {
		mcpLeft, cut = m.mcp.stop(graceCtx)
		m.mcp = nil
	}
	var grpcLeft, sockLeft int64
	if m.srv != nil {
		stopped := make(chan struct{})
		go func() { m.srv.GRPC.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-graceCtx.Done():
			grpcLeft, cut = m.srv.InFlight(), true
			if m.sock != nil {
				sockLeft = m.sock.InFlight()
			}
			m.srv.GRPC.Stop()
		}
		<-stopped
		if err := <-m.done; err != nil && !errors.Is(err, net.ErrClosed) {
			m.log.Warn("server ended with an error", "err", err)
		}
		m.srv = nil
	}
	if !cut {
		return nil
	}
	return []any{"grpc_in_flight", grpcLeft, "socket_in_flight", sockLeft, "mcp_in_flight", mcpLeft}
}

// inFlight returns the calls in flight on each front, as log attributes:
// gRPC calls and streams on the listener and on the state folder's
// socket, and MCP over HTTP requests (open event streams included).
func (m *Main) inFlight() []any {
	var grpcN, sockN, mcpN int64
	if m.srv != nil {
		grpcN = m.srv.InFlight()
	}
	if m.sock != nil {
		sockN = m.sock.InFlight()
	}
	if m.mcp != nil {
		mcpN = m.mcp.inFlight.Load()
	}
	return []any{"grpc_in_flight", grpcN, "socket_in_flight", sockN, "mcp_in_flight", mcpN}
}

// AdminAddr returns the address /metrics is served on, "" when off.
func (m *Main) AdminAddr() string { return m.tel.AdminAddr() }

// closeTelemetry flushes and stops telemetry, within a bounded time. A
// flush that fails (an OTLP collector that is down) is logged: it does not
// make the stop fail.
func (m *Main) closeTelemetry() {
	if m.tel == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.tel.Shutdown(ctx); err != nil {
		m.log.Warn("telemetry not flushed at stop", "err", err)
	}
	m.tel = nil
}

// closeUpstream stops the MCP servers the router started.
func (m *Main) closeUpstream() error {
	if m.upstream == nil {
		return nil
	}
	err := m.upstream.Close()
	m.upstream = nil
	return err
}

func (m *Main) closeEmbedder() error {
	if m.embedder == nil {
		return nil
	}
	<-m.modelLoaded
	err := m.embedder.Close()
	m.embedder = nil
	if m.fast != nil {
		err = errors.Join(err, m.fast.Close())
		m.fast = nil
	}
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
