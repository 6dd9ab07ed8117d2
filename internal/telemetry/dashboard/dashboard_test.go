package dashboard_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/telemetry/dashboard"
)

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`rate(http_requests_total{job="a",path=~"/x{1,2}"}[5m])`, []string{"http_requests_total"}},
		{`histogram_quantile(0.95, sum by (le, rpc_method) (rate(rpc_server_call_duration_seconds_bucket{job=~".*"}[1m])))`,
			[]string{"rpc_server_call_duration_seconds_bucket"}},
		{`sum(rate(a_total[1m])) by (reason) / ignoring (code) group_left sum(rate(b_total[1m]))`, []string{"a_total", "b_total"}},
		{`a / on() group_left(x) b`, []string{"a", "b"}},
		{`topk(10, sum without (instance) (increase(c_total[1h] offset 5m)))`, []string{"c_total"}},
		{`x > bool 1e-9 and y unless z or 0x1F`, []string{"x", "y", "z"}},
		{`count_values("value with spaces and up", w)`, []string{"w"}},
		{`rate(m[5m:30s]) * -2.5e+3 + .5`, []string{"m"}},
		{`scalar(sum(k)) + vector(1)`, []string{"k"}},
		{`ns:metric:rate5m{a="b"}`, []string{"ns:metric:rate5m"}},
		{`{__name__="only_by_name"}`, nil},
	}
	for _, tt := range tests {
		got := dashboard.MetricNames(tt.expr)
		if !slices.Equal(got, tt.want) {
			t.Errorf("MetricNames(%q): got %v, want %v", tt.expr, got, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"job": "router", "instance": ".*"}
	tests := []struct {
		expr, want, wantErr string
	}{
		{`rate(x{job=~"$job",instance=~"${instance}"}[$__rate_interval])`, `rate(x{job=~"router",instance=~".*"}[1m])`, ""},
		{`increase(x{job=~"[[job]]"}[$__range])`, `increase(x{job=~"router"}[1h])`, ""},
		{`x{job=~"${job:regex}"}`, `x{job=~"router"}`, ""},
		{`x{a="$nope"}`, "", "nope"},
	}
	for _, tt := range tests {
		got, err := dashboard.Expand(tt.expr, vars)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Expand(%q): got err %v, want one naming %q", tt.expr, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Expand(%q): got %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}

func TestQueries(t *testing.T) {
	doc := `{
	  "uid": "u", "schemaVersion": 39,
	  "panels": [
	    {"type": "row", "title": "r", "panels": [
	      {"type": "timeseries", "title": "inner", "targets": [{"refId": "A", "expr": "a_total"}]}
	    ]},
	    {"type": "stat", "title": "s", "targets": [{"refId": "A", "expr": "b"}, {"refId": "B", "expr": " "}]}
	  ],
	  "templating": {"list": [
	    {"name": "job", "type": "query", "query": {"query": "label_values(up{x=\"1\"}, job)"}},
	    {"name": "old", "type": "query", "query": "label_values(c, instance)"},
	    {"name": "ds", "type": "datasource", "query": "prometheus"}
	  ]}
	}`
	d, err := dashboard.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := d.Queries()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range qs {
		got = append(got, q.Expr)
	}
	want := []string{"a_total", "b", `up{x="1"}`, "c"}
	if !slices.Equal(got, want) {
		t.Errorf("Queries: got %q, want %q", got, want)
	}
}
