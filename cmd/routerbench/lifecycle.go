package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/remote"
)

// lifecycleOptions are the flags of lifecycle.
type lifecycleOptions struct {
	router    string
	workspace string
	stateDir  string
	modelDir  string
	edits     int
	json      bool
	timeout   time.Duration
}

// lifecycleReport is what lifecycle prints; its JSON keys are stable.
type lifecycleReport struct {
	Skills int `json:"skills"`
	// Cold is a start with an empty state folder; Warm a restart on the
	// state the cold start left.
	Cold startReport `json:"cold"`
	Warm startReport `json:"warm"`
	// EditToServed are the delays from writing an edited SKILL.md to the
	// first Match that answers from it, one per edit, in milliseconds.
	EditToServed   []float64 `json:"edit_to_served_ms"`
	EditMedian     float64   `json:"edit_to_served_median_ms"`
	GenerationID   string    `json:"generation_id"`
	GenerationSame bool      `json:"warm_generation_same_as_cold"`
	Load           float64   `json:"load_average"`
}

// startReport describes one start of the router.
type startReport struct {
	// ToServing is from starting the process to the first Status that
	// says it serves, in seconds.
	ToServing float64 `json:"to_serving_s"`
	// Build is the router's own duration of its first build.
	Build    float64 `json:"build_s"`
	Parsed   int32   `json:"parsed"`
	Embedded int32   `json:"embedded"`
	// RSS is the resident memory once serving, in bytes.
	RSS int64 `json:"rss_bytes"`
}

