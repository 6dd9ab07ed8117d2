package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	otellog "go.opentelemetry.io/otel/log"
	lognoop "go.opentelemetry.io/otel/log/noop"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is the service.name resource attribute unless
// Config.ServiceName or OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "mcpsag-router"

// cardinalityLimit caps the attribute sets per metric instrument; sets past
// it are folded into one overflow series (otel.metric.overflow=true).
const cardinalityLimit = 2000

// Config says what to export and how to treat sensitive inputs. The zero
// value exports nothing unless OTEL_* variables ask for OTLP.
type Config struct {
	// ServiceName and ServiceVersion become service.name and
	// service.version. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
	// override them.
	ServiceName    string
	ServiceVersion string

	// AdminAddr is where to serve Prometheus /metrics, /healthz and
	// /readyz, for example 127.0.0.1:9464; "" serves nothing. Port 0 picks
	// a free port (see Telemetry.AdminAddr).
	AdminAddr string
	// Ready answers /readyz: whether the process serves, and a word on
	// why not. Nil means always ready.
	Ready func() (ok bool, why string)
	// Pprof serves Go's runtime profiles (net/http/pprof) under
	// /debug/pprof/ on the admin address.
	Pprof bool

	// RecordTaskText puts task text into skill_selected events. Off by
	// default: events carry a keyed hash of the task only.
	RecordTaskText bool
	// TaskHashKey keys the task hash (HMAC-SHA256). Empty means a random key
	// per process, so equal tasks hash alike within one run only.
	TaskHashKey []byte

	// Logger receives telemetry's own messages and the audit records, and
	// is the stderr half of Logger(). Nil means JSON to stderr at LogLevel.
	Logger *slog.Logger
	// LogLevel is the minimum level Logger() sends to OTLP, and the level
	// of the default stderr logger. Nil means slog.LevelInfo.
	LogLevel slog.Leveler

	// Extra destinations, used in addition to the OTEL_* ones. Tests and
	// embedders pass in-memory exporters here.
	SpanProcessors []sdktrace.SpanProcessor
	MetricReaders  []sdkmetric.Reader
	LogProcessors  []sdklog.Processor
}

// Telemetry owns the OTel providers, the admin listener and the Recorder.
// Its methods are safe for concurrent use.
type Telemetry struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	lp   otellog.LoggerProvider
	prop propagation.TextMapPropagator

	base   *slog.Logger // Config.Logger: stderr only
	logger *slog.Logger // base + OTel bridge, redacted
	rec    *Recorder

	metrics http.Handler
	zero    *zeroFill // nil when /metrics is off
	admin   *adminServer

	grpcOnce    sync.Once
	grpcHandler *GRPCHandler

	shutdown     []func(context.Context) error // in order of creation
	flush        []func(context.Context) error // the providers' ForceFlush
	shutdownOnce sync.Once
	shutdownErr  error
}

// flushTimeout bounds the final flush of the providers at Shutdown, and
// stopAfterFailedFlush what their stop may take once it failed: OTLP over
// gRPC retries a collector that is down with a backoff of seconds, while
// over HTTP a refused connection fails at once, so a stop waits no more
// for one protocol than for the other. A collector that answers takes
// milliseconds.
const (
	flushTimeout         = time.Second
	stopAfterFailedFlush = 100 * time.Millisecond
)

