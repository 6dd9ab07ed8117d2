package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// promFamilies maps each OTel metric name to the Prometheus metric family
// served on /metrics under telemetry.TranslationStrategy. docs/telemetry.md
// has the same table.
var promFamilies = map[string]string{
	telemetry.MetricMatchDuration:     "skillrouter_match_duration_seconds",
	telemetry.MetricMatchCandidates:   "skillrouter_match_candidates",
	telemetry.MetricMatchAbstentions:  "skillrouter_match_abstentions_total",
	telemetry.MetricMatchSelections:   "skillrouter_match_selections_total",
	telemetry.MetricLoads:             "skillrouter_loads_total",
	telemetry.MetricLoadDuration:      "skillrouter_load_duration_seconds",
	telemetry.MetricLoadTokens:        "skillrouter_load_tokens_total",
	telemetry.MetricLoadTruncations:   "skillrouter_load_truncations_total",
	telemetry.MetricResourceRequests:  "skillrouter_resource_requests_total",
	telemetry.MetricResourceServed:    "skillrouter_resource_served_bytes_total",
	telemetry.MetricExecDecisions:     "skillrouter_exec_decisions_total",
	telemetry.MetricExecResults:       "skillrouter_exec_results_total",
	telemetry.MetricExecDuration:      "skillrouter_exec_duration_seconds",
	telemetry.MetricEmbedFallbacks:    "skillrouter_embed_fallbacks_total",
	telemetry.MetricEmbedCacheHits:    "skillrouter_embed_cache_hits_total",
	telemetry.MetricEmbedCacheMisses:  "skillrouter_embed_cache_misses_total",
	telemetry.MetricIndexSkills:       "skillrouter_index_skills",
	telemetry.MetricReindexDuration:   "skillrouter_index_reindex_duration_seconds",
	telemetry.MetricAdminCalls:        "skillrouter_admin_calls_total",
	telemetry.MetricAuthFailures:      "skillrouter_auth_failures_total",
	telemetry.MetricRPCServerDuration: "rpc_server_call_duration_seconds",
}

// scrape fetches /metrics from tel's admin address and parses it.
func scrape(t *testing.T, tel *telemetry.Telemetry) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + tel.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s: %s", resp.Status, b)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// seriesNames returns every series name a Prometheus server would store
// from fams: histogram families expand to _bucket, _sum and _count.
func seriesNames(fams map[string]*dto.MetricFamily) map[string]bool {
	names := make(map[string]bool)
	for name, f := range fams {
		switch f.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	return names
}

// scrapeAfterTraffic sets up telemetry with /metrics on a free loopback
// port, records one of each event and makes two gRPC calls, then scrapes.
func scrapeAfterTraffic(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	m := setupMem(t, telemetry.Config{AdminAddr: "127.0.0.1:0"})
	recordAll(t, m.Telemetry)
	cc, srv := startGRPC(t, m.Telemetry)
	ctx := context.Background()
	if err := callEcho(ctx, cc, "Ping"); err != nil {
		t.Fatal(err)
	}
	_ = callEcho(ctx, cc, "Fail")
	srv.GracefulStop()
	return scrape(t, m.Telemetry)
}

func TestMetricsEndpoint(t *testing.T) {
	fams := scrapeAfterTraffic(t)
	for otelName, prom := range promFamilies {
		if _, ok := fams[prom]; !ok {
			t.Errorf("%s: family %s not served", otelName, prom)
		}
	}
	wantTypes := map[string]dto.MetricType{
		"skillrouter_match_duration_seconds":  dto.MetricType_HISTOGRAM,
		"skillrouter_match_abstentions_total": dto.MetricType_COUNTER,
		"skillrouter_index_skills":            dto.MetricType_GAUGE,
		"rpc_server_call_duration_seconds":    dto.MetricType_HISTOGRAM,
	}
	for name, want := range wantTypes {
		if f, ok := fams[name]; ok && f.GetType() != want {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), want)
		}
	}
	// Labels the dashboard groups by.
	wantLabels := map[string][]string{
		"rpc_server_call_duration_seconds":           {"rpc_method", "rpc_response_status_code"},
		"skillrouter_loads_total":                    {"level", "skill", "truncated"},
		"skillrouter_exec_results_total":             {"outcome", "error_type"},
		"skillrouter_match_abstentions_total":        {"reason"},
		"skillrouter_resource_requests_total":        {"allowed", "reason"},
		"skillrouter_index_skills":                   {"state"},
		"skillrouter_index_reindex_duration_seconds": {"outcome", "full"},
	}
	for name, labels := range wantLabels {
		f, ok := fams[name]
		if !ok {
			continue
		}
		have := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = true
			}
		}
		for _, l := range labels {
			if !have[l] {
				t.Errorf("%s: label %s missing (have %v)", name, l, have)
			}
		}
	}
	// Go runtime and process metrics come from the same registry.
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "go_gc_heap_live_bytes", "go_gc_heap_goal_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s not served", name)
		}
	}
}

