// Checks of the alerting rules: promtool's own check and unit tests (Debian's
// prometheus package ships promtool; .ci/run installs it), a runbook entry
// and a unit test for every alert, the metrics they read served by a real
// router, and a real Prometheus evaluating them against two routers, a
// healthy one and an unwell one.
package prometheus_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/testlog"
	"github.com/mcpsag/router/internal/upstream"
)

const (
	rulesFile   = "alerts.yaml"
	testsFile   = "alerts_test.yaml"
	runbookFile = "../../docs/operations.md"
)

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile(rulesFile)
	must(t, err)
	var doc struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	must(t, yaml.Unmarshal(data, &doc))
	var out []rule
	for _, g := range doc.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) < 10 {
		t.Fatalf("%s has %d rules; want the full set", rulesFile, len(out))
	}
	return out
}

// tool finds a Prometheus binary (prometheus, promtool), or skips.
func tool(t *testing.T, name, env string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s not found (PATH or $%s): apt-get install prometheus; .ci/run installs it", name, env)
	return ""
}

// TestRulesPassPromtool: promtool check rules finds no problem, and the
// unit tests of every alert (promtool test rules) pass.
func TestRulesPassPromtool(t *testing.T) {
	promtool := tool(t, "promtool", "MCPSAG_PROMTOOL")
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", testsFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "SUCCESS") {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// TestEveryAlertHasARunbookAndATest: each alert has a severity, a summary,
// a description, a runbook_url pointing at its entry in docs/operations.md
// (which has that entry, with what it means, what to look at and what to
// do), and a unit test that makes it fire.
func TestEveryAlertHasARunbookAndATest(t *testing.T) {
	runbook, err := os.ReadFile(runbookFile)
	must(t, err)
	tests, err := os.ReadFile(testsFile)
	must(t, err)
	for _, r := range readRules(t) {
		if !slices.Contains([]string{"page", "ticket"}, r.Labels["severity"]) {
			t.Errorf("%s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
		}
		for _, key := range []string{"summary", "description", "runbook_url"} {
			if r.Annotations[key] == "" {
				t.Errorf("%s: no %s", r.Alert, key)
			}
		}
		anchor := strings.ToLower(r.Alert)
		if !strings.HasSuffix(r.Annotations["runbook_url"], "/docs/operations.md#"+anchor) {
			t.Errorf("%s: runbook_url %q does not point at docs/operations.md#%s", r.Alert, r.Annotations["runbook_url"], anchor)
		}
		entry := regexp.MustCompile(`(?ms)^### ` + r.Alert + `\n(.*?)(^##|\z)`).FindSubmatch(runbook)
		if entry == nil {
			t.Errorf("%s: docs/operations.md has no entry ### %s", r.Alert, r.Alert)
		} else {
			for _, part := range []string{"**Means**", "**Look at**", "**Do**"} {
				if !strings.Contains(string(entry[1]), part) {
					t.Errorf("%s: its runbook entry lacks %s", r.Alert, part)
				}
			}
		}
		if !regexp.MustCompile(`alertname: ` + r.Alert + `\n\s+exp_alerts:\n\s+- exp_labels`).Match(tests) {
			t.Errorf("%s: no unit test in %s makes it fire", r.Alert, testsFile)
		}
	}
}

// metricName is a series name the rules read from the router.
var metricName = regexp.MustCompile(`\b(?:skillrouter|rpc_server)_[a-z_]+\b`)

// TestRulesReadServedMetrics: every metric the rules read is on a fresh
// router's /metrics (the others a rule names only Prometheus makes: up).
func TestRulesReadServedMetrics(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) { c.AdminAddr = "127.0.0.1:0" }})
	resp, err := http.Get("http://" + r.Main.AdminAddr() + "/metrics")
	must(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	for _, rl := range readRules(t) {
		for _, name := range metricName.FindAllString(rl.Expr, -1) {
			if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).Match(page) {
				t.Errorf("%s reads %s, which the router's /metrics does not serve", rl.Alert, name)
			}
		}
	}
}

