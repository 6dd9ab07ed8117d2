package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/remote"
)

// runOptions are the flags of run.
type runOptions struct {
	addr, token   string
	transport     string
	method        string
	mcpURL        string
	mcpCommand    string
	clients       int
	duration      time.Duration
	count         int
	warmup        time.Duration
	queries       string
	topK          int
	pid           int
	metricsURL    string
	json          bool
	callTimeout   time.Duration
	loadLevel     int
	maxQueryBytes int
	wait          time.Duration
}

func newRunCmd() *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --queries FILE [--addr ADDR | --mcp-url URL | --mcp-command CMD]",
		Short: "drive a router with concurrent clients and report throughput and latency",
		Long: `run sends calls from --clients concurrent clients, each on its own connection,
for --duration or until --count calls are done, after --warmup. Tasks come
from --queries (JSON lines with a "query", as the dev sets and gen write), in
turn. It prints throughput, latency percentiles (p50, p90, p99, max), errors
by code, the router's resident memory before and after and its CPU per
call when it knows where to read them (--pid, --metrics-url, or the child
of --mcp-command), and its own CPU per call.

Methods: match, load (level 2, skill names from a first list), list (over
gRPC); find_skills, load_skill, list_skills (over MCP).`,
		Example: `  routerbench run --addr 127.0.0.1:7443 --queries /tmp/ws10k/queries.jsonl --clients 16 --duration 30s
  routerbench run --transport mcp-http --mcp-url http://127.0.0.1:7444/mcp --method find_skills --queries q.jsonl
  routerbench run --transport mcp-stdio --mcp-command "router mcp --workspace /tmp/ws10k" --queries q.jsonl --clients 1 --count 2000`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.token == "" {
				o.token = os.Getenv("MCPSAG_TOKEN")
			}
			rep, err := runLoad(cmd.Context(), o)
			if err != nil {
				return err
			}
			return output(cmd.OutOrStdout(), o.json, rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:7443", "router gRPC `address`")
	f.StringVar(&o.token, "token", "", "bearer `token` (default $MCPSAG_TOKEN)")
	f.StringVar(&o.transport, "transport", "grpc", "grpc, mcp-http or mcp-stdio")
	f.StringVar(&o.method, "method", "", "match, load or list (grpc); find_skills, load_skill or list_skills (mcp); default match / find_skills")
	f.StringVar(&o.mcpURL, "mcp-url", "", "MCP Streamable HTTP endpoint `url` (mcp-http)")
	f.StringVar(&o.mcpCommand, "mcp-command", "", "`command` line that serves MCP on stdio, started once per client (mcp-stdio)")
	f.IntVar(&o.clients, "clients", 16, "concurrent `clients`")
	f.DurationVar(&o.duration, "duration", 30*time.Second, "how long to measure (ignored with --count)")
	f.IntVar(&o.count, "count", 0, "stop after this many measured `calls` in all")
	f.DurationVar(&o.warmup, "warmup", 2*time.Second, "calls made before measuring, not counted")
	f.StringVar(&o.queries, "queries", "", "JSON lines `file` of tasks")
	f.IntVar(&o.topK, "top-k", 0, "top_k of each match (0: the router's default)")
	f.IntVar(&o.pid, "pid", 0, "the router's process `id`, to read its resident memory")
	f.StringVar(&o.metricsURL, "metrics-url", "", "the router's /metrics `url`, to read process_resident_memory_bytes")
	f.BoolVar(&o.json, "json", false, "print one JSON document")
	f.DurationVar(&o.callTimeout, "call-timeout", 10*time.Second, "deadline of each call")
	f.IntVar(&o.loadLevel, "load-level", 2, "level of load calls (1 or 2)")
	f.IntVar(&o.maxQueryBytes, "max-query-bytes", 16<<10, "cut longer tasks to this many bytes")
	f.DurationVar(&o.wait, "wait", 10*time.Minute, "how long to wait for the router to serve")
	return cmd
}

// caller makes one call of the benchmark with a task; it returns the
// error's code name ("" when it succeeded).
type caller func(ctx context.Context, task string) error

// methods are the methods of each transport, the default first.
var methods = map[string][]string{
	"grpc":      {"match", "load", "list"},
	"mcp-http":  {"find_skills", "load_skill", "list_skills"},
	"mcp-stdio": {"find_skills", "load_skill", "list_skills"},
}