// Setup builds the providers from cfg and the OTEL_* environment, opens the
// admin listener when cfg.AdminAddr is set, and returns the Telemetry. It
// returns an error when an OTEL_* variable names an unknown exporter or
// protocol, or when the admin address cannot be bound. Call Shutdown to
// flush and release everything.
func Setup(ctx context.Context, cfg Config) (*Telemetry, error) {
	t := &Telemetry{
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	raw, level := stderrHandler(cfg)
	stderr := newComponentHandler(newRedactHandler(raw))
	t.base = slog.New(stderr).With("component", "telemetry")

	ok := false
	defer func() {
		if !ok {
			t.closeAll(context.WithoutCancel(ctx))
		}
	}()

	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	exp, err := envExporters(ctx)
	if err != nil {
		return nil, err
	}
	// Exporters created so far must be closed if a later step fails.
	t.shutdown = append(t.shutdown, exp.close)

	if err := t.setupMetrics(cfg, res, exp); err != nil {
		return nil, err
	}
	logsOn := t.setupLogs(cfg, res, exp)
	t.setupTraces(cfg, res, exp, logsOn)

	var bridge otellog.LoggerProvider
	if logsOn {
		bridge = t.lp
	}
	t.logger = slog.New(newComponentHandler(newRedactHandler(fanout(raw, bridge, level))))

	if err := t.startRecorder(cfg, slog.New(stderr)); err != nil {
		return nil, err
	}

	t.base.Debug("telemetry ready",
		"otlp_traces", exp.spansOn, "otlp_metrics", exp.metricsOn, "otlp_logs", exp.logsOn,
		"admin_addr", t.AdminAddr())
	ok = true
	return t, nil
}

// stderrHandler is the handler of the stderr log, cfg.Logger's or JSON to
// stderr, and the level of the logs: cfg.LogLevel, else Info.
func stderrHandler(cfg Config) (slog.Handler, slog.Leveler) {
	level := cfg.LogLevel
	if level == nil {
		level = slog.LevelInfo
	}
	if cfg.Logger != nil {
		return cfg.Logger.Handler(), level
	}
	return slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}), level
}

// startRecorder makes the Recorder over the providers, declares its
// instruments to /metrics, and serves the admin address when cfg has one.
func (t *Telemetry) startRecorder(cfg Config, log *slog.Logger) error {
	var err error
	t.rec, err = newRecorder(t.mp, t.lp, log, cfg)
	if err != nil {
		return err
	}
	if t.zero != nil {
		t.zero.declare(t.rec.instruments...)
	}
	if cfg.AdminAddr == "" {
		return nil
	}
	t.admin, err = startAdmin(cfg.AdminAddr, t.metrics, cfg.Ready, cfg.Pprof, t.base)
	if err != nil {
		return err
	}
	t.shutdown = append(t.shutdown, t.admin.shutdown)
	return nil
}

// sdkProvider is an SDK provider as the Telemetry stops and flushes it.
type sdkProvider interface {
	Shutdown(context.Context) error
	ForceFlush(context.Context) error
}

// own has Shutdown flush and stop p.
func (t *Telemetry) own(p sdkProvider) {
	t.shutdown = append(t.shutdown, p.Shutdown)
	t.flush = append(t.flush, p.ForceFlush)
}

