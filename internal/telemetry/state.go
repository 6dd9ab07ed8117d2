package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpsag/router/internal/skill"
)

// RouterState is a snapshot of what the alerting gauges report besides
// readiness: skillrouter.degraded and skillrouter.upstream.servers.
type RouterState struct {
	// Degraded is Status's: matching uses keywords only, or the cache is
	// not where it belongs.
	Degraded bool
	// Servers counts the configured MCP servers by state (skill.ServerState).
	Servers map[skill.ServerState]int64
}

// serverStates are the states skillrouter.upstream.servers reports, each
// every time (0 when no server is in it), so that a rule on one state
// always has a series to read.
var serverStates = []skill.ServerState{skill.ServerDisabled, skill.ServerStarting, skill.ServerReady, skill.ServerFailed, skill.ServerStopped}

// RegisterRouterState sets the function the skillrouter.degraded and
// skillrouter.upstream.servers gauges read at each collection; like
// RegisterIndexGauge's, it must be fast. Until it is called, and after it
// is called with nil, they report nothing.
func (r *Recorder) RegisterRouterState(f func() RouterState) {
	if r == nil {
		return
	}
	r.stateFn.Store(&f)
}

// registerStateGauges makes the gauges alerting rules read: readiness, from
// ready (the function /readyz answers with; the gauge reports 0 without
// one), degraded matching and the MCP servers' states.
func (r *Recorder) registerStateGauges(m metric.Meter, ready func() (bool, string)) error {
	// No unit: a unit of "1" would be served as skillrouter_ready_ratio.
	readyG, err := m.Int64ObservableGauge(MetricReady,
		metric.WithDescription("1 while the router serves an index and is not stopping (what /readyz says), else 0."))
	if err != nil {
		return err
	}
	degraded, err := m.Int64ObservableGauge(MetricDegraded,
		metric.WithDescription("1 while Status reports the router degraded (keywords only, or a cache outside the state directory), else 0."))
	if err != nil {
		return err
	}
	servers, err := m.Int64ObservableGauge(MetricUpstreamServers, metric.WithUnit("{server}"),
		metric.WithDescription("Configured MCP servers, by state (disabled, starting, ready, failed, stopped)."))
	if err != nil {
		return err
	}
	_, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		ok := false
		if ready != nil {
			ok, _ = ready()
		}
		o.ObserveInt64(readyG, oneIf(ok))
		fp := r.stateFn.Load()
		if fp == nil || *fp == nil {
			return nil
		}
		st := (*fp)()
		o.ObserveInt64(degraded, oneIf(st.Degraded))
		for _, s := range serverStates {
			o.ObserveInt64(servers, st.Servers[s], metric.WithAttributes(attribute.String(keyState, string(s))))
		}
		return nil
	}, readyG, degraded, servers)
	return err
}

func oneIf(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
