package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/mcp"
	"github.com/mcpsag/router/internal/remote"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/store"
)

// One process at a time holds a workspace's state directory: a daemon or a
// standalone MCP session. It serves the router's gRPC API on a Unix socket
// in that directory, so that another standalone session on the workspace
// attaches to it and shares its index instead of building one of its own;
// when the holder goes away, an attached session takes the directory over.

// socketName is the holder's socket in the state directory.
const socketName = "router.sock"

// maxSocketPath is the longest socket path every platform takes (sun_path
// is 108 bytes on Linux, 104 on macOS, with its NUL).
const maxSocketPath = 103

// socketPath returns the socket of stateDir, or an error when the path is
// too long for a socket.
func socketPath(stateDir string) (string, error) {
	p := filepath.Join(stateDir, socketName)
	if len(p) > maxSocketPath {
		return "", fmt.Errorf("%s is %d bytes, longer than a socket path may be (%d)", p, len(p), maxSocketPath)
	}
	return p, nil
}

// serveSocket serves the router's gRPC API on the state directory's socket,
// without TLS (the socket is the owner's only) and behind the same tokens;
// it logs why when it cannot. The caller holds the directory, so a socket
// left there is stale.
func (m *Main) serveSocket() {
	path, lis, err := listenSocket(m.Config.StateDir)
	if err != nil {
		m.log.Warn("other MCP sessions on this workspace cannot share this process's index; each will build its own", "err", err)
		return
	}
	m.sock, m.sockPath = m.newServer(), path
	// Each client is named by its process (SO_PEERCRED), which failed
	// authentication is counted against.
	go func() { _ = m.sock.GRPC.Serve(auth.PeerCredentials(lis)) }()
}

// listenSocket listens on the socket of stateDir, which only this user may
// connect to from the moment it exists: the socket is made in a new
// directory only this user may enter, given mode 0600 there, then renamed
// into place (over a stale one). Made in place, it would have the umask's
// permissions until a chmod.
func listenSocket(stateDir string) (string, net.Listener, error) {
	path, err := socketPath(stateDir)
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(stateDir, ".s") // ".s<digits>", mode 0700
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	tmp, err := socketPath(dir)
	if err != nil {
		return "", nil, err
	}
	lis, err := net.Listen("unix", tmp)
	if err != nil {
		return "", nil, err
	}
	// Its name changes: stopSocket removes the socket.
	lis.(*net.UnixListener).SetUnlinkOnClose(false)
	if err = os.Chmod(tmp, 0o600); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		lis.Close()
		return "", nil, err
	}
	return path, lis, nil
}

// stopSocket stops serving the socket and removes it.
func (m *Main) stopSocket() {
	if m.sock != nil {
		m.sock.GRPC.Stop()
		_ = os.Remove(m.sockPath)
		m.sock, m.sockPath = nil, ""
	}
}

// attachTimeout bounds the wait for the holder's socket to answer.
const attachTimeout = 5 * time.Second

// attach connects to the router serving the state directory's socket.
func (m *Main) attach(ctx context.Context) (*grpc.ClientConn, error) {
	path, err := socketPath(m.Config.StateDir)
	if err != nil {
		return nil, err
	}
	conn, err := remote.Dial("unix://"+path, remote.DialOptions{Token: m.getenv("MCPSAG_TOKEN")})
	if err != nil {
		return nil, err
	}
	if err := alive(ctx, conn, attachTimeout); err != nil {
		conn.Close()
		return nil, fmt.Errorf("the process holding the state directory does not answer on %s: %w", path, err)
	}
	return conn, nil
}

// alive checks the health service of a connection (open without a token).
func alive(ctx context.Context, conn *grpc.ClientConn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true))
	return err
}

func (m *Main) getenv(key string) string {
	if m.Getenv != nil {
		return m.Getenv(key)
	}
	return os.Getenv(key)
}

// sharedRouter is the router of a standalone session: its own, or the
// holder's over the socket until it takes the state directory over. Calls
// go to the current one; WaitGeneration also returns when it changes, so
// that the MCP front lists everything again.
type sharedRouter struct {
	cur     atomic.Pointer[routerRef]
	mu      sync.Mutex
	swapped chan struct{} // closed and replaced at each swap
}

type routerRef struct{ r skill.Router }

func newSharedRouter(r skill.Router) *sharedRouter {
	s := &sharedRouter{swapped: make(chan struct{})}
	s.cur.Store(&routerRef{r})
	return s
}

func (s *sharedRouter) get() skill.Router { return s.cur.Load().r }

func (s *sharedRouter) swap(r skill.Router) {
	s.mu.Lock()
	s.cur.Store(&routerRef{r})
	close(s.swapped)
	s.swapped = make(chan struct{})
	s.mu.Unlock()
}

func (s *sharedRouter) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	return s.get().Match(ctx, req)
}

func (s *sharedRouter) List(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
	return s.get().List(ctx, req)
}

func (s *sharedRouter) Get(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	return s.get().Get(ctx, req)
}

func (s *sharedRouter) Load(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	return s.get().Load(ctx, req)
}

func (s *sharedRouter) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	return s.get().Reindex(ctx, req)
}

func (s *sharedRouter) Status(ctx context.Context) (*skill.Status, error) { return s.get().Status(ctx) }

func (s *sharedRouter) AuthorizeExec(ctx context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
	return s.get().AuthorizeExec(ctx, req)
}

func (s *sharedRouter) ReportExecResult(ctx context.Context, req skill.ExecReport) (*skill.ExecReport, error) {
	return s.get().ReportExecResult(ctx, req)
}

func (s *sharedRouter) CallTool(ctx context.Context, call skill.ToolCall) (*skill.ToolResult, error) {
	return s.get().CallTool(ctx, call)
}