// check validates the options and fills in the default method, before
// anything is dialled.
func (o *runOptions) check() error {
	if o.queries == "" {
		return usagef("run needs --queries FILE")
	}
	ms, ok := methods[o.transport]
	switch {
	case o.clients <= 0:
		return usagef("--clients must be positive")
	case o.count < 0:
		return usagef("--count %d: want 0 (run for --duration) or more", o.count)
	case o.count == 0 && o.duration <= 0:
		return usagef("--duration %s: want a positive duration, or --count", o.duration)
	case o.warmup < 0 || o.callTimeout <= 0 || o.wait <= 0:
		return usagef("--warmup, --call-timeout and --wait: want durations over 0 (--warmup may be 0)")
	case o.maxQueryBytes <= 0:
		return usagef("--max-query-bytes must be positive")
	case !ok:
		return usagef("--transport %q: want grpc, mcp-http or mcp-stdio", o.transport)
	case o.transport == "mcp-http" && o.mcpURL == "":
		return usagef("mcp-http needs --mcp-url")
	case o.transport == "mcp-stdio" && len(strings.Fields(o.mcpCommand)) == 0:
		return usagef("mcp-stdio needs --mcp-command")
	}
	if o.method == "" {
		o.method = ms[0]
	}
	if !slices.Contains(ms, o.method) {
		over := "gRPC"
		if o.transport != "grpc" {
			over = "MCP"
		}
		return usagef("--method %q over %s: want %s, %s or %s", o.method, over, ms[0], ms[1], ms[2])
	}
	if o.method == "load" && o.loadLevel != 1 && o.loadLevel != 2 {
		return usagef("--load-level %d: want 1 or 2", o.loadLevel)
	}
	return nil
}

