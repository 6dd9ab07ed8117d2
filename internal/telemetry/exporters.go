package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// envExport holds the exporters the OTEL_* environment asks for. Setup
// hands each one to a provider and clears the field; close shuts down
// whatever was not handed over.
type envExport struct {
	spans   sdktrace.SpanExporter
	metrics sdkmetric.Reader
	logs    sdklog.Exporter

	spansOn, metricsOn, logsOn bool
}

// envExporters creates the OTLP (or other autoexport) exporters for each
// signal the environment enables. A signal is enabled when
// OTEL_<SIGNAL>_EXPORTER is set (to anything but "none"), or when an OTLP
// endpoint is set for it (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT). Unlike the OTel default, nothing is
// exported to localhost:4318 when the environment is silent.
// OTEL_SDK_DISABLED=true disables all of them.
func envExporters(ctx context.Context) (*envExport, error) {
	if err := checkExporterEnv(os.Getenv); err != nil {
		return nil, err
	}
	e := &envExport{}
	fail := func(signal string, err error) (*envExport, error) {
		_ = e.close(ctx)
		return nil, fmt.Errorf("telemetry: %s exporter from OTEL_* environment: %w", signal, err)
	}
	if signalWanted("TRACES") {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return fail("traces", err)
		}
		if !autoexport.IsNoneSpanExporter(exp) {
			e.spans, e.spansOn = exp, true
		}
	}
	if signalWanted("METRICS") {
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return fail("metrics", err)
		}
		if !autoexport.IsNoneMetricReader(r) {
			e.metrics, e.metricsOn = r, true
		}
	}
	if signalWanted("LOGS") {
		exp, err := autoexport.NewLogExporter(ctx)
		if err != nil {
			return fail("logs", err)
		}
		if !autoexport.IsNoneLogExporter(exp) {
			e.logs, e.logsOn = exp, true
		}
	}
	return e, nil
}

// exporterNames are the values autoexport knows for each signal's
// OTEL_<SIGNAL>_EXPORTER; otlpProtocols those of OTEL_EXPORTER_OTLP_PROTOCOL
// and its per-signal forms.
var (
	exporterNames = map[string][]string{
		"TRACES":  {"otlp", "console", "none"},
		"METRICS": {"otlp", "prometheus", "console", "none"},
		"LOGS":    {"otlp", "console", "none"},
	}
	otlpProtocols = []string{"grpc", "http/protobuf"}
)

// checkExporterEnv refuses an OTEL_* variable whose value names no exporter
// or OTLP protocol, naming the variable, its value and the values it takes
// (autoexport says only "unknown exporter or metrics producer"). Nothing is
// checked under OTEL_SDK_DISABLED=true, which turns export off.
func checkExporterEnv(getenv func(string) string) error {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil
	}
	check := func(key string, known []string) error {
		if v := getenv(key); v != "" && !slices.Contains(known, v) {
			return fmt.Errorf("telemetry: %s=%q is not one the router knows; want %s", key, v, orList(known))
		}
		return nil
	}
	for _, signal := range []string{"TRACES", "METRICS", "LOGS"} {
		if err := check("OTEL_"+signal+"_EXPORTER", exporterNames[signal]); err != nil {
			return err
		}
		if err := check("OTEL_EXPORTER_OTLP_"+signal+"_PROTOCOL", otlpProtocols); err != nil {
			return err
		}
	}
	return check("OTEL_EXPORTER_OTLP_PROTOCOL", otlpProtocols)
}

// orList writes values as "a, b or c".
func orList(values []string) string {
	if len(values) < 2 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

func signalWanted(signal string) bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if os.Getenv("OTEL_"+signal+"_EXPORTER") != "" {
		return true
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" ||
		os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// close shuts down the exporters not handed to a provider.
func (e *envExport) close(ctx context.Context) error {
	var errs []error
	if e.spans != nil {
		errs = append(errs, e.spans.Shutdown(ctx))
		e.spans = nil
	}
	if e.metrics != nil {
		errs = append(errs, e.metrics.Shutdown(ctx))
		e.metrics = nil
	}
	if e.logs != nil {
		errs = append(errs, e.logs.Shutdown(ctx))
		e.logs = nil
	}
	return errors.Join(errs...)
}

func serviceAttrs(name, version string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if version != "" {
		attrs = append(attrs, attribute.String("service.version", version))
	}
	return attrs
}