// WaitGeneration waits on the current router; a swap ends the wait with a
// generation other than after.
func (s *sharedRouter) WaitGeneration(ctx context.Context, after uint64) (uint64, error) {
	s.mu.Lock()
	r, swapped := s.get(), s.swapped
	s.mu.Unlock()
	w, ok := r.(skill.GenerationWatcher)
	if !ok {
		return after, fmt.Errorf("the router cannot report generations")
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-swapped:
			cancel()
		case <-wctx.Done():
		}
	}()
	gen, err := w.WaitGeneration(wctx, after)
	select {
	case <-swapped:
		if ctx.Err() != nil {
			return after, ctx.Err()
		}
		if st, err := s.get().Status(ctx); err == nil && st.Generation != after {
			return st.Generation, nil
		}
		return after + 1, nil
	default:
		return gen, err
	}
}

var (
	_ skill.Router            = (*sharedRouter)(nil)
	_ skill.GenerationWatcher = (*sharedRouter)(nil)
)

// holdWorkspace opens the state directory, serves the socket and builds the
// first index: this process is the holder. It fails with store.ErrLocked
// when another process holds the directory.
func (m *Main) holdWorkspace(ctx context.Context, lockWait time.Duration) error {
	return m.startCore(ctx, m.Config.StateDir, lockWait, true)
}

// startCore opens the store in stateDir and builds the first index; with
// share it serves the state directory's socket first, so that sessions
// that start meanwhile attach at once and wait for the first index with
// this one.
func (m *Main) startCore(ctx context.Context, stateDir string, lockWait time.Duration, share bool) error {
	holder := fmt.Sprintf("router mcp (stdio) pid %d", os.Getpid())
	if err := m.openCore(ctx, holder, stateDir, lockWait); err != nil {
		_ = m.closeCore()
		return err
	}
	if share {
		m.serveSocket()
	}
	if err := m.router.Start(ctx); err != nil {
		_ = m.closeSession()
		return fmt.Errorf("first index: %w", err)
	}
	m.serving.Store(true)
	m.watchConfig(m.router)
	return nil
}

// takeOver follows the holder a session is attached to and, once it stops
// answering, takes the state directory over and swaps shared to this
// process's router. A holder that another session took over answers on
// the same socket: the connection follows it. It returns when ctx ends or
// after the takeover.
func (m *Main) takeOver(ctx context.Context, conn *grpc.ClientConn, shared *sharedRouter, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if alive(ctx, conn, every) == nil {
			continue
		}
		err := m.holdWorkspace(ctx, every)
		switch {
		case err == nil:
			shared.swap(m.served)
			m.log.Info("the process that held the workspace went away; this session now holds it", "state_dir", m.Config.StateDir)
			return
		case errors.Is(err, store.ErrLocked), ctx.Err() != nil:
			// Another session took it over, or is stopping: go on following.
		default:
			m.log.Warn("cannot take the workspace over; retrying", "err", err)
		}
	}
}

// stdioSession is how a standalone session serves: over its own index, over
// the holder's, or over a private one when the holder cannot be reached.
type stdioSession struct {
	router   skill.Router
	features mcp.Features
	// close ends what the session opened.
	close func() error
}

// openSession makes a standalone session's router: the state directory's
// when this process can hold it; else the holder's, shared over its socket
// and taken over when the holder goes away; else, when the holder does not
// answer there (a holder that is stopping gets 2 s to let go), a private
// index in a temporary directory removed at close.
func (m *Main) openSession(ctx context.Context, agent string) (*stdioSession, error) {
	err := m.holdWorkspace(ctx, 100*time.Millisecond)
	if err == nil {
		return &stdioSession{router: m.served, close: m.closeSession}, nil
	}
	if !errors.Is(err, store.ErrLocked) {
		return nil, err
	}
	conn, aerr := m.attach(ctx)
	if aerr != nil {
		if err = m.holdWorkspace(ctx, 2*time.Second); err == nil {
			return &stdioSession{router: m.served, close: m.closeSession}, nil
		}
		if !errors.Is(err, store.ErrLocked) {
			return nil, err
		}
	}
	if aerr == nil {
		shared := newSharedRouter(remote.New(routerv1.NewSkillRouterClient(conn), remote.Options{PollInterval: time.Second}))
		feat, err := mcp.ProbeFeatures(ctx, shared, agent)
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("attach to the process holding %s: %w (set MCPSAG_TOKEN to a token of its tokens file)", m.Config.StateDir, err)
		}
		m.log.Info("another process holds the workspace's state directory; this session shares its index",
			"state_dir", m.Config.StateDir, "features", feat.String())
		tctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { m.takeOver(tctx, conn, shared, time.Second) })
		return &stdioSession{router: shared, features: feat, close: func() error {
			cancel()
			wg.Wait()
			return errors.Join(conn.Close(), m.closeSession())
		}}, nil
	}
	m.log.Warn("the state directory is held by a process that does not share its index; indexing into a private temporary directory, removed at exit",
		"state_dir", m.Config.StateDir, "err", cmp.Or(aerr, err))
	store.RemoveAbandoned(os.TempDir(), statedir.PrivateStatePrefix, m.log)
	tmp, err := os.MkdirTemp("", statedir.PrivateStatePrefix)
	if err != nil {
		return nil, err
	}
	if err := m.startCore(ctx, tmp, 2*time.Second, false); err != nil {
		_ = os.RemoveAll(tmp)
		return nil, err
	}
	return &stdioSession{router: m.served, close: func() error {
		return errors.Join(m.closeSession(), os.RemoveAll(tmp))
	}}, nil
}

// closeSession stops serving the socket, then the core.
func (m *Main) closeSession() error {
	m.stopSocket()
	return m.closeCore()
}