// runLoad runs the load and returns its report.
func runLoad(ctx context.Context, o runOptions) (*report, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	qs, err := eval.LoadQueries(o.queries)
	if err != nil {
		return nil, err
	}
	tasks := make([]string, len(qs))
	for i, q := range qs {
		tasks[i] = q.Query
		if len(tasks[i]) > o.maxQueryBytes {
			tasks[i] = strings.ToValidUTF8(tasks[i][:o.maxQueryBytes], "")
		}
	}
	callers, pids, closeAll, err := dialClients(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	if o.pid != 0 {
		pids = []int{o.pid}
	}
	router := routerGauges{pids: pids, metricsURL: o.metricsURL}
	rep := &report{Transport: o.transport, Method: o.method, Clients: o.clients, Queries: len(tasks), Errors: map[string]int{}}
	rep.RSSBefore = router.rss(ctx)

	l := &load{o: o, tasks: tasks, stop: make(chan struct{}), errors: rep.Errors}
	var wg sync.WaitGroup
	for _, call := range callers {
		wg.Go(func() { l.drive(ctx, call) })
	}
	if o.warmup > 0 {
		sleepCtx(ctx, o.warmup)
	}
	routerCPU, benchCPU := router.cpu(ctx), selfCPU()
	elapsed := l.measure(ctx)
	if c := router.cpu(ctx); routerCPU > 0 && c > routerCPU {
		rep.RouterCPU = c - routerCPU
	}
	benchCPU = selfCPU() - benchCPU
	close(l.stop)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.RSSAfter = router.rss(ctx)
	rep.setLatencies(l.lats, elapsed)
	calls := rep.Calls
	for _, n := range rep.Errors {
		calls += n
	}
	if calls > 0 {
		rep.RouterCPUPerCall = rep.RouterCPU * 1000 / float64(calls)
		rep.BenchCPUPerCall = benchCPU * 1000 / float64(calls)
	}
	return rep, nil
}

// load is one run of the load: the tasks the callers take in turn, and
// what they measured once measuring began.
type load struct {
	o         runOptions
	tasks     []string
	next      atomic.Int64 // the next task
	measured  atomic.Int64 // the calls measured
	measuring atomic.Bool
	stop      chan struct{}

	mu     sync.Mutex
	lats   []time.Duration
	errors map[string]int // by code
}

// drive calls call with one task after another until stop is closed, and
// then adds what it measured to l.
func (l *load) drive(ctx context.Context, call caller) {
	local := make([]time.Duration, 0, 4096)
	errs := map[string]int{}
	for {
		select {
		case <-l.stop:
			l.mu.Lock()
			l.lats = append(l.lats, local...)
			for k, v := range errs {
				l.errors[k] += v
			}
			l.mu.Unlock()
			return
		default:
		}
		if ctx.Err() != nil {
			<-l.stop
			continue
		}
		task := l.tasks[int(l.next.Add(1)-1)%len(l.tasks)]
		cctx, cancel := context.WithTimeout(ctx, l.o.callTimeout)
		t0 := time.Now()
		err := call(cctx, task)
		d := time.Since(t0)
		cancel()
		if !l.measuring.Load() {
			continue
		}
		if l.o.count > 0 && l.measured.Add(1) > int64(l.o.count) {
			continue
		}
		if err != nil {
			errs[codeOf(err)]++
			continue
		}
		local = append(local, d)
	}
}

// measure starts measuring and returns once o.count calls are measured
// or, without a count, o.duration has passed (or ctx ended); it returns
// how long it measured.
func (l *load) measure(ctx context.Context) time.Duration {
	l.measuring.Store(true)
	start := time.Now()
	if l.o.count > 0 {
		for l.measured.Load() < int64(l.o.count) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
	} else {
		sleepCtx(ctx, l.o.duration)
	}
	return time.Since(start)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// codeOf names an error by its gRPC code, or "mcp_tool_error",
// "deadline" or "error".
func codeOf(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Code().String()
	}
	var te toolError
	switch {
	case errors.As(err, &te):
		return "mcp_tool_error"
	case errors.Is(err, context.DeadlineExceeded):
		return "DeadlineExceeded"
	}
	return "error"
}

// toolError is an MCP tool result marked as an error.
type toolError struct{ msg string }

func (e toolError) Error() string { return e.msg }

// dialClients opens one connection (or one MCP session, or one stdio child)
// per client and returns a caller for each, the pids of started children,
// and a function that closes everything.
func dialClients(ctx context.Context, o runOptions) ([]caller, []int, func(), error) {
	d := &dialed{}
	var callers []caller
	for range o.clients {
		c, err := d.dial(ctx, o)
		if err != nil {
			d.closeAll()
			return nil, nil, nil, err
		}
		callers = append(callers, c)
	}
	return callers, d.pids, d.closeAll, nil
}

// dialed is what dialClients opened: how to close it, and the pids of the
// children it started.
type dialed struct {
	closers []func()
	pids    []int
}

func (d *dialed) closeAll() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// dial opens one client over o.transport.
func (d *dialed) dial(ctx context.Context, o runOptions) (caller, error) {
	switch o.transport {
	case "grpc":
		conn, err := remote.Dial(o.addr, remote.DialOptions{Token: o.token})
		if err != nil {
			return nil, err
		}
		d.closers = append(d.closers, func() { conn.Close() })
		return grpcCaller(ctx, routerv1.NewSkillRouterClient(conn), o)
	case "mcp-http", "mcp-stdio":
		tr, child, err := mcpTransport(o)
		if err != nil {
			return nil, err
		}
		cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "routerbench", Version: "1"}, nil).Connect(ctx, tr, nil)
		if child != nil && child.Process != nil {
			d.pids = append(d.pids, child.Process.Pid)
		}
		if err != nil {
			return nil, err
		}
		d.closers = append(d.closers, func() { cs.Close() })
		return mcpCaller(ctx, cs, o)
	default:
		return nil, usagef("--transport %q: want grpc, mcp-http or mcp-stdio", o.transport)
	}
}

// mcpTransport returns the MCP transport of o, and the child it will start
// over stdio.
func mcpTransport(o runOptions) (mcpsdk.Transport, *exec.Cmd, error) {
	if o.transport == "mcp-http" {
		if o.mcpURL == "" {
			return nil, nil, usagef("mcp-http needs --mcp-url")
		}
		return &mcpsdk.StreamableClientTransport{Endpoint: o.mcpURL}, nil, nil
	}
	args := strings.Fields(o.mcpCommand)
	if len(args) == 0 {
		return nil, nil, usagef("mcp-stdio needs --mcp-command")
	}
	child := exec.Command(args[0], args[1:]...)
	child.Stderr = os.Stderr
	return &mcpsdk.CommandTransport{Command: child}, child, nil
}