// setupMetrics makes the meter provider: Prometheus on the admin address,
// OTLP, and cfg's extra readers; a no-op one when there is none of them.
func (t *Telemetry) setupMetrics(cfg Config, res *resource.Resource, exp *envExport) error {
	readers := append([]sdkmetric.Reader(nil), cfg.MetricReaders...)
	if exp.metrics != nil {
		readers = append(readers, exp.metrics)
	}
	if cfg.AdminAddr != "" {
		reader, handler, zero, err := newPrometheus()
		if err != nil {
			return err
		}
		readers = append(readers, reader)
		t.metrics, t.zero = handler, zero
	}
	if len(readers) == 0 {
		t.mp = metricnoop.NewMeterProvider()
		return nil
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithCardinalityLimit(cardinalityLimit)}
	for _, r := range readers {
		opts = append(opts, sdkmetric.WithReader(r))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	exp.metrics = nil // owned by mp now
	t.mp = mp
	t.own(mp)
	return nil
}

// setupLogs makes the logger provider: OTLP and cfg's extra processors; a
// no-op one when there is none of them. It reports whether logs are
// exported.
func (t *Telemetry) setupLogs(cfg Config, res *resource.Resource, exp *envExport) bool {
	procs := append([]sdklog.Processor(nil), cfg.LogProcessors...)
	if exp.logs != nil {
		procs = append(procs, sdklog.NewBatchProcessor(exp.logs))
		exp.logs = nil
	}
	if len(procs) == 0 {
		t.lp = lognoop.NewLoggerProvider()
		return false
	}
	opts := []sdklog.LoggerProviderOption{sdklog.WithResource(res)}
	for _, p := range procs {
		opts = append(opts, sdklog.WithProcessor(p))
	}
	lp := sdklog.NewLoggerProvider(opts...)
	t.lp = lp
	t.own(lp)
	return true
}

// setupTraces makes the tracer provider: OTLP and cfg's extra processors;
// a no-op one when there is none of them and logs are not exported (an SDK
// tracer also runs for logs alone, so that log records carry trace and
// span ids).
func (t *Telemetry) setupTraces(cfg Config, res *resource.Resource, exp *envExport, logsOn bool) {
	procs := append([]sdktrace.SpanProcessor(nil), cfg.SpanProcessors...)
	if exp.spans != nil {
		procs = append(procs, sdktrace.NewBatchSpanProcessor(exp.spans))
		exp.spans = nil
	}
	if len(procs) == 0 && !logsOn {
		t.tp = tracenoop.NewTracerProvider()
		return
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range procs {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t.tp = tp
	t.own(tp)
}

// Shutdown flushes the providers, all at once, within flushTimeout (and
// ctx), then stops the admin listener and the providers, in reverse order
// of creation: within ctx when the flush went through, within
// stopAfterFailedFlush when it did not (a collector that does not answer
// is not waited for twice). It is safe to call more than once and on a nil
// *Telemetry; later calls return the first call's result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.shutdownOnce.Do(func() {
		stopCtx := ctx
		if err := t.flushAll(ctx); err != nil {
			var cancel context.CancelFunc
			stopCtx, cancel = context.WithTimeout(ctx, stopAfterFailedFlush)
			defer cancel()
		}
		t.shutdownErr = t.closeAll(stopCtx)
	})
	return t.shutdownErr
}

// flushAll flushes every provider at once, within flushTimeout.
func (t *Telemetry) flushAll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, flushTimeout)
	defer cancel()
	errs := make([]error, len(t.flush))
	var wg sync.WaitGroup
	for i, flush := range t.flush {
		wg.Go(func() { errs[i] = flush(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (t *Telemetry) closeAll(ctx context.Context) error {
	var errs []error
	for i := len(t.shutdown) - 1; i >= 0; i-- {
		if err := t.shutdown[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	t.shutdown = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("telemetry shutdown: %w", err)
	}
	return nil
}

// Recorder returns the event recorder. It is nil for a nil *Telemetry, and
// a nil *Recorder is a valid no-op.
func (t *Telemetry) Recorder() *Recorder {
	if t == nil {
		return nil
	}
	return t.rec
}

// Logger returns a logger that writes to Config.Logger and, when OTLP logs
// are exported, to the OTel log bridge with trace correlation. Attributes
// whose keys look like secrets are redacted. Give components their own
// child: Logger().With("component", "loader").
func (t *Telemetry) Logger() *slog.Logger {
	if t == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.logger
}

// TracerProvider returns the router's tracer provider, for components that
// name their own instrumentation scope (the MCP front).
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// Tracer returns the router's tracer; the Router decorator makes its spans
// (match, load, reindex, authorize_exec) with it.
func (t *Telemetry) Tracer() trace.Tracer { return t.tp.Tracer(ScopeName) }

// MetricsHandler returns the Prometheus /metrics handler, or nil when
// Config.AdminAddr was empty. It is already served on the admin address;
// use it to mount /metrics elsewhere too.
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics }

// AdminAddr returns the address /metrics is served on (with the real port
// when Config.AdminAddr asked for port 0), or "" when it is off.
func (t *Telemetry) AdminAddr() string {
	if t == nil || t.admin == nil {
		return ""
	}
	return t.admin.addr()
}

// newResource describes the service: service.name, service.version and the
// SDK, overridden by OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []resource.Option{
		resource.WithAttributes(serviceAttrs(name, cfg.ServiceVersion)...),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last, so OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	}
	res, err := resource.New(ctx, attrs...)
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	return res, nil
}
