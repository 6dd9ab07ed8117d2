package daemon_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/slowtest"
	"github.com/mcpsag/router/internal/testlog"
)

// stdioSession is a `router mcp` process on a workspace and a Go SDK client
// connected to it.
type stdioSession struct {
	cs     *mcpsdk.ClientSession
	cmd    *exec.Cmd
	stderr *testlog.Buffer
}

func startSession(t *testing.T, bin, ws, state string) *stdioSession {
	t.Helper()
	s := &stdioSession{stderr: &testlog.Buffer{}}
	cmd := exec.Command(bin, "mcp", "--workspace", ws, "--state-dir", state)
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "takeover", Version: "1"}, nil, &mcpsdk.CommandTransport{Command: cmd})
	if err != nil {
		t.Fatalf("start a session: %v\n%s", err, s.stderr.String())
	}
	s.cs, s.cmd = cs, cmd
	t.Cleanup(func() { cs.Close() })
	return s
}

// callLog records the calls of a round.
type callLog struct {
	mu       sync.Mutex
	longest  time.Duration
	calls    int
	failures []string
}

func (l *callLog) add(d time.Duration, failure string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	l.longest = max(l.longest, d)
	if failure != "" && len(l.failures) < 5 {
		l.failures = append(l.failures, failure)
	}
}

// callUntil calls find_skills on cs from callers goroutines, one call at a
// time each, until stop is closed.
func callUntil(cs *mcpsdk.ClientSession, callers int, stop <-chan struct{}, log *callLog) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				start := time.Now()
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": "fill in a PDF form from a JSON file"}})
				cancel()
				failure := ""
				switch {
				case err != nil:
					failure = err.Error()
				case res.IsError:
					failure = text(res)
				}
				log.add(time.Since(start), failure)
			}
		})
	}
	return &wg
}

// burn keeps n goroutines busy until stop is closed.
func burn(n int, stop <-chan struct{}) {
	var x atomic.Int64
	for range n {
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
					for i := range 100000 {
						x.Add(int64(i))
					}
				}
			}
		}()
	}
}

// TestTakeoverIsSeamless: a host attached to a workspace through `router
// mcp` sees no failed call when the process holding the workspace stops:
// calls in flight are answered by the holder, and calls made meanwhile
// wait for the session to take the workspace over. Each round starts a
// session that attaches to the holder, calls find_skills on it without
// pause (one caller, or eight with two busy CPUs' worth of other work),
// stops the holder, and keeps calling until the session holds the
// workspace; the round's wait is its longest call. A holder killed with
// SIGKILL answers nothing more: the calls it had under way (find_skills
// only reads) are made again. Three rounds of each in the quick run,
// twenty in the full run, which reports the median and the longest.
func TestTakeoverIsSeamless(t *testing.T) {
	rounds := 3
	if slowtest.Full() {
		rounds = 20
	}
	bin := router(t)
	ws := daemontest.CopyExamples(t)
	for _, load := range []struct {
		name           string
		callers, burns int
		kill           bool // the holder is killed (SIGKILL) rather than stopped
	}{{"idle", 1, 0, false}, {"under load", 8, 2, false}, {"holder killed", 1, 0, true}} {
		t.Run(load.name, func(t *testing.T) {
			state := t.TempDir()
			holder := startSession(t, bin, ws, state)
			var waits []time.Duration
			var took []string
			calls := 0
			for round := range rounds {
				next := startSession(t, bin, ws, state)
				if !strings.Contains(next.stderr.String(), "shares its index") {
					t.Fatalf("round %d: the new session did not attach:\n%s", round, next.stderr.String())
				}
				var log callLog
				stop := make(chan struct{})
				burn(load.burns, stop)
				wg := callUntil(next.cs, load.callers, stop, &log)
				time.Sleep(200 * time.Millisecond)
				stopped := make(chan struct{})
				go func() {
					if load.kill {
						_ = holder.cmd.Process.Kill()
					}
					holder.cs.Close()
					close(stopped)
				}()
				daemontest.Eventually(t, time.Minute, "the session to take the workspace over", func() bool {
					return strings.Contains(next.stderr.String(), "now holds it")
				})
				time.Sleep(300 * time.Millisecond)
				close(stop)
				wg.Wait()
				<-stopped
				if len(log.failures) > 0 {
					t.Errorf("round %d: calls failed during the takeover: %q", round, log.failures)
				}
				waits = append(waits, log.longest)
				if _, after, ok := strings.Cut(next.stderr.String(), `now holds it"`); ok {
					if _, v, ok := strings.Cut(after, `"took":"`); ok {
						took = append(took, strings.SplitN(v, `"`, 2)[0])
					}
				}
				calls += log.calls
				holder = next
			}
			slices.Sort(waits)
			t.Logf("%s: %d takeovers, %d calls; longest call per takeover: median %v, max %v (all: %v); takeovers took %v",
				load.name, rounds, calls, waits[len(waits)/2].Round(time.Millisecond), waits[len(waits)-1].Round(time.Millisecond), roundAll(waits),
				strings.Join(took, " "))
			if waits[len(waits)-1] > 10*time.Second {
				t.Errorf("a call waited %v for the takeover", waits[len(waits)-1])
			}
		})
	}
}

func roundAll(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = fmt.Sprint(d.Round(time.Millisecond))
	}
	return strings.Join(parts, " ")
}
