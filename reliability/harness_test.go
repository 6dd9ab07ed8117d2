package reliability

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// full reports whether the full run was asked for (MCPSAG_RELIABILITY=full).
var full = os.Getenv("MCPSAG_RELIABILITY") == "full"

// scale picks the bounded or the full figure.
func scale(bounded, fullRun int) int {
	if full {
		return fullRun
	}
	return bounded
}

// repoRoot is the module root, one folder up from this package.
var repoRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}()

// bundledModel is the model folder routers are pointed at (--model-dir), so
// that no test unpacks the bundled copy into its state directory.
var bundledModel = filepath.Join(repoRoot, "models", "mcpsag-static-v1")

var built struct {
	once     sync.Once
	dir, err string
}

// TestMain removes the binaries built for the run.
func TestMain(m *testing.M) {
	m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// builtBinary returns the path of a freshly built cmd/<name> (router or
// routerctl); both are built once per run, into a folder any user may read,
// since some tests run the router under another uid.
func builtBinary(t testing.TB, name string) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcpsag-reliability-bin-")
		if err != nil {
			built.err = err.Error()
			return
		}
		built.dir = dir
		_ = os.Chmod(dir, 0o755)
		for _, cmd := range []string{"router", "routerctl"} {
			c := exec.Command("go", "build", "-o", filepath.Join(dir, cmd), "./cmd/"+cmd)
			c.Dir = repoRoot
			if out, err := c.CombinedOutput(); err != nil {
				built.err = fmt.Sprintf("go build ./cmd/%s: %v\n%s", cmd, err, out)
				return
			}
		}
	})
	if built.err != "" {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, name)
}

// routerOpts says how to start a router.
type routerOpts struct {
	Workspace string
	StateDir  string
	// ModelDir defaults to the repository's bundled model folder; "-"
	// passes none (the router unpacks its embedded copy).
	ModelDir string
	Args     []string
	Env      []string
	// Credential runs the router as another user.
	Credential *syscall.Credential
	// Admin serves /metrics (for go_goroutines).
	Admin bool
	// TLS is the client side of a router with TLS on (its tls section in
	// the workspace's config); nil dials without TLS.
	TLS *tls.Config
}

// routerProc is one router subprocess and a gRPC connection to it.
type routerProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	Addr   string
	Admin  string
	logs   *logLines
	exited chan struct{}
	err    error // cmd.Wait's result, once exited is closed

	listening chan [2]string // the addresses from the "router listening" log line
	tls       *tls.Config    // the client side of a router with TLS on
	listen    sync.Once
	listenErr error
	mu        sync.Mutex // guards conn against Kill from another goroutine

	conn   *grpc.ClientConn
	RPC    pb.SkillRouterClient
	health healthpb.HealthClient
}

// spawn starts a router process and returns at once; Listening waits for it
// to listen.
func spawn(t testing.TB, o routerOpts) (*routerProc, error) {
	t.Helper()
	args := []string{"--workspace", o.Workspace, "--addr", "127.0.0.1:0", "--log-level", "debug"}
	if o.StateDir != "" {
		args = append(args, "--state-dir", o.StateDir)
	}
	switch o.ModelDir {
	case "":
		args = append(args, "--model-dir", bundledModel)
	case "-":
	default:
		args = append(args, "--model-dir", o.ModelDir)
	}
	if o.Admin {
		args = append(args, "--admin-addr", "127.0.0.1:0")
	}
	args = append(args, o.Args...)
	cmd := exec.Command(builtBinary(t, "router"), args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: o.Credential}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start router: %w", err)
	}
	r := &routerProc{t: t, cmd: cmd, logs: &logLines{}, exited: make(chan struct{}), listening: make(chan [2]string, 1), tls: o.TLS}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			r.logs.add(line)
			if strings.Contains(line, `"router listening"`) {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil {
					a, _ := m["addr"].(string)
					ad, _ := m["admin_addr"].(string)
					select {
					case r.listening <- [2]string{a, ad}:
					default:
					}
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() { r.Kill() })
	return r, nil
}

// Listening waits until the router listens (its address is known) and
// connects to it; it returns an error with the log when the router exits
// first.
func (r *routerProc) Listening() error {
	r.listen.Do(func() { r.listenErr = r.listening1() })
	return r.listenErr
}

