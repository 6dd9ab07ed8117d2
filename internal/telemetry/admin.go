package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// TranslationStrategy is how OTel metric names become Prometheus names on
// /metrics. It is pinned because the exporter's default is due to change:
// with it, rpc.server.call.duration (unit s) is served as
// rpc_server_call_duration_seconds_{bucket,sum,count} and counters get
// _total. Point an OTLP-to-Prometheus pipeline at the same strategy to get
// the same names.
var TranslationStrategy = otlptranslator.UnderscoreEscapingWithSuffixes

// newPrometheus returns a metric reader that serves the router's metrics,
// plus Go runtime and process metrics, from its own registry (not the
// global one), and the zero series of the instruments declared to the
// zeroFill it returns.
func newPrometheus() (sdkmetric.Reader, http.Handler, *zeroFill, error) {
	reg := prometheus.NewRegistry()
	// Beside the default Go metrics: the heap live after the last GC
	// (go_gc_heap_live_bytes), what the router really holds, and the
	// size the heap may reach before the next (go_gc_heap_goal_bytes).
	// Resident memory sits between the two.
	heap := collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/(live|goal):bytes$`)}
	if err := reg.Register(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(heap))); err != nil {
		return nil, nil, nil, fmt.Errorf("telemetry: register go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, nil, fmt.Errorf("telemetry: register process collector: %w", err)
	}
	reader, err := promexporter.New(
		promexporter.WithRegisterer(reg),
		promexporter.WithTranslationStrategy(TranslationStrategy),
	)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	zero := &zeroFill{next: reg}
	handler := promhttp.HandlerFor(zero, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
	return reader, handler, zero, nil
}

// adminServer serves /metrics, /healthz and /readyz (and, when asked,
// /debug/pprof/) on its own listener, never on the gRPC port.
type adminServer struct {
	ln  net.Listener
	srv *http.Server
}

func startAdmin(addr string, metrics http.Handler, ready func() (bool, string), profiles bool, log *slog.Logger) (*adminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("telemetry: admin listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	// /healthz answers while the process runs (liveness); /readyz only
	// while it serves an index and is not draining (readiness).
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ok, why := true, "ready"
		if ready != nil {
			ok, why = ready()
		}
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
	})
	if profiles {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	writeTimeout := 30 * time.Second
	if profiles {
		// A CPU profile or trace runs for ?seconds= (30 by default)
		// before it writes anything.
		writeTimeout = 5 * time.Minute
	}
	a := &adminServer{
		ln: ln,
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       60 * time.Second,
			MaxHeaderBytes:    16 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return a, nil
}

func (a *adminServer) addr() string { return a.ln.Addr().String() }

func (a *adminServer) shutdown(ctx context.Context) error {
	if err := a.srv.Shutdown(ctx); err != nil {
		_ = a.srv.Close()
		return fmt.Errorf("admin listener: %w", err)
	}
	return nil
}
