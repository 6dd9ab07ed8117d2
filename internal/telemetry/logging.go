package telemetry

import (
	"context"
	"log/slog"
	"regexp"

	"go.opentelemetry.io/contrib/bridges/otelslog"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"
)

// fanout returns the handler behind Logger(): the stderr handler and, when
// OTel logs are exported, the otelslog bridge filtered to level.
func fanout(stderr slog.Handler, bridge otellog.LoggerProvider, level slog.Leveler) slog.Handler {
	stderr = &traceHandler{next: stderr}
	if bridge == nil {
		return stderr
	}
	h := otelslog.NewHandler(ScopeName, otelslog.WithLoggerProvider(bridge))
	return slog.NewMultiHandler(stderr, &levelHandler{level: level, next: h})
}

// traceHandler adds trace_id and span_id from the context, so stderr lines
// can be joined with traces too.
type traceHandler struct{ next slog.Handler }

func (h *traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone()
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{next: h.next.WithAttrs(as)}
}

func (h *traceHandler) WithGroup(name string) slog.Handler {
	return &traceHandler{next: h.next.WithGroup(name)}
}

// levelHandler drops records below level.
type levelHandler struct {
	level slog.Leveler
	next  slog.Handler
}

func (h *levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() && h.next.Enabled(ctx, l)
}

func (h *levelHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.next.Handle(ctx, r)
}

func (h *levelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &levelHandler{level: h.level, next: h.next.WithAttrs(as)}
}

func (h *levelHandler) WithGroup(name string) slog.Handler {
	return &levelHandler{level: h.level, next: h.next.WithGroup(name)}
}

// componentKey is the attribute that names the part of the router a log
// line comes from.
const componentKey = "component"

// componentHandler keeps one "component" attribute per line: a logger made
// with With("component", ...) from one that already has a component names
// the innermost part only, where a plain handler would write the key twice
// (which JSON readers reject or read as either value).
type componentHandler struct {
	next      slog.Handler
	component slog.Value // zero until a component is set
	set       bool
}

func newComponentHandler(next slog.Handler) slog.Handler { return &componentHandler{next: next} }

func (h *componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *componentHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.set {
		out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
		out.AddAttrs(slog.Attr{Key: componentKey, Value: h.component})
		r.Attrs(func(a slog.Attr) bool {
			out.AddAttrs(a)
			return true
		})
		r = out
	}
	return h.next.Handle(ctx, r)
}

func (h *componentHandler) WithAttrs(as []slog.Attr) slog.Handler {
	out := *h
	rest := make([]slog.Attr, 0, len(as))
	for _, a := range as {
		if a.Key == componentKey {
			out.component, out.set = a.Value, true
			continue
		}
		rest = append(rest, a)
	}
	if len(rest) > 0 {
		out.next = h.next.WithAttrs(rest)
	}
	return &out
}

// WithGroup ends the handling of "component": attributes inside a group
// are the group's. A component set before stays at the top of the line.
func (h *componentHandler) WithGroup(name string) slog.Handler {
	next := h.next
	if h.set {
		next = next.WithAttrs([]slog.Attr{{Key: componentKey, Value: h.component}})
	}
	return next.WithGroup(name)
}

// secretKey matches attribute keys whose string values must not be logged.
var secretKey = regexp.MustCompile(`(?i)(authorization|bearer|token|secret|password|passwd|cookie|api[_-]?key|credential)`)

// Redacted replaces the value of a secret-looking attribute.
const Redacted = "REDACTED"

// redactHandler replaces the values of attributes whose keys look like
// secrets (authorization, token, password, ...) with "REDACTED", inside
// groups too. Numbers and booleans pass, so counts such as "tokens": 812
// survive. It is a safety net: secret types should also implement
// slog.LogValuer.
type redactHandler struct{ next slog.Handler }

func newRedactHandler(next slog.Handler) slog.Handler { return &redactHandler{next: next} }

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

func (h *redactHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(redactAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = redactAttr(a)
	}
	return &redactHandler{next: h.next.WithAttrs(red)}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{next: h.next.WithGroup(name)}
}

func redactAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindGroup:
		g := v.Group()
		red := make([]slog.Attr, len(g))
		for i, ga := range g {
			red[i] = redactAttr(ga)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(red...)}
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration:
		return slog.Attr{Key: a.Key, Value: v}
	}
	if secretKey.MatchString(a.Key) {
		return slog.String(a.Key, Redacted)
	}
	return slog.Attr{Key: a.Key, Value: v}
}
