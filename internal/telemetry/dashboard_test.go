package telemetry_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/telemetry/dashboard"
)

const (
	dashboardFile = "../../deploy/grafana/mcpsag-router.json"
	dashboardUID  = "mcpsag-router"
	// schemaVersion is pinned: Grafana migrates older models on load, and a
	// change here should be a deliberate re-export.
	schemaVersion = 39
)

func loadDashboard(t *testing.T) *dashboard.Dashboard {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.UID != dashboardUID {
		t.Errorf("uid: got %q, want %q", d.UID, dashboardUID)
	}
	if d.SchemaVersion != schemaVersion {
		t.Errorf("schemaVersion: got %d, want %d", d.SchemaVersion, schemaVersion)
	}
	if d.ID != nil {
		t.Errorf("id: got %d, want null (exported for sharing)", *d.ID)
	}
	if len(d.Inputs) != 1 || d.Inputs[0].Name != "DS_PROMETHEUS" || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != "prometheus" {
		t.Errorf("__inputs: got %+v, want one prometheus datasource input DS_PROMETHEUS", d.Inputs)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	for name, typ := range map[string]string{"DS_PROMETHEUS": "datasource", "job": "query", "instance": "query"} {
		if vars[name] != typ {
			t.Errorf("variable %s: got type %q, want %q", name, vars[name], typ)
		}
	}

	const ds = "${DS_PROMETHEUS}"
	ids := map[int]string{}
	for _, p := range d.AllPanels() {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel %q: id %d also used by %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.Datasource == nil || p.Datasource.UID != ds {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, ds)
		}
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24-column grid", p.Title, g)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != ds {
				t.Errorf("panel %q %s: datasource %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, ds)
			}
			if tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: refId %q empty or repeated", p.Title, tg.RefID)
			}
			refs[tg.RefID] = true
		}
	}
}

// TestDashboardMetrics checks that every PromQL expression in the
// dashboard names only metrics /metrics actually serves after one of each
// event and a few gRPC calls, uses only defined variables, and that the
// panels the issue asks for are there.
func TestDashboardMetrics(t *testing.T) {
	d := loadDashboard(t)
	served := seriesNames(scrapeAfterTraffic(t))

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = ".*"
	}
	queries, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) < 20 {
		t.Fatalf("got %d queries, want at least 20", len(queries))
	}
	used := map[string]bool{}
	for _, q := range queries {
		expr, err := dashboard.Expand(q.Expr, vars)
		if err != nil {
			t.Errorf("%s: %v", q.Source, err)
			continue
		}
		if err := balanced(expr); err != nil {
			t.Errorf("%s: %v in %s", q.Source, err, expr)
		}
		names := dashboard.MetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric name in %s", q.Source, expr)
		}
		for _, n := range names {
			used[n] = true
			if !served[n] {
				t.Errorf("%s: metric %s is not served on /metrics", q.Source, n)
			}
		}
	}
	for _, want := range []string{
		"skillrouter_match_duration_seconds_count", "skillrouter_match_duration_seconds_bucket",
		"skillrouter_match_abstentions_total", "skillrouter_match_selections_total",
		"skillrouter_loads_total", "skillrouter_load_truncations_total", "skillrouter_load_tokens_total",
		"skillrouter_resource_requests_total", "skillrouter_exec_decisions_total", "skillrouter_exec_results_total",
		"skillrouter_embed_fallbacks_total", "skillrouter_embed_cache_hits_total", "skillrouter_embed_cache_misses_total",
		"skillrouter_index_skills", "skillrouter_index_reindex_duration_seconds_bucket", "skillrouter_admin_calls_total",
		"rpc_server_call_duration_seconds_count", "rpc_server_call_duration_seconds_bucket",
	} {
		if !used[want] {
			t.Errorf("no panel uses %s", want)
		}
	}
}

// balanced reports unbalanced brackets or quotes, the mistakes a
// hand-edited expression most often has.
func balanced(expr string) error {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inString := rune(0)
	for _, r := range expr {
		switch {
		case inString != 0:
			if r == inString {
				inString = 0
			}
		case r == '"' || r == '\'' || r == '`':
			inString = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return fmt.Errorf("unbalanced %q", r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inString != 0 || len(stack) > 0 {
		return fmt.Errorf("unclosed %q", string(stack)+string(inString))
	}
	return nil
}

func TestProvisioning(t *testing.T) {
	var dash struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "../../deploy/grafana/provisioning/dashboards/mcpsag-router.yaml", &dash)
	if dash.APIVersion != 1 || len(dash.Providers) != 1 || dash.Providers[0].Type != "file" ||
		!filepath.IsAbs(dash.Providers[0].Options.Path) {
		t.Errorf("dashboards provisioning: got %+v, want apiVersion 1 and one file provider with an absolute path", dash)
	}

	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name      string `yaml:"name"`
			Type      string `yaml:"type"`
			URL       string `yaml:"url"`
			IsDefault bool   `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, "../../deploy/grafana/provisioning/datasources/mcpsag-router.yaml", &ds)
	var prom bool
	for _, d := range ds.Datasources {
		if d.Type == "prometheus" && d.IsDefault && d.URL != "" {
			prom = true
		}
	}
	if ds.APIVersion != 1 || !prom {
		t.Errorf("datasources provisioning: got %+v, want apiVersion 1 and a default Prometheus", ds)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
