// Package telemetry sets up OpenTelemetry for the router and records its
// skill events.
//
// Setup builds the trace, metric and log providers. OTLP export is driven by
// the standard OTEL_* environment variables (through autoexport); a Prometheus
// /metrics endpoint can be served on a separate admin address. When neither is
// configured, everything is a no-op and costs next to nothing.
//
// The daemon wires three things from a *Telemetry:
//
//   - GRPCServerHandler, the otelgrpc stats handler for the gRPC server;
//   - Logger, a slog.Logger that writes JSON to stderr and, when OTLP logs
//     are on, to the OTel log bridge (secrets are redacted on the way);
//   - Recorder, whose methods (SkillSelected, SkillLoaded, ...) emit the
//     original design's events as OTel log records correlated with the
//     active span, and update the matching counters and histograms.
//
// Privacy rules: task text is recorded as a keyed hash unless
// Config.RecordTaskText is set; skill bodies and bearer tokens are never
// accepted by the Recorder, and the Logger redacts secret-looking keys. The
// event and metric names are listed in names.go and docs/telemetry.md.
package telemetry
