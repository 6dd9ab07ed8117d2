package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/telemetry/dashboard"
	"github.com/mcpsag/router/internal/testlog"
)

const (
	dashboardFile = "../../deploy/grafana/mcpsag-router.json"
	// promJob is the scrape job name; the dashboard's $job variable takes it.
	promJob = "mcpsag-router"
	// promScrapeConfig scrapes the router's /metrics every second, so a
	// test sees several samples of every series within seconds.
	promScrapeConfig = `global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
`
)

// TestPrometheusDashboard proves the Grafana dashboard against a real
// Prometheus: it starts the router with /metrics on loopback and a
// Prometheus that scrapes it every second, runs every query of the
// dashboard (panels and variables, with $job and $instance set to this
// router) through Prometheus' HTTP API on the fresh router, where each
// must return something to draw, then drives traffic that touches every
// panel and requires each query to return at least one number.
//
// Counters only show a rate once Prometheus holds two samples that differ,
// so the traffic runs twice with a scrape in between.
func TestPrometheusDashboard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	bin := prometheusBinary(t)

	ws := daemontest.CopyExamples(t)
	const opsToken, readerToken = "prom-ops-token-0123456789", "prom-reader-token-9876543210"
	tokens := filepath.Join(ws, ".mcp", "tokens.yaml")
	writeFileT(t, tokens, fmt.Sprintf(`tokens:
  - {id: ops, sha256: %s, groups: ["*"]}
  - {id: reader, sha256: %s, groups: [read, match, load]}
`, auth.HashToken(opsToken), auth.HashToken(readerToken)))
	writeFileT(t, filepath.Join(ws, "skills", "ALLOWLIST.txt"), "csv-data-cleaning scripts/profile_csv.py\n")
	corrupt := filepath.Join(t.TempDir(), "corrupt-model")
	must(t, embedtest.WriteCorruptModel(corrupt))
	// Everything lives in the config file, so that the model edits below
	// reload the same settings and nothing else.
	baseConfig := fmt.Sprintf("admin_addr: 127.0.0.1:0\nflags: {skills_v1: true, skills_exec: true}\nauth: {enabled: true, tokens_file: %s}\n", tokens)
	setConfig(t, ws, baseConfig)

	logs := &testlog.Buffer{}
	// The bundled default model: the drive below points the model at a
	// corrupt folder and back, which a --model-dir would override.
	r := daemontest.Start(t, ws, daemontest.Options{Logs: logs, DefaultModel: true})
	target := r.Main.AdminAddr()
	if target == "" {
		t.Fatal("router has no admin address; /metrics is off")
	}
	prom := startPrometheus(t, bin, target)
	daemontest.EventuallyNil(t, 20*time.Second, "Prometheus scraping the router", func() error {
		return prom.scrapedAfter(time.Time{})
	})
	data, err := os.ReadFile(dashboardFile)
	must(t, err)
	dash, err := dashboard.Parse(data)
	must(t, err)
	queries, err := dash.Queries()
	must(t, err)
	if len(queries) < 30 {
		t.Fatalf("dashboard has %d queries; want the full dashboard", len(queries))
	}
	// Grafana writes one selected value of a multi-value variable as an
	// escaped regex, with backslashes doubled inside the PromQL string.
	vars := map[string]string{"job": grafanaRegex(promJob), "instance": grafanaRegex(target)}

	// A fresh router, before any call: every panel has something to draw
	// (0, or NaN for a ratio of nothing), never "No data".
	start := time.Now()
	daemontest.EventuallyNil(t, 20*time.Second, "a second scrape of the fresh router", func() error {
		return prom.scrapedAfter(start)
	})
	runQueries(t, prom, queries, vars, "on a fresh router", true)
	if t.Failed() {
		t.FailNow()
	}

	d := &driver{t: t, r: r, ws: ws, base: baseConfig, corrupt: corrupt, opsToken: opsToken, readerToken: readerToken}
	for round := range 2 {
		d.drive()
		end := time.Now()
		daemontest.EventuallyNil(t, 20*time.Second, fmt.Sprintf("a scrape after round %d of traffic", round+1), func() error {
			return prom.scrapedAfter(end)
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	defer func() {
		if t.Failed() {
			t.Logf("router log:\n%s\nPrometheus log:\n%s", lastLines(logs.String(), 20), lastLines(prom.logs.String(), 20))
		}
	}()

	checks := runQueries(t, prom, queries, vars, "after the traffic", false)

	// The panels that split by a label show what the traffic did, not just
	// something.
	for _, want := range []struct{ panel, expr, label, value string }{
		{"Match rate by outcome", "", "outcome", "abstained"},
		{"Match rate by outcome", "", "outcome", "selected"},
		{"Loads by level", "", "level", "resource"},
		{"Resource requests", "", "allowed", "false"},
		{"Exec decisions", "", "decision", "deny"},
		{"Exec decisions", "", "decision", "allow"},
		{"Exec results", "", "outcome", "error"},
		{"Admin calls", "", "decision", "deny"},
		{"Keyword fallbacks", "by (reason)", "reason", "model_invalid"},
		{"Embedding cache hit ratio", "by (cache)", "cache", "query"},
		{"Embedding cache hit ratio", "by (cache)", "cache", "document"},
		{"Error ratio by status code", "", "rpc_response_status_code", "NOT_FOUND"},
		{"Error ratio by status code", "", "rpc_response_status_code", "INVALID_ARGUMENT"},
		{"Error ratio by status code", "", "rpc_response_status_code", "PERMISSION_DENIED"},
		{"Error ratio by status code", "", "rpc_response_status_code", "UNIMPLEMENTED"},
		{"Requests by method and code", "", "rpc_method", "mcpsag.router.v1.SkillRouter/Match"},
	} {
		var found *queryCheck
		for _, c := range checks {
			if strings.HasPrefix(c.q.Source, fmt.Sprintf("panel %q ", want.panel)) && strings.Contains(c.q.Expr, want.expr) {
				found = c
				break
			}
		}
		if found == nil {
			t.Errorf("no panel %q with %q in its query; update this test with the dashboard", want.panel, want.expr)
			continue
		}
		res, err := prom.query(found.expr)
		if err != nil {
			t.Errorf("%s: %v", found.q.Source, err)
			continue
		}
		if !res.hasLabel(want.label, want.value) {
			t.Errorf("%s: no series with %s=%q after the traffic; got %s", found.q.Source, want.label, want.value, res.summary())
		}
	}
}

// queryCheck is one dashboard query against Prometheus.
type queryCheck struct {
	q    dashboard.Query
	expr string // with the variables expanded
	last string // why it failed the last time it ran, "" once it passed
}

// runQueries expands every query with vars, runs it, and reports those
// that do not return data (when does not, with allowNaN, count only NaN
// as data: a ratio of nothing). A query that does not is retried for a
// while: a scrape may still be on its way.
func runQueries(t *testing.T, prom *promServer, queries []dashboard.Query, vars map[string]string, when string, allowNaN bool) []*queryCheck {
	t.Helper()
	checks := make([]*queryCheck, 0, len(queries))
	for _, q := range queries {
		expr, err := dashboard.Expand(q.Expr, vars)
		if err != nil {
			t.Errorf("%s: %v", q.Source, err)
			continue
		}
		checks = append(checks, &queryCheck{q: q, expr: expr, last: "not run"})
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		pending := 0
		for _, c := range checks {
			if c.last == "" {
				continue
			}
			switch res, err := prom.query(c.expr); {
			case err != nil:
				c.last = err.Error()
			case allowNaN && len(res.samples) > 0:
				c.last = ""
			default:
				c.last = res.problem()
			}
			if c.last != "" {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, c := range checks {
		if c.last != "" {
			t.Errorf("%s returns no data %s: %s\n  query: %s", c.q.Source, when, c.last, c.expr)
		}
	}
	return checks
}

// driver sends one round of traffic that gives every dashboard panel data.
type driver struct {
	t                     *testing.T
	r                     *daemontest.Router
	ws, base              string // workspace and its config file without a model
	corrupt               string // a corrupt model folder
	opsToken, readerToken string

	ops, reader context.Context // the current round's
}

func (d *driver) drive() {
	t, c := d.t, d.r.Client
	t.Helper()
	round, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.ops = metadata.AppendToOutgoingContext(round, "authorization", "Bearer "+d.opsToken)
	d.reader = metadata.AppendToOutgoingContext(round, "authorization", "Bearer "+d.readerToken)

	// Matches that answer and that abstain; each task twice, so the query
	// embedding cache both misses and hits.
	outcomes := map[bool]int{}
	for _, task := range []string{"fill in the fields of a PDF form", "what is the capital of France"} {
		for range 2 {
			res, err := c.Match(d.ops, &routerv1.MatchRequest{Task: task})
			if err != nil {
				t.Fatalf("Match(%q): %v", task, err)
			}
			outcomes[res.Abstained]++
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("matches: %d answered, %d abstained; want both", outcomes[false], outcomes[true])
	}

	// Loads at every level, one truncated, one resource denied.
	loads := []struct {
		req       *routerv1.LoadRequest
		code      codes.Code
		truncated bool
	}{
		{&routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_SUMMARY}, codes.OK, false},
		{&routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY}, codes.OK, false},
		{&routerv1.LoadRequest{Name: "kubernetes-debugging", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: 40}, codes.OK, true},
		{&routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: "references/field-types.md"}, codes.OK, false},
		{&routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: "../release-notes/scripts/collect_commits.sh"}, codes.PermissionDenied, false},
		{&routerv1.LoadRequest{Name: "no-such-skill", Level: routerv1.LoadLevel_LOAD_LEVEL_SUMMARY}, codes.NotFound, false},
	}
	for _, l := range loads {
		res, err := c.Load(d.ops, l.req)
		if got := status.Code(err); got != l.code {
			t.Errorf("Load(%s, %v, %q): %v, want %v", l.req.Name, l.req.Level, l.req.ResourcePath, err, l.code)
		}
		if err == nil && res.Truncated != l.truncated {
			t.Errorf("Load(%s, %v): truncated %v, want %v", l.req.Name, l.req.Level, res.Truncated, l.truncated)
		}
	}

	// Exec decisions, allowed and denied, and results, ok and failed.
	for _, exit := range []int32{0, 3} {
		res, err := c.AuthorizeExec(d.ops, &routerv1.AuthorizeExecRequest{Skill: "csv-data-cleaning", Script: "scripts/profile_csv.py", Caller: "prom-test"})
		if err != nil || res.Decision != routerv1.ExecDecision_EXEC_DECISION_ALLOW {
			t.Fatalf("AuthorizeExec of an allowlisted script: %v, %v", res, err)
		}
		rep, err := c.ReportExecResult(d.ops, &routerv1.ReportExecResultRequest{DecisionId: res.DecisionId, ExitCode: exit, Duration: durationpb.New(300 * time.Millisecond), Caller: "prom-test"})
		if err != nil || !rep.Recorded {
			t.Errorf("ReportExecResult: %v, %v", rep, err)
		}
	}
	res, err := c.AuthorizeExec(d.ops, &routerv1.AuthorizeExecRequest{Skill: "kubernetes-debugging", Script: "references/kubectl-cheatsheet.md", Caller: "prom-test"})
	if err != nil || res.Decision != routerv1.ExecDecision_EXEC_DECISION_DENY {
		t.Errorf("AuthorizeExec of a script not on the allowlist: %v, %v", res, err)
	}

	// Admin calls, allowed and denied; a reindex.
	if _, err := c.Reindex(d.ops, &routerv1.ReindexRequest{}); err != nil {
		t.Errorf("Reindex as ops: %v", err)
	}
	if _, err := c.Reindex(d.reader, &routerv1.ReindexRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("Reindex as reader: %v, want PermissionDenied", err)
	}

	// Client errors (a request body that is not protobuf is one too), and
	// a server error for the panels that count only those: a method the
	// router does not serve (Unimplemented, a server error to
	// OpenTelemetry).
	if _, err := c.Match(d.ops, &routerv1.MatchRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Match without a task: %v, want InvalidArgument", err)
	}
	var reply []byte
	err = d.r.Conn.Invoke(d.ops, routerv1.SkillRouter_Match_FullMethodName, []byte{0xff, 0xff, 0xff, 0xff}, &reply, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("undecodable request: %v, want InvalidArgument", err)
	}
	err = d.r.Conn.Invoke(d.ops, "/mcpsag.router.v1.SkillRouter/NoSuchMethod", []byte{}, &reply, grpc.ForceCodec(rawCodec{}))
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("a method the router does not serve: %v, want Unimplemented", err)
	}

	// A switch to keyword-only matching and back: point the model at a
	// corrupt one, then back at the bundled one.
	setConfig(t, d.ws, d.base+"model: {dir: "+d.corrupt+"}\n")
	daemontest.EventuallyNil(t, 20*time.Second, "the router degraded to keywords", func() error { return d.degraded(true) })
	setConfig(t, d.ws, d.base)
	daemontest.EventuallyNil(t, 20*time.Second, "the router back on the bundled model", func() error { return d.degraded(false) })
}

func (d *driver) degraded(want bool) error {
	st, err := d.r.Client.Status(d.ops, &routerv1.StatusRequest{})
	if err != nil {
		return err
	}
	if st.Degraded != want {
		return fmt.Errorf("degraded %v (%s)", st.Degraded, st.DegradedReason)
	}
	return nil
}

// rawCodec sends a request's bytes as they are, to send one the server
// cannot decode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (rawCodec) Unmarshal([]byte, any) error   { return errors.New("rawCodec: no reply expected") }
func (rawCodec) Name() string                  { return "proto" }

// grafanaRegex formats a value as Grafana does for a multi-value variable
// used in =~: regex metacharacters escaped, backslashes doubled for PromQL.
func grafanaRegex(v string) string {
	return strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
}

// prometheusBinary finds the prometheus server: $MCPSAG_PROMETHEUS, PATH,
// or where the Debian package puts it. It skips the test when there is none.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPSAG_PROMETHEUS"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("MCPSAG_PROMETHEUS: %v", err)
		}
		return p
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	const debian = "/usr/bin/prometheus"
	if _, err := os.Stat(debian); err == nil {
		return debian
	}
	t.Skip("prometheus not found (PATH, /usr/bin/prometheus or $MCPSAG_PROMETHEUS); .ci/run installs it with apt-get install prometheus")
	return ""
}