// grpcCaller returns the caller of o.method over gRPC; it waits until the
// router serves.
func grpcCaller(ctx context.Context, c routerv1.SkillRouterClient, o runOptions) (caller, error) {
	if err := waitServing(ctx, c, o); err != nil {
		return nil, err
	}
	switch o.method {
	case "match":
		return func(ctx context.Context, task string) error {
			_, err := c.Match(ctx, &routerv1.MatchRequest{Task: task, TopK: int32(o.topK)})
			return err
		}, nil
	case "list":
		return func(ctx context.Context, _ string) error {
			_, err := c.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 100})
			return err
		}, nil
	case "load":
		names, err := skillNames(ctx, c)
		if err != nil {
			return nil, err
		}
		var i atomic.Int64
		level := routerv1.LoadLevel(o.loadLevel)
		return func(ctx context.Context, _ string) error {
			name := names[int(i.Add(1)-1)%len(names)]
			_, err := c.Load(ctx, &routerv1.LoadRequest{Name: name, Level: level})
			return err
		}, nil
	}
	return nil, usagef("--method %q over gRPC: want match, load or list", o.method)
}

// waitServing retries Status until the router serves, for up to o.wait.
func waitServing(ctx context.Context, c routerv1.SkillRouterClient, o runOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	for {
		st, err := c.Status(ctx, &routerv1.StatusRequest{})
		if err == nil && st.Serving {
			return nil
		}
		if err == nil {
			err = errors.New("it answers but does not serve yet")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("router at %s not serving after %s (--wait): %v", o.addr, o.wait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// skillNames lists up to 1,000 skill names.
func skillNames(ctx context.Context, c routerv1.SkillRouterClient) ([]string, error) {
	res, err := c.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 1000})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range res.Skills {
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return nil, errors.New("the router lists no skill to load")
	}
	return names, nil
}

// mcpCaller returns the caller of o.method's tool over an MCP session; it
// waits until the router answers.
func mcpCaller(ctx context.Context, cs *mcpsdk.ClientSession, o runOptions) (caller, error) {
	call := func(ctx context.Context, tool string, args map[string]any) error {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err
		}
		if res.IsError {
			var msg strings.Builder
			for _, c := range res.Content {
				if t, ok := c.(*mcpsdk.TextContent); ok {
					msg.WriteString(t.Text)
				}
			}
			return toolError{msg.String()}
		}
		return nil
	}
	// The first call waits for a standalone router's first index.
	wctx, cancel := context.WithTimeout(ctx, o.wait)
	defer cancel()
	for {
		err := call(wctx, "find_skills", map[string]any{"task": "warm up"})
		if err == nil {
			break
		}
		select {
		case <-wctx.Done():
			return nil, fmt.Errorf("MCP router not answering after %s (--wait): %v", o.wait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	switch o.method {
	case "find_skills":
		return func(ctx context.Context, task string) error {
			args := map[string]any{"task": task}
			if o.topK > 0 {
				args["top_k"] = o.topK
			}
			return call(ctx, "find_skills", args)
		}, nil
	case "list_skills":
		return func(ctx context.Context, _ string) error { return call(ctx, "list_skills", map[string]any{}) }, nil
	case "load_skill":
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "list_skills", Arguments: map[string]any{}})
		if err != nil {
			return nil, err
		}
		names := namesFromList(res)
		if len(names) == 0 {
			return nil, errors.New("list_skills named no skill to load")
		}
		var i atomic.Int64
		return func(ctx context.Context, _ string) error {
			return call(ctx, "load_skill", map[string]any{"name": names[int(i.Add(1)-1)%len(names)]})
		}, nil
	}
	return nil, usagef("--method %q over MCP: want find_skills, load_skill or list_skills", o.method)
}

// namesFromList reads skill names from a list_skills result's structured
// content.
func namesFromList(res *mcpsdk.CallToolResult) []string {
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil
	}
	var out struct {
		Skills []struct {
			Name string `json:"name"`
		} `json:"skills"`
	}
	if json.Unmarshal(data, &out) != nil {
		return nil
	}
	var names []string
	for _, s := range out.Skills {
		names = append(names, s.Name)
	}
	return names
}
