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
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

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

// maxSocketPath is the longest socket path every platform takes (sun_path
// is 108 bytes on Linux, 104 on macOS, with its NUL).
const maxSocketPath = 103

// socketPath returns the socket of stateDir, or an error when the path is
// too long for a socket.
func socketPath(stateDir string) (string, error) {
	p := filepath.Join(stateDir, statedir.SocketFile)
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
	m.sock.Health.SetServingStatus(holderService, healthpb.HealthCheckResponse_SERVING)
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

// socketGrace bounds how long the calls sessions made over the socket have
// to finish when this process lets the workspace go.
const socketGrace = 5 * time.Second

// stopSocket stops serving the socket and removes it: its health says the
// holder is stopping (attached sessions start taking over), the calls in
// flight finish (within socketGrace), new ones are refused.
func (m *Main) stopSocket() {
	if m.sock == nil {
		return
	}
	m.sock.Health.Shutdown()
	stopped := make(chan struct{})
	go func() { m.sock.GRPC.GracefulStop(); close(stopped) }()
	t := time.NewTimer(socketGrace)
	select {
	case <-stopped:
	case <-t.C:
		m.sock.GRPC.Stop()
		<-stopped
	}
	t.Stop()
	_ = os.Remove(m.sockPath)
	m.sock, m.sockPath = nil, ""
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
//
// A call that finds the holder gone does not fail: it tells the takeover
// (lost) and waits until the session holds the workspace itself, or the
// holder (or another session that took over) answers again, at most
// takeoverWait, then runs again. A call that may run twice (it reads, or
// reindexes) runs again however it failed; one that acts (CallTool,
// AuthorizeExec, ReportExecResult) only when it never reached the holder,
// so that it never runs twice. The Router's methods are skill.Relay's,
// through via.
type sharedRouter struct {
	skill.Relay
	cur     atomic.Pointer[routerRef]
	mu      sync.Mutex
	swapped chan struct{} // closed and replaced at each swap
	// lost receives a value, without blocking, when a call finds the
	// holder out of reach.
	lost chan struct{}
	// taking is set while this process takes the workspace over: it may
	// already serve the socket its remote router reaches (its own router,
	// not ready until the takeover ends), and a call that finds a router
	// not ready waits for the swap.
	taking atomic.Bool
}

type routerRef struct {
	r skill.Router
	// remote is set while r is the holder's, reached over the socket.
	remote bool
}

// takeoverWait bounds how long a call waits for the holder to come back or
// for the takeover; retryEvery is how often it tries meanwhile.
const (
	takeoverWait = 30 * time.Second
	retryEvery   = 20 * time.Millisecond
)

func newSharedRouter(r skill.Router) *sharedRouter {
	s := &sharedRouter{swapped: make(chan struct{}), lost: make(chan struct{}, 1)}
	s.Relay = skill.Relay{Via: s.via}
	s.cur.Store(&routerRef{r: r, remote: true})
	return s
}

func (s *sharedRouter) get() skill.Router { return s.cur.Load().r }

func (s *sharedRouter) swap(r skill.Router) {
	s.mu.Lock()
	s.cur.Store(&routerRef{r: r})
	close(s.swapped)
	s.swapped = make(chan struct{})
	s.mu.Unlock()
}

// current returns the router calls go to and a channel closed at the next
// swap.
func (s *sharedRouter) current() (*routerRef, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.Load(), s.swapped
}

// retries reports whether a call that failed with err waits for the
// takeover and runs again: the holder could not be reached, and either the
// call may run twice or it was never sent.
func retries(err error, twice bool) bool {
	var de *skill.Error
	if !errors.As(err, &de) {
		return false
	}
	return de.Reason == skill.ReasonRouterUnreachable || twice && de.Reason == skill.ReasonRouterLost
}

// notReadyDuringTakeover reports whether err is a router's "not ready"
// answer during a takeover (taking, or a swap since the call began: the
// socket may have led to this process's own router before it was ready).
// Such a router acted on nothing, so any call may wait and run again; a
// call cut off mid-way only when it may run twice.
func notReadyDuringTakeover(err error, twice, taking bool, swapped <-chan struct{}) bool {
	var de *skill.Error
	if !errors.As(err, &de) || de.Code != skill.CodeUnavailable || de.Reason == skill.ReasonRouterLost && !twice {
		return false
	}
	select {
	case <-swapped:
		return true
	default:
		return taking
	}
}

// via runs call on the current router, waiting out the holder's departure
// as sharedRouter says; twice says the call may run twice without harm.
func (s *sharedRouter) via(ctx context.Context, twice bool, call func(skill.Router) error) error {
	var deadline time.Time
	for {
		ref, swapped := s.current()
		err := call(ref.r)
		if err == nil || !ref.remote || ctx.Err() != nil {
			return err
		}
		if !retries(err, twice) && !notReadyDuringTakeover(err, twice, s.taking.Load(), swapped) {
			return err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(takeoverWait)
		} else if now.After(deadline) {
			return err
		}
		select {
		case s.lost <- struct{}{}:
		default:
		}
		t := time.NewTimer(retryEvery)
		select {
		case <-swapped:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
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
// process's router. It looks when the holder's health says it is stopping
// (or its stream breaks), when a call finds the holder out of reach
// (shared.lost), and every interval. A holder that another session took
// over answers on the same socket: the connection follows it. It returns
// when ctx ends or after the takeover.
func (m *Main) takeOver(ctx context.Context, conn *grpc.ClientConn, shared *sharedRouter, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	stopping := make(chan struct{}, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go watchHolder(wctx, conn, stopping, every)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-shared.lost:
		case <-stopping:
		}
		if reachable(ctx, conn, every) == nil {
			continue
		}
		start := time.Now()
		shared.taking.Store(true)
		err := m.holdWorkspace(ctx, every)
		switch {
		case err == nil:
			shared.swap(m.served)
			shared.taking.Store(false)
			m.log.Info("the process that held the workspace went away; this session now holds it", "state_dir", m.Config.StateDir,
				"took", time.Since(start).Round(time.Millisecond).String())
			return
		case errors.Is(err, store.ErrLocked), ctx.Err() != nil:
			// Another session took it over, the holder is still letting
			// go, or this one is stopping: go on following.
			shared.taking.Store(false)
		default:
			shared.taking.Store(false)
			m.log.Warn("cannot take the workspace over; retrying", "err", err)
		}
	}
}

// watchHolder follows the holder's health over conn (holderService) and
// sends on stopping (without blocking) when the holder says it is stopping
// or the stream ends; it starts again after every interval until ctx ends.
func watchHolder(ctx context.Context, conn *grpc.ClientConn, stopping chan<- struct{}, every time.Duration) {
	tell := func() {
		select {
		case stopping <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(ctx)
		stream, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{Service: holderService}, grpc.WaitForReady(true))
		for err == nil {
			var res *healthpb.HealthCheckResponse
			if res, err = stream.Recv(); err == nil && res.GetStatus() == healthpb.HealthCheckResponse_NOT_SERVING {
				break // stopping: ending this stream lets its graceful stop end
			}
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		tell()
		if !sleep(ctx, every) {
			return
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
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

// reachable checks the holder over conn without waiting for a connection:
// a holder that stopped, or says it is stopping, is not reachable. A holder
// that does not report holderService (an older router) is, while it
// answers.
func reachable(ctx context.Context, conn *grpc.ClientConn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: holderService})
	switch {
	case status.Code(err) == codes.NotFound:
		return nil
	case err == nil && res.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return errHolderStopping
	}
	return err
}

// holderService is the health service a holder reports on its socket:
// SERVING from the moment it serves the socket, NOT_SERVING once it stops.
const holderService = "mcpsag.workspace.holder"

var errHolderStopping = errors.New("the process holding the workspace is stopping")

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