// promServer is a Prometheus process started by a test.
type promServer struct {
	url  string
	logs *testlog.Buffer
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // from Wait, once done is closed
}

// startPrometheus runs bin on a free loopback port with a fresh TSDB,
// scraping target every second, and returns once it is ready. The process
// is stopped when the test ends.
func startPrometheus(t *testing.T, bin, target string) *promServer {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	writeFileT(t, cfg, fmt.Sprintf(promScrapeConfig, promJob, target))
	// The port is free when picked; another process may take it before
	// Prometheus binds, so a few tries.
	var lastErr error
	for try := range 3 {
		addr := daemontest.FreeAddr(t)
		p := &promServer{url: "http://" + addr, logs: &testlog.Buffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(bin,
			"--config.file="+cfg,
			"--storage.tsdb.path="+filepath.Join(dir, fmt.Sprintf("data-%d", try)),
			"--web.listen-address="+addr,
			"--log.level=warn",
		)
		p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start prometheus: %v", err)
		}
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() { p.stop(t) })
		if lastErr = p.waitReady(); lastErr == nil {
			return p
		}
	}
	t.Fatalf("prometheus did not start: %v", lastErr)
	return nil
}

// stop ends the process: SIGTERM, then SIGKILL if it has not exited within
// a few seconds.
func (p *promServer) stop(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Logf("prometheus (pid %d) ignored SIGTERM; killing it", p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitReady polls /-/ready until Prometheus answers 200 or its process ends.
func (p *promServer) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("prometheus exited (%v):\n%s", p.err, lastLines(p.logs.String(), 20))
		default:
		}
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("not ready after 30s:\n" + lastLines(p.logs.String(), 20))
}