// TestRulesAgainstRouters runs a real Prometheus with the rules, scraping
// two routers: a healthy one, and one with a model folder that does not
// exist (degraded: keywords only) and an MCP server that cannot start.
// Every rule evaluates without error; no alert is pending or firing for
// the healthy router; the unwell one's degraded and failed-server alerts
// go pending (their "for" is minutes).
func TestRulesAgainstRouters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus; skipped with -short")
	}
	bin := tool(t, "prometheus", "MCPSAG_PROMETHEUS")
	admin := func(c *config.Config) { c.AdminAddr = "127.0.0.1:0" }
	healthy := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: admin})
	unwell := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		admin(c)
		c.Model.Dir = filepath.Join(t.TempDir(), "no-model")
		c.MCPServers = map[string]upstream.ServerConfig{"broken": {Command: filepath.Join(t.TempDir(), "no-such-server")}}
	}})
	prom := startPrometheus(t, bin, healthy.Main.AdminAddr(), unwell.Main.AdminAddr())

	want := map[string]bool{"MCPSAGRouterDegraded": true, "MCPSAGUpstreamServerFailed": true}
	var last string
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		rules, alerts := prom.rules(t)
		last = fmt.Sprintf("rules: %v\nalerts: %v", rules, alerts)
		bad := false
		for name, health := range rules {
			if health != "ok" {
				bad = true
				if time.Now().After(deadline) {
					t.Errorf("rule %s: health %q", name, health)
				}
			}
		}
		got := map[string]bool{}
		for _, a := range alerts {
			if a.instance == healthy.Main.AdminAddr() {
				t.Fatalf("alert %s is %s for the healthy router\n%s", a.name, a.state, last)
			}
			got[a.name] = true
		}
		if !bad && len(rules) == len(readRules(t)) && maps(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s, want every rule healthy and %v pending for the unwell router only:\n%s\nprometheus:\n%s", want, last, prom.logs.String())
		}
	}
}

func maps(got, want map[string]bool) bool {
	if len(got) != len(want) {
		return false
	}
	for k := range want {
		if !got[k] {
			return false
		}
	}
	return true
}

type promServer struct {
	url  string
	logs *testlog.Buffer
}

type alert struct{ name, state, instance string }

// startPrometheus runs Prometheus with the rules, scraping targets every
// second as job mcpsag-router and evaluating every second.
func startPrometheus(t *testing.T, bin string, targets ...string) *promServer {
	t.Helper()
	dir := t.TempDir()
	rules, err := filepath.Abs(rulesFile)
	must(t, err)
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = fmt.Sprintf("%q", tg)
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	must(t, os.WriteFile(cfg, fmt.Appendf(nil, `global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: mcpsag-router
    static_configs: [{targets: [%s]}]
`, rules, strings.Join(quoted, ", ")), 0o644))
	addr := daemontest.FreeAddr(t)
	p := &promServer{url: "http://" + addr, logs: &testlog.Buffer{}}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(p.url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s:\n%s", p.logs.String())
		}
	}
}

// rules returns each alerting rule's health and the alerts pending or
// firing, from /api/v1/rules.
func (p *promServer) rules(t *testing.T) (map[string]string, []alert) {
	t.Helper()
	resp, err := http.Get(p.url + "/api/v1/rules?" + url.Values{"type": {"alert"}}.Encode())
	must(t, err)
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
					Alerts    []struct {
						Labels map[string]string `json:"labels"`
						State  string            `json:"state"`
					} `json:"alerts"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&body))
	health := map[string]string{}
	var alerts []alert
	for _, g := range body.Data.Groups {
		for _, r := range g.Rules {
			health[r.Name] = r.Health + r.LastError
			for _, a := range r.Alerts {
				alerts = append(alerts, alert{r.Name, a.State, a.Labels["instance"]})
			}
		}
	}
	return health, alerts
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
