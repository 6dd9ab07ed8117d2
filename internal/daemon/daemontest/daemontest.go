// Package daemontest starts a real router on a loopback port for tests in
// other packages, with its own state directory, and stops it when the test
// ends.
package daemontest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon"
	"github.com/mcpsag/router/models"
)

// Router is a running router and a client connected to it.
type Router struct {
	Main   *daemon.Main
	Conn   *grpc.ClientConn
	Client routerv1.SkillRouterClient
	Addr   string
}

// Options adjust the configuration before start.
type Options struct {
	// StateDir reuses a state directory (for restart tests); default a
	// new temporary one.
	StateDir string
	// Configure edits the resolved configuration.
	Configure func(*config.Config)
	// Logs receives the router's log; default discarded.
	Logs io.Writer
	// DefaultModel serves the bundled default model, the sentence
	// encoder. Without it, a router whose config names no model serves
	// the bundled fast (static) model, given as --model-dir: it loads and
	// embeds in a fraction of the encoder's time, which most tests, about
	// anything but the encoder, spend many times over under the race
	// detector. Like the router's --model-dir, it outranks a model.dir
	// the config file sets later: a test that changes the model through
	// the file asks for DefaultModel.
	DefaultModel bool
}

// fastModelDir is the repository's copy of the bundled fast model.
var fastModelDir = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "models", models.FastName)
}()

// Start runs a router on workspace and returns when it serves.
func Start(t testing.TB, workspace string, opts Options) *Router {
	t.Helper()
	getenv := func(string) string { return "" }
	flags := config.Overrides{Workspace: workspace, Addr: "127.0.0.1:0", StateDir: opts.StateDir}
	if flags.StateDir == "" {
		flags.StateDir = t.TempDir()
	}
	cfg, err := config.Resolve(flags, getenv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.Model.Dir == "" && !opts.DefaultModel {
		flags.ModelDir = fastModelDir
		if cfg, err = config.Resolve(flags, getenv); err != nil {
			t.Fatalf("config: %v", err)
		}
	}
	cfg.Shutdown.Grace = 5 * time.Second
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	logs := opts.Logs
	if logs == nil {
		logs = io.Discard
	}
	m := &daemon.Main{Config: cfg, Overrides: flags, Getenv: getenv, Stderr: logs}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := m.Run(ctx); err != nil {
		t.Fatalf("start router: %v", err)
	}
	conn, err := grpc.NewClient(m.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	r := &Router{Main: m, Conn: conn, Client: routerv1.NewSkillRouterClient(conn), Addr: m.Addr()}
	t.Cleanup(func() { r.Stop(t) })
	return r
}

// Stop closes the client and the router; calling it twice is harmless.
func (r *Router) Stop(t testing.TB) {
	if r.Conn != nil {
		r.Conn.Close()
		r.Conn = nil
	}
	if r.Main != nil {
		if err := r.Main.Close(context.Background()); err != nil {
			t.Errorf("stop router: %v", err)
		}
		r.Main = nil
	}
}

// Examples returns the path of the repository's examples/ workspace.
func Examples(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples")
}

// CopyExamples copies examples/ (without its state) to a temporary folder
// that the test may change.
func CopyExamples(t testing.TB) string {
	t.Helper()
	dst := t.TempDir()
	CopyTree(t, Examples(t), dst)
	return dst
}

// CopyTree copies the folder src to dst, leaving out a workspace's state
// directory (.mcp/state).
func CopyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() && rel == filepath.Join(".mcp", "state") {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// FreeAddr returns a loopback address nothing listens on yet: a process
// started a moment later can bind it (unless another took it meanwhile).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Eventually polls cond until it returns true, and returns how long that
// took. It fails the test with what after limit.
func Eventually(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return EventuallyNil(t, limit, what, func() error {
		if cond() {
			return nil
		}
		return errors.New("condition still false")
	})
}

// EventuallyNil polls cond until it returns nil, and returns how long that
// took. It fails the test with what and cond's last error after limit.
func EventuallyNil(t testing.TB, limit time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > limit {
			t.Fatalf("waiting for %s: %v (after %v)", what, err, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