// scrapedAfter returns nil once Prometheus holds a successful scrape of the
// router that started after t. timestamp() is applied to the bare selector:
// on an expression such as up == 1 it returns the evaluation time instead.
func (p *promServer) scrapedAfter(t time.Time) error {
	sel := fmt.Sprintf(`up{job=%q}`, promJob)
	up, err := p.query(sel)
	if err != nil {
		return err
	}
	if len(up.samples) == 0 || up.samples[0].value != 1 {
		return fmt.Errorf("target not up: %s", up.summary())
	}
	ts, err := p.query("timestamp(" + sel + ")")
	if err != nil {
		return err
	}
	for _, s := range ts.samples {
		if time.UnixMilli(int64(math.Round(s.value * 1000))).After(t) {
			return nil
		}
	}
	return fmt.Errorf("last scrape %s is not after %v", ts.summary(), t.Format(time.RFC3339Nano))
}

// promResult is the result of an instant query.
type promResult struct {
	resultType string
	samples    []promSample
}

type promSample struct {
	labels map[string]string
	value  float64
}

// problem says why r is not data a panel can draw: no series, or only NaN
// (such as 0/0 when nothing happened in the window). "" means fine.
func (r *promResult) problem() string {
	if len(r.samples) == 0 {
		return "empty " + r.resultType
	}
	for _, s := range r.samples {
		if !math.IsNaN(s.value) {
			return ""
		}
	}
	return "only NaN: " + r.summary()
}

