package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/slowtest"
)

// result is one routerbench invocation.
type result struct {
	code           int
	stdout, stderr string
}

// bench runs routerbench in-process with args.
func bench(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// mustBench runs routerbench and fails the test unless it exits 0.
func mustBench(t *testing.T, args ...string) result {
	t.Helper()
	res := bench(t, args...)
	if res.code != exitOK {
		t.Fatalf("routerbench %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.stdout, res.stderr)
	}
	return res
}

// sharedDir returns ../shared/<sub> beside the checkout (or $env), and
// skips the test when it is absent.
func sharedDir(t *testing.T, env, sub string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", sub)
	if v := os.Getenv(env); v != "" {
		dir = v
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("skipping: the dev data is not at %s (set %s): %v", dir, env, err)
	}
	return dir
}

// sampleEvalDir writes a dev-set folder gen can read without ../shared: the
// example skills (templates left out) and the labelled sample queries over
// them.
func sampleEvalDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "eval")
	set := filepath.Join(dir, "sample")
	src := filepath.Join(daemontest.Examples(t), "skills")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name(), skillfs.SkillFile))
		if err != nil || strings.HasPrefix(e.Name(), "_") {
			continue
		}
		if err := os.MkdirAll(filepath.Join(set, "skills", e.Name()), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(set, "skills", e.Name(), skillfs.SkillFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("only %d example skills under %s", n, src)
	}
	q, err := os.ReadFile(filepath.Join("..", "..", "testdata", "eval-sample", "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(set, "queries.jsonl"), q, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sampleWorkspace writes a workspace of n skills from the sample dev set
// with gen, and returns its folder.
func sampleWorkspace(t *testing.T, n int) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	mustBench(t, "gen", "--skills", strconv.Itoa(n), "--out", ws, "--eval", sampleEvalDir(t), "--short-bodies", "--long", "5", "--long-chars", "600")
	return ws
}

// checkSkills checks every SKILL.md under ws/skills: want of them, each
// parses without errors with the name of its folder, names distinct (as
// the router compares them) and descriptions plain valid text. It returns
// the names.
func checkSkills(t *testing.T, ws string, want int) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(filepath.Join(ws, "skills"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == skillfs.SkillFile {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != want {
		t.Fatalf("%d SKILL.md files under %s, want %d", len(paths), ws, want)
	}
	seen := map[string]string{}
	var names []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Base(filepath.Dir(p))
		parsed, problems := skillmd.Parse(data, dir, skillmd.DefaultLimits)
		if parsed == nil {
			t.Fatalf("%s does not parse: %v", p, problems)
		}
		for _, pr := range problems {
			if pr.Severity == skill.SeverityError {
				t.Errorf("%s: %s", p, pr.Message)
			}
		}
		if parsed.Name != dir {
			t.Errorf("%s: name %q, folder %q", p, parsed.Name, dir)
		}
		desc := parsed.Frontmatter.Description
		if desc == "" || !utf8.ValidString(desc) || strings.Contains(string(data), "!!binary") {
			t.Errorf("%s: description %q is empty, not valid UTF-8 or binary", p, desc)
		}
		key := skillmd.FoldName(parsed.Name)
		if other, ok := seen[key]; ok {
			t.Errorf("name %q in %s and %s", parsed.Name, p, other)
		}
		seen[key] = p
		names = append(names, parsed.Name)
	}
	roots, err := skillfs.RootsForPath(ws)
	if err != nil {
		t.Fatal(err)
	}
	if rep := loader.Validate(roots, nil, skillmd.DefaultLimits, skillfs.DefaultScanLimits); rep.Served != want {
		t.Errorf("the router would serve %d of %d skills; problems %v", rep.Served, want, rep.Problems)
	}
	return names
}

// checkQueries checks a queries file gen wrote: JSON lines with a distinct
// id and a non-empty query, want of them (-1: any number but 0). It
// returns the queries.
func checkQueries(t *testing.T, path string, want int) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	var queries []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct {
			ID    string `json:"id"`
			Query string `json:"query"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("%s line %d: %v", path, len(queries)+1, err)
		}
		if q.ID == "" || q.Query == "" || ids[q.ID] {
			t.Fatalf("%s line %d: id %q (empty or seen), query %q", path, len(queries)+1, q.ID, q.Query)
		}
		ids[q.ID] = true
		queries = append(queries, q.Query)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if (want < 0 && len(queries) == 0) || (want >= 0 && len(queries) != want) {
		t.Fatalf("%s: %d queries, want %d", path, len(queries), want)
	}
	return queries
}

func TestGenWithoutSharedData(t *testing.T) {
	eval := sampleEvalDir(t)
	ws := filepath.Join(t.TempDir(), "ws")
	res := mustBench(t, "gen", "--skills", "30", "--out", ws, "--eval", eval, "--short-bodies", "--long", "5", "--long-chars", "600")
	if !strings.Contains(res.stdout, "wrote 30 skills, 38 queries and 5 long tasks") {
		t.Errorf("gen says %q", res.stdout)
	}
	names := checkSkills(t, ws, 30)
	copies := 0
	for _, n := range names {
		if strings.Contains(n, "-v") {
			copies++
		}
	}
	if copies == 0 {
		t.Errorf("30 skills from 8 dev skills but no renamed copy: %v", names)
	}
	checkQueries(t, filepath.Join(ws, "queries.jsonl"), 38)
	for _, q := range checkQueries(t, filepath.Join(ws, "long.jsonl"), 5) {
		if len(q) < 600 || len(q) > 800 {
			t.Errorf("long task of %d characters, want about 600", len(q))
		}
	}

	t.Run("same inputs, same files", func(t *testing.T) {
		again := filepath.Join(t.TempDir(), "ws")
		mustBench(t, "gen", "--skills", "30", "--out", again, "--eval", eval, "--short-bodies", "--long", "5", "--long-chars", "600")
		for _, rel := range []string{"queries.jsonl", "long.jsonl", filepath.Join("skills", names[len(names)-1], skillfs.SkillFile)} {
			a, errA := os.ReadFile(filepath.Join(ws, rel))
			b, errB := os.ReadFile(filepath.Join(again, rel))
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Errorf("%s differs between two runs (%v, %v)", rel, errA, errB)
			}
		}
	})
	t.Run("refuses a folder that holds skills", func(t *testing.T) {
		res := bench(t, "gen", "--skills", "5", "--out", ws, "--eval", eval, "--short-bodies")
		if res.code != exitError || !strings.Contains(res.stderr, "already holds skills") {
			t.Errorf("exit %d, stderr %q; want 1 and \"already holds skills\"", res.code, res.stderr)
		}
	})
	t.Run("no dev sets", func(t *testing.T) {
		res := bench(t, "gen", "--skills", "5", "--out", filepath.Join(t.TempDir(), "ws"), "--eval", t.TempDir(), "--short-bodies")
		if res.code != exitError || !strings.Contains(res.stderr, "no dev sets") {
			t.Errorf("exit %d, stderr %q; want 1 and \"no dev sets\"", res.code, res.stderr)
		}
	})
}

func TestGenFromDevSets(t *testing.T) {
	slowtest.Skip(t, "generates a workspace from the dev data of ../shared")
	eval := sharedDir(t, "MCPSAG_EVAL_DIR", "eval")
	corpora := sharedDir(t, "MCPSAG_CORPORA_DIR", "corpora")
	ws := filepath.Join(t.TempDir(), "ws")
	mustBench(t, "gen", "--skills", "200", "--out", ws, "--eval", eval, "--corpora", corpora, "--long", "20")
	checkSkills(t, ws, 200)
	if qs := checkQueries(t, filepath.Join(ws, "queries.jsonl"), -1); len(qs) < 1000 {
		t.Errorf("%d queries from the dev sets, want over 1,000", len(qs))
	}
	for _, q := range checkQueries(t, filepath.Join(ws, "long.jsonl"), 20) {
		if len(q) < 2000 || len(q) > 2200 {
			t.Errorf("long task of %d characters, want about 2,000", len(q))
		}
	}
	// Bodies go on with stretches of real SKILL.md bodies.
	var long int
	_ = filepath.WalkDir(filepath.Join(ws, "skills"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == skillfs.SkillFile {
			if fi, err := d.Info(); err == nil && fi.Size() > 1000 {
				long++
			}
		}
		return err
	})
	if long < 150 {
		t.Errorf("%d of 200 SKILL.md files over 1,000 bytes; bodies from %s missing?", long, corpora)
	}
}

// reportKeys are the keys of run's JSON report that scripts rely on.
var reportKeys = []string{
	"transport", "method", "clients", "queries", "calls", "errors", "seconds", "calls_per_second",
	"p50_ms", "p90_ms", "p99_ms", "max_ms", "rss_before_bytes", "rss_after_bytes", "load_average",
	"router_cpu_seconds", "router_cpu_ms_per_call", "bench_cpu_ms_per_call",
}

// runReport runs "routerbench run --json" with args and checks the report:
// every key present, calls made without errors, percentiles in order.
func runReport(t *testing.T, args ...string) report {
	t.Helper()
	res := mustBench(t, append([]string{"run", "--json"}, args...)...)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &keys); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, res.stdout)
	}
	for _, k := range reportKeys {
		if _, ok := keys[k]; !ok {
			t.Errorf("key %q missing from the report:\n%s", k, res.stdout)
		}
	}
	var rep report
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, res.stdout)
	}
	if rep.Calls <= 0 || len(rep.Errors) != 0 {
		t.Errorf("%d calls, errors %v; want calls and no errors\nstderr: %s", rep.Calls, rep.Errors, res.stderr)
	}
	if !(0 < rep.P50 && rep.P50 <= rep.P90 && rep.P90 <= rep.P99 && rep.P99 <= rep.Max) {
		t.Errorf("percentiles out of order: p50 %v, p90 %v, p99 %v, max %v", rep.P50, rep.P90, rep.P99, rep.Max)
	}
	if rep.Seconds <= 0 || rep.Throughput <= 0 {
		t.Errorf("%v seconds, %v calls/s", rep.Seconds, rep.Throughput)
	}
	return rep
}

func TestRunAgainstRouter(t *testing.T) {
	ws := sampleWorkspace(t, 30)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	queries := filepath.Join(ws, "queries.jsonl")
	pid := strconv.Itoa(os.Getpid()) // the router runs in this process

	t.Run("grpc match", func(t *testing.T) {
		rep := runReport(t, "--addr", r.Addr, "--queries", queries, "--clients", "2", "--count", "60", "--warmup", "0", "--pid", pid)
		if rep.Transport != "grpc" || rep.Method != "match" || rep.Clients != 2 || rep.Queries != 38 {
			t.Errorf("report says %s %s, %d clients, %d queries; want grpc match, 2, 38", rep.Transport, rep.Method, rep.Clients, rep.Queries)
		}
		if rep.Calls != 60 {
			t.Errorf("%d calls measured, want --count 60", rep.Calls)
		}
		if rep.RSSBefore <= 0 || rep.RSSAfter <= 0 {
			t.Errorf("RSS %d before, %d after; want both read from --pid", rep.RSSBefore, rep.RSSAfter)
		}
	})
	t.Run("router CPU from --pid", func(t *testing.T) {
		// Long enough for the 10 ms ticks of /proc to count.
		rep := runReport(t, "--addr", r.Addr, "--queries", queries, "--clients", "2", "--duration", "600ms", "--warmup", "0", "--pid", pid)
		if rep.RouterCPU <= 0 || math.Abs(rep.RouterCPUPerCall-rep.RouterCPU*1000/float64(rep.Calls)) > 1e-9 || rep.BenchCPUPerCall <= 0 {
			t.Errorf("router CPU %v s, %v ms per call over %d calls, load generator %v ms per call; want the router's read from --pid",
				rep.RouterCPU, rep.RouterCPUPerCall, rep.Calls, rep.BenchCPUPerCall)
		}
	})
	for _, method := range []string{"load", "list"} {
		t.Run("grpc "+method, func(t *testing.T) {
			rep := runReport(t, "--addr", r.Addr, "--queries", queries, "--clients", "2", "--count", "20", "--warmup", "0", "--method", method)
			if rep.Method != method || rep.Calls != 20 {
				t.Errorf("method %s, %d calls; want %s, 20", rep.Method, rep.Calls, method)
			}
			if rep.RouterCPU != 0 || rep.RouterCPUPerCall != 0 || rep.BenchCPUPerCall <= 0 {
				t.Errorf("router CPU %v s, %v ms per call without --pid; load generator %v ms per call", rep.RouterCPU, rep.RouterCPUPerCall, rep.BenchCPUPerCall)
			}
		})
	}
	t.Run("grpc long tasks for a duration", func(t *testing.T) {
		rep := runReport(t, "--addr", r.Addr, "--queries", filepath.Join(ws, "long.jsonl"), "--clients", "2", "--duration", "300ms", "--warmup", "50ms", "--top-k", "3")
		if rep.Queries != 5 {
			t.Errorf("%d queries, want the 5 of long.jsonl", rep.Queries)
		}
	})
	t.Run("mcp-http find_skills", func(t *testing.T) {
		rep := runReport(t, "--transport", "mcp-http", "--mcp-url", "http://"+r.Main.MCPAddr()+"/mcp", "--queries", queries, "--clients", "2", "--count", "30", "--warmup", "0")
		if rep.Transport != "mcp-http" || rep.Method != "find_skills" || rep.Calls != 30 {
			t.Errorf("report says %s %s, %d calls; want mcp-http find_skills, 30", rep.Transport, rep.Method, rep.Calls)
		}
	})
	t.Run("human output", func(t *testing.T) {
		res := mustBench(t, "run", "--addr", r.Addr, "--queries", queries, "--clients", "2", "--count", "10", "--warmup", "0")
		for _, want := range []string{"grpc match, 2 clients, 38 tasks in turn", "calls      10 in", "latency    p50", "errors     none", "router RSS unknown", "CPU        router unknown, load generator "} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, res.stdout)
			}
		}
	})
	t.Run("errors are counted by code", func(t *testing.T) {
		tooLong := filepath.Join(t.TempDir(), "long.jsonl")
		if err := os.WriteFile(tooLong, []byte(`{"id":"x","query":"`+strings.Repeat("a ", 40000)+`"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := mustBench(t, "run", "--json", "--addr", r.Addr, "--queries", tooLong, "--clients", "2", "--count", "10", "--warmup", "0", "--max-query-bytes", "100000")
		var rep report
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Calls != 0 || rep.Errors["InvalidArgument"] != 10 {
			t.Errorf("tasks over the router's limit: %d calls, errors %v; want 10 InvalidArgument", rep.Calls, rep.Errors)
		}
	})
}

func TestUsageErrors(t *testing.T) {
	queries := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(queries, []byte(`{"id":"a","query":"fill a pdf form"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// No router listens here: a usage error must come before any dialling.
	noRouter := "127.0.0.1:1"
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage:"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"gen"}, "gen needs --skills N > 0 and --out DIR"},
		{[]string{"gen", "--skills", "ten", "--out", "x"}, `invalid argument "ten"`},
		{[]string{"gen", "--skills", "-1", "--out", "x"}, "gen needs --skills N > 0"},
		{[]string{"gen", "--skills", "10", "--out", "x", "extra"}, `gen takes no arguments, got "extra"`},
		{[]string{"run"}, "run needs --queries FILE"},
		{[]string{"run", "--queries", queries, "--clients", "0"}, "--clients must be positive"},
		{[]string{"run", "--queries", queries, "--count", "-5", "--addr", noRouter}, "--count"},
		{[]string{"run", "--queries", queries, "--duration", "0s", "--addr", noRouter}, "--duration"},
		{[]string{"run", "--queries", queries, "--transport", "carrier-pigeon"}, `--transport "carrier-pigeon": want grpc, mcp-http or mcp-stdio`},
		{[]string{"run", "--queries", queries, "--addr", noRouter, "--method", "find_skills"}, `--method "find_skills" over gRPC: want match, load or list`},
		{[]string{"run", "--queries", queries, "--transport", "mcp-http", "--mcp-url", "http://127.0.0.1:1/mcp", "--method", "match"}, `--method "match" over MCP: want find_skills, load_skill or list_skills`},
		{[]string{"run", "--queries", queries, "--transport", "mcp-http"}, "mcp-http needs --mcp-url"},
		{[]string{"run", "--queries", queries, "--transport", "mcp-stdio"}, "mcp-stdio needs --mcp-command"},
		{[]string{"run", "--queries", queries, "--addr", noRouter, "--method", "load", "--load-level", "3"}, "--load-level 3: want 1 or 2"},
		{[]string{"run", "--queries", queries, "--duration", "soon"}, `invalid argument "soon"`},
		{[]string{"run", "extra", "--queries", queries}, `run takes no arguments, got "extra"`},
		{[]string{"lifecycle", "--workspace", "ws"}, "lifecycle needs --router, --workspace and --state-dir"},
		{[]string{"lifecycle", "--router", "r", "--workspace", "ws", "--state-dir", "s", "--edits", "-1"}, "--edits"},
	}
	for _, tc := range tests {
		t.Run(strings.ReplaceAll(strings.Join(tc.args, " "), queries, "Q"), func(t *testing.T) {
			start := time.Now()
			res := bench(t, tc.args...)
			if res.code != exitUsage {
				t.Errorf("exit %d, want %d (usage)\nstdout: %s\nstderr: %s", res.code, exitUsage, res.stdout, res.stderr)
			}
			if !strings.Contains(res.stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, res.stderr)
			}
			if res.stdout != "" {
				t.Errorf("a usage error printed on stdout:\n%s", res.stdout)
			}
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("a usage error took %s: it waited for something", took)
			}
		})
	}
}

func TestRunWithoutARouterFails(t *testing.T) {
	queries := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(queries, []byte(`{"id":"a","query":"fill a pdf form"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := bench(t, "run", "--queries", queries, "--addr", "127.0.0.1:1", "--clients", "1", "--count", "1", "--wait", "300ms")
	if res.code != exitError || !strings.Contains(res.stderr, "router at 127.0.0.1:1 not serving") {
		t.Errorf("exit %d, stderr %q; want 1 and a router not serving", res.code, res.stderr)
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"gen", "--help"}, {"run", "--help"}, {"lifecycle", "--help"}} {
		res := bench(t, args...)
		if res.code != exitOK || !strings.Contains(res.stdout, "Usage:") {
			t.Errorf("routerbench %v: exit %d, stdout %q", args, res.code, res.stdout)
		}
	}
}

func TestLifecycleRouterThatExits(t *testing.T) {
	bin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("skipping: no false(1) to stand for a router that exits")
	}
	ws := sampleWorkspace(t, 10)
	start := time.Now()
	res := bench(t, "lifecycle", "--router", bin, "--workspace", ws, "--state-dir", filepath.Join(t.TempDir(), "state"), "--timeout", "2m")
	if res.code != exitError || !strings.Contains(res.stderr, "router exited") {
		t.Errorf("exit %d, stderr %q; want 1 and \"router exited\"", res.code, res.stderr)
	}
	if took := time.Since(start); took > time.Minute {
		t.Errorf("noticed the router had exited after %s", took)
	}
}

func TestLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping in -short: builds and starts the router three times")
	}
	slowtest.Skip(t, "builds the router with its own flags and starts it three times")
	bin := filepath.Join(t.TempDir(), "router")
	build := exec.Command("go", "build", "-o", bin, "../router")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build router: %v\n%s", err, out)
	}
	ws := sampleWorkspace(t, 30)
	res := mustBench(t, "lifecycle", "--json", "--router", bin, "--workspace", ws, "--state-dir", filepath.Join(t.TempDir(), "state"), "--edits", "2", "--timeout", "2m")
	var rep lifecycleReport
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, res.stdout)
	}
	if rep.Skills != 30 {
		t.Errorf("%d skills served, want 30", rep.Skills)
	}
	if rep.Cold.Parsed != 30 || rep.Cold.Embedded != 30 {
		t.Errorf("cold index parsed %d, embedded %d; want 30, 30", rep.Cold.Parsed, rep.Cold.Embedded)
	}
	if rep.Warm.Parsed != 0 || rep.Warm.Embedded != 0 || !rep.GenerationSame {
		t.Errorf("warm restart parsed %d, embedded %d, same generation %v; want 0, 0, true", rep.Warm.Parsed, rep.Warm.Embedded, rep.GenerationSame)
	}
	for _, s := range []startReport{rep.Cold, rep.Warm} {
		if s.ToServing <= 0 || s.RSS <= 0 {
			t.Errorf("start %+v: want a time to SERVING and an RSS", s)
		}
	}
	if len(rep.EditToServed) != 2 || rep.EditMedian <= 0 {
		t.Errorf("edits %v, median %v; want 2 timed edits", rep.EditToServed, rep.EditMedian)
	}
	// The edited skill is restored.
	if _, err := os.Stat(ws); err == nil {
		checkSkills(t, ws, 30)
	}
}