func (r *routerProc) listening1() error {
	select {
	case a := <-r.listening:
		r.Addr, r.Admin = a[0], a[1]
	case <-r.exited:
		return fmt.Errorf("router exited before listening (%v):\n%s", r.err, r.logs.tail(20))
	case <-time.After(60 * time.Second):
		r.Kill()
		return fmt.Errorf("router did not listen within 60s:\n%s", r.logs.tail(20))
	}
	creds := insecure.NewCredentials()
	if r.tls != nil {
		creds = credentials.NewTLS(r.tls)
	}
	conn, err := grpc.NewClient(r.Addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)))
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.conn = conn
	r.mu.Unlock()
	r.RPC, r.health = pb.NewSkillRouterClient(conn), healthpb.NewHealthClient(conn)
	return nil
}

// launch starts a router and returns once it listens, or with an error (and
// the log) when it exits first.
func launch(t testing.TB, o routerOpts) (*routerProc, error) {
	t.Helper()
	r, err := spawn(t, o)
	if err != nil {
		return nil, err
	}
	return r, r.Listening()
}

// start launches a router and waits until it serves, failing the test
// otherwise.
func start(t testing.TB, o routerOpts) *routerProc {
	t.Helper()
	r, err := launch(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitServing(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	return r
}

// WaitServing polls the health service until it reports SERVING, the router
// exits, or timeout passes.
func (r *routerProc) WaitServing(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return nil
		}
		select {
		case <-r.exited:
			return fmt.Errorf("router exited before serving (%v):\n%s", r.err, r.logs.tail(30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("router not serving after %v (last health error %v):\n%s", timeout, err, r.logs.tail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// WaitCaughtUp is WaitServing, then polls Status until the router has caught
// up with the skill folders: a restart serves the last scan first, then
// scans them (watch.serve_last_scan), and only then is what it serves what
// the disk holds. Status needs no token only where auth is off.
func (r *routerProc) WaitCaughtUp(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	if err := r.WaitServing(timeout); err != nil {
		return err
	}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := r.RPC.Status(ctx, &pb.StatusRequest{})
		cancel()
		if err == nil && !st.GetCatchingUp() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("router still catching up after %v (last Status error %v):\n%s", timeout, err, r.logs.tail(30))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Serving reports whether the health service says SERVING right now.
func (r *routerProc) Serving() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{})
	return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// Kill sends SIGKILL to the router and waits for it to go.
func (r *routerProc) Kill() {
	r.closeConn()
	select {
	case <-r.exited:
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.exited
}

// Stop asks the router to stop (SIGTERM) and waits; it kills it after 30s.
func (r *routerProc) Stop() error {
	select {
	case <-r.exited:
		return r.err
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		r.Kill()
		return errors.New("router ignored SIGTERM for 30s")
	}
	r.closeConn()
	return r.err
}

func (r *routerProc) closeConn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		r.conn.Close()
	}
}

// Alive reports whether the process still runs.
func (r *routerProc) Alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// Crashed reports whether the log shows a Go runtime crash (panic, fatal
// error, fault) rather than an orderly exit.
func (r *routerProc) Crashed() bool {
	return r.logs.contains("panic:") || r.logs.contains("fatal error:") || r.logs.contains("SIGBUS") || r.logs.contains("SIGSEGV")
}

// Pid returns the router's process id.
func (r *routerProc) Pid() int { return r.cmd.Process.Pid }

// logLines collects a router's stderr.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *logLines) contains(s string) bool {
	return l.count(s) > 0
}

// count returns how many lines contain s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// matching returns the lines containing s.
func (l *logLines) matching(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func (l *logLines) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	from := max(0, len(l.lines)-n)
	return strings.Join(l.lines[from:], "\n")
}

// freeLoopback reports whether addr (such as 127.0.0.2) can be bound, to dial
// from a second client address.
func freeLoopback(addr string) bool {
	l, err := net.Listen("tcp", addr+":0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// dialFrom connects to addr from the local address from (a loopback
// address), so the router sees another client.
func dialFrom(t testing.TB, addr, from string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// ctxT returns a context that ends with the test or after d.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