func (r *promResult) hasLabel(name, value string) bool {
	for _, s := range r.samples {
		if s.labels[name] == value && !math.IsNaN(s.value) {
			return true
		}
	}
	return false
}

func (r *promResult) summary() string {
	var b strings.Builder
	for i, s := range r.samples {
		if i == 8 {
			fmt.Fprintf(&b, " ... (%d series)", len(r.samples))
			break
		}
		fmt.Fprintf(&b, "%v=%g ", s.labels, s.value)
	}
	return strings.TrimSpace(b.String())
}

// query runs an instant query through /api/v1/query.
func (p *promServer) query(expr string) (*promResult, error) {
	resp, err := http.Get(p.url + "/api/v1/query?" + url.Values{"query": {expr}}.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var out struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("HTTP %s: %w: %.200s", resp.Status, err, body)
	}
	if out.Status != "success" {
		return nil, fmt.Errorf("status %s: %s: %s", out.Status, out.ErrorType, out.Error)
	}
	res := &promResult{resultType: out.Data.ResultType}
	switch out.Data.ResultType {
	case "vector":
		var vec []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(out.Data.Result, &vec); err != nil {
			return nil, fmt.Errorf("decode vector: %w", err)
		}
		for _, v := range vec {
			f, err := sampleValue(v.Value)
			if err != nil {
				return nil, err
			}
			res.samples = append(res.samples, promSample{labels: v.Metric, value: f})
		}
	case "scalar":
		var sc [2]any
		if err := json.Unmarshal(out.Data.Result, &sc); err != nil {
			return nil, fmt.Errorf("decode scalar: %w", err)
		}
		f, err := sampleValue(sc)
		if err != nil {
			return nil, err
		}
		res.samples = append(res.samples, promSample{value: f})
	default:
		return nil, fmt.Errorf("result type %q; want vector or scalar", out.Data.ResultType)
	}
	return res, nil
}

// sampleValue decodes [timestamp, "value"].
func sampleValue(v [2]any) (float64, error) {
	s, ok := v[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", v[1])
	}
	return strconv.ParseFloat(s, 64)
}