func newLifecycleCmd() *cobra.Command {
	var o lifecycleOptions
	cmd := &cobra.Command{
		Use:   "lifecycle --router BIN --workspace DIR --state-dir DIR",
		Short: "time a router's cold index, warm restart and edit-to-served delay",
		Long: `lifecycle starts the router binary on the workspace with an empty state folder
and times it to SERVING (cold index), stops it, starts it again on the same
state (warm restart: it should parse and embed nothing), then edits one
SKILL.md --edits times (a new word in its description) and times each edit
until Match answers from it (the router's file watcher is on). It reports
the resident memory after each start. The state folder is emptied first.`,
		Example: `  routerbench lifecycle --router ./router --workspace /tmp/ws100k --state-dir /tmp/state100k`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.router == "" || o.workspace == "" || o.stateDir == "" {
				return usagef("lifecycle needs --router, --workspace and --state-dir")
			}
			if o.edits < 0 || o.timeout <= 0 {
				return usagef("--edits %d, --timeout %s: want --edits 0 or more and a positive --timeout", o.edits, o.timeout)
			}
			rep, err := runLifecycle(cmd.Context(), o, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			return output(cmd.OutOrStdout(), o.json, rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.router, "router", "router", "router `binary`")
	f.StringVar(&o.workspace, "workspace", "", "workspace `dir` (routerbench gen writes one)")
	f.StringVar(&o.stateDir, "state-dir", "", "state `dir` for the router; emptied first")
	f.StringVar(&o.modelDir, "model-dir", "", "embedding model `dir` (default: the router's)")
	f.IntVar(&o.edits, "edits", 5, "number of edits to time")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	f.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up on a start after this long")
	return cmd
}

// print writes the report as text.
func (rep *lifecycleReport) print(w io.Writer) {
	fmt.Fprintf(w, "skills          %d\n", rep.Skills)
	for _, s := range []struct {
		name string
		r    startReport
	}{{"cold index", rep.Cold}, {"warm restart", rep.Warm}} {
		fmt.Fprintf(w, "%-15s %.2fs to SERVING (build %.2fs), parsed %d, embedded %d, RSS %.1f MiB\n",
			s.name, s.r.ToServing, s.r.Build, s.r.Parsed, s.r.Embedded, float64(s.r.RSS)/(1<<20))
	}
	fmt.Fprintf(w, "edit to served  median %.0f ms (%v)\n", rep.EditMedian, rep.EditToServed)
	fmt.Fprintf(w, "generation      %s (warm restart same as cold: %v)\n", rep.GenerationID, rep.GenerationSame)
	fmt.Fprintf(w, "load avg        %.2f\n", rep.Load)
}

// runLifecycle runs the cold start, the warm restart and the edits.
func runLifecycle(ctx context.Context, o lifecycleOptions, logw io.Writer) (*lifecycleReport, error) {
	if err := os.RemoveAll(o.stateDir); err != nil {
		return nil, err
	}
	rep := &lifecycleReport{}
	var coldID string
	for i, r := range []*startReport{&rep.Cold, &rep.Warm} {
		p, err := startRouter(ctx, o, logw)
		if err != nil {
			return nil, err
		}
		st, err := p.waitServing(ctx, o.timeout)
		if err != nil {
			p.stop()
			return nil, err
		}
		*r = startReport{ToServing: p.serving.Sub(p.started).Seconds(), RSS: rssOf(p.cmd.Process.Pid)}
		if ls := st.LastReindex; ls != nil {
			r.Build, r.Parsed, r.Embedded = ls.Duration.AsDuration().Seconds(), ls.Parsed, ls.Embedded
		}
		rep.Skills = int(st.Skills)
		if i == 0 {
			coldID = st.GenerationId
			p.stop()
			continue
		}
		rep.GenerationID = st.GenerationId
		rep.GenerationSame = st.GenerationId == coldID
		p.settle(ctx)
		rep.EditToServed, err = timeEdits(ctx, p, o)
		p.stop()
		if err != nil {
			return nil, err
		}
	}
	if len(rep.EditToServed) > 0 {
		s := slices.Clone(rep.EditToServed)
		slices.Sort(s)
		rep.EditMedian = s[len(s)/2]
	}
	rep.Load = loadAverage()
	return rep, nil
}

// routerProcess is a started router.
type routerProcess struct {
	cmd              *exec.Cmd
	conn             *grpc.ClientConn
	client           routerv1.SkillRouterClient
	started, serving time.Time
	stderr           *syncBuffer
	// exited is closed when the process has ended, with its error in
	// waitErr.
	exited  chan struct{}
	waitErr error
}

// syncBuffer is a bytes.Buffer that the process's output and the reader
// of its messages may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startRouter starts the router binary on a free loopback port.
func startRouter(ctx context.Context, o lifecycleOptions, logw io.Writer) (*routerProcess, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := []string{"--workspace", o.workspace, "--state-dir", o.stateDir, "--addr", addr, "--log-level", "warn"}
	if o.modelDir != "" {
		args = append(args, "--model-dir", o.modelDir)
	}
	p := &routerProcess{cmd: exec.CommandContext(ctx, o.router, args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Stderr = io.MultiWriter(p.stderr, logw)
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.router, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	// Reconnect every few milliseconds while the router starts: with
	// gRPC's default backoff (1s, growing) the time to SERVING would be
	// measured in whole seconds.
	fast := grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 5 * time.Millisecond, Multiplier: 1, MaxDelay: 5 * time.Millisecond},
		MinConnectTimeout: time.Second,
	})
	if p.conn, err = remote.Dial(addr, remote.DialOptions{Extra: []grpc.DialOption{fast}}); err != nil {
		p.stop()
		return nil, err
	}
	p.client = routerv1.NewSkillRouterClient(p.conn)
	return p, nil
}

// waitServing polls Status until the router serves.
func (p *routerProcess) waitServing(ctx context.Context, timeout time.Duration) (*routerv1.StatusResponse, error) {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := p.client.Status(cctx, &routerv1.StatusRequest{})
		cancel()
		if err == nil && st.Serving {
			p.serving = time.Now()
			return st, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("router not serving after %s: %v\n%s", timeout, err, p.stderr.String())
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("router exited before serving (%v): %s", p.waitErr, p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// settle waits until the router has built nothing for two seconds (after a
// start, the file watcher's first sync asks for one more scan).
func (p *routerProcess) settle(ctx context.Context) {
	quiet := time.Now()
	for time.Since(quiet) < 2*time.Second && ctx.Err() == nil {
		st, err := p.client.Status(ctx, &routerv1.StatusRequest{})
		if err != nil || st.GetReindexProgress().GetRunning() {
			quiet = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the router with SIGTERM and waits for it.
func (p *routerProcess) stop() {
	if p.conn != nil {
		p.conn.Close()
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// timeEdits edits one skill o.edits times, each time with a new made-up
// word in its description, and returns how long each took to be served:
// until Match, asked for that word, ranks the skill first.
func timeEdits(ctx context.Context, p *routerProcess, o lifecycleOptions) ([]float64, error) {
	path, err := middleSkill(filepath.Join(o.workspace, "skills"))
	if err != nil {
		return nil, err
	}
	name := filepath.Base(filepath.Dir(path))
	orig, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	defer os.WriteFile(path, orig, 0o644)
	var out []float64
	for i := range o.edits {
		word := fmt.Sprintf("zqxbench%dedit%d", time.Now().UnixNano()%1e6, i)
		edited, ok := withDescriptionWord(string(orig), word)
		if !ok {
			return nil, fmt.Errorf("%s has no description line to edit", path)
		}
		start := time.Now()
		if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
			return nil, err
		}
		for {
			if time.Since(start) > 2*time.Minute {
				return nil, fmt.Errorf("edit %d of %s not served after 2 minutes", i, path)
			}
			res, err := p.client.Match(ctx, &routerv1.MatchRequest{Task: word, Options: &routerv1.MatchOptions{Mode: routerv1.MatchMode_MATCH_MODE_BM25}})
			if err == nil && len(res.Candidates) > 0 && res.Candidates[0].Skill.GetName() == name {
				out = append(out, float64(time.Since(start).Microseconds())/1000)
				break
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // let the watcher settle between edits
	}
	return out, nil
}

// middleSkill returns the SKILL.md of the middle skill folder under root
// (skills directly under it, or under its part folders).
func middleSkill(root string) (string, error) {
	dirs, err := os.ReadDir(root)
	if err != nil || len(dirs) == 0 {
		return "", fmt.Errorf("no skills under %s: %v", root, err)
	}
	d := filepath.Join(root, dirs[len(dirs)/2].Name())
	if _, err := os.Stat(filepath.Join(d, "SKILL.md")); err == nil {
		return filepath.Join(d, "SKILL.md"), nil
	}
	return middleSkill(d)
}

// withDescriptionWord adds word to the description line of a SKILL.md.
func withDescriptionWord(doc, word string) (string, bool) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if v, ok := strings.CutPrefix(l, "description: "); ok {
			v = strings.TrimSpace(v)
			if strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) && len(v) >= 2 {
				lines[i] = "description: " + v[:len(v)-1] + " " + word + `"`
			} else if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
				lines[i] = "description: " + v[:len(v)-1] + " " + word + "'"
			} else {
				lines[i] = "description: " + v + " " + word
			}
			return strings.Join(lines, "\n"), true
		}
	}
	return "", false
}