func TestMetricsEndpointOnlyGET(t *testing.T) {
	m := setupMem(t, telemetry.Config{AdminAddr: "127.0.0.1:0"})
	resp, err := http.Post("http://"+m.AdminAddr()+"/metrics", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics: got %s, want 405", resp.Status)
	}
	resp, err = http.Get("http://" + m.AdminAddr() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/: got %s, want 404", resp.Status)
	}
}

func TestAdminShutdownClosesListener(t *testing.T) {
	clearEnv(t)
	tel, err := telemetry.Setup(context.Background(), telemetry.Config{AdminAddr: "127.0.0.1:0", Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	addr := tel.AdminAddr()
	if addr == "" || strings.HasSuffix(addr, ":0") {
		t.Fatalf("AdminAddr: got %q, want a bound port", addr)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Error("GET /metrics after Shutdown: got a response, want a connection error")
	}
}

// TestMetricsServedBeforeTheyRecord: a fresh router's /metrics already
// serves every counter and histogram (at zero, labelled with their scope
// only), so a dashboard shows 0 instead of "No data"; once an instrument
// records, its real series replace the zero one.
func TestMetricsServedBeforeTheyRecord(t *testing.T) {
	m := setupMem(t, telemetry.Config{AdminAddr: "127.0.0.1:0"})
	m.GRPCServerHandler()
	fams := scrape(t, m.Telemetry)
	for otelName, prom := range promFamilies {
		if otelName == telemetry.MetricIndexSkills {
			continue // a gauge: the daemon's function reports it
		}
		f, ok := fams[prom]
		if !ok {
			t.Errorf("%s: family %s not served before it records", otelName, prom)
			continue
		}
		for _, s := range f.GetMetric() {
			if v := s.GetCounter().GetValue() + float64(s.GetHistogram().GetSampleCount()); v != 0 {
				t.Errorf("%s: %v before anything happened", prom, s)
			}
			if len(s.GetLabel()) != 1 || s.GetLabel()[0].GetName() != "otel_scope_name" || s.GetLabel()[0].GetValue() == "" {
				t.Errorf("%s: zero series labelled %v, want its scope only", prom, s.GetLabel())
			}
		}
	}

	m.Recorder().ExecReported(context.Background(), telemetry.ExecResult{Skill: "s", Script: "x.sh", ExitCode: 3})
	f := scrape(t, m.Telemetry)["skillrouter_exec_results_total"]
	if len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter().GetValue() != 1 || len(f.GetMetric()[0].GetLabel()) < 3 {
		t.Errorf("after one result: %v, want its one labelled series only", f.GetMetric())
	}
}

// TestStateGauges: the gauges alerting rules read are served under their
// Prometheus names: skillrouter_ready follows what /readyz says from the
// start; skillrouter_degraded and skillrouter_upstream_servers (every
// state, 0 when no server is in it) follow the router's state once the
// daemon registers it.
func TestStateGauges(t *testing.T) {
	var ready atomic.Bool
	m := setupMem(t, telemetry.Config{AdminAddr: "127.0.0.1:0", Ready: func() (bool, string) { return ready.Load(), "" }})
	value := func(fams map[string]*dto.MetricFamily, name, state string) (float64, bool) {
		for _, s := range fams[name].GetMetric() {
			st := ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "state" {
					st = l.GetValue()
				}
			}
			if st == state {
				return s.GetGauge().GetValue(), true
			}
		}
		return 0, false
	}
	fams := scrape(t, m.Telemetry)
	if v, ok := value(fams, "skillrouter_ready", ""); !ok || v != 0 {
		t.Errorf("skillrouter_ready before the router serves: %v %v, want 0", v, ok)
	}
	if _, ok := fams["skillrouter_degraded"]; ok {
		t.Error("skillrouter_degraded served before the router's state is registered")
	}
	ready.Store(true)
	m.Recorder().RegisterRouterState(func() telemetry.RouterState {
		return telemetry.RouterState{Degraded: true, Servers: map[skill.ServerState]int64{skill.ServerReady: 2, skill.ServerFailed: 1}}
	})
	fams = scrape(t, m.Telemetry)
	for _, want := range []struct {
		name, state string
		v           float64
	}{
		{"skillrouter_ready", "", 1},
		{"skillrouter_degraded", "", 1},
		{"skillrouter_upstream_servers", "ready", 2},
		{"skillrouter_upstream_servers", "failed", 1},
		{"skillrouter_upstream_servers", "starting", 0},
		{"skillrouter_upstream_servers", "disabled", 0},
		{"skillrouter_upstream_servers", "stopped", 0},
	} {
		if v, ok := value(fams, want.name, want.state); !ok || v != want.v {
			t.Errorf("%s{state=%q} = %v (served %v), want %v", want.name, want.state, v, ok, want.v)
		}
	}
	m.Recorder().RegisterRouterState(nil)
	if _, ok := scrape(t, m.Telemetry)["skillrouter_degraded"]; ok {
		t.Error("skillrouter_degraded still served once the router's state is unregistered")
	}
}
