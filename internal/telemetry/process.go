package telemetry

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"google.golang.org/grpc/grpclog"
)

// RouteProcessLogs sends what libraries write through the process-wide
// loggers to w as JSON lines, like the router's own log, so that a
// daemon's stderr holds nothing else: the standard log package and slog's
// default logger (net/http's server errors among them), OpenTelemetry's
// error handler (a failed export) and logger, and gRPC's logger (its
// errors; its info and warnings are dropped, as gRPC does by default).
// Each line carries "component": "log", "otel" or "grpc".
//
// These loggers are global: only a program's main should call this, once,
// before it uses gRPC or OpenTelemetry.
func RouteProcessLogs(w io.Writer) {
	h := newRedactHandler(slog.NewJSONHandler(w, nil))
	slog.SetDefault(slog.New(h).With("component", "log"))

	otelLog := slog.New(h).With("component", "otel")
	otel.SetErrorHandler(&repeatLimiter{log: otelLog, msg: "OpenTelemetry error", every: time.Minute})
	otel.SetLogger(logr.FromSlogHandler(otelLog.Handler()))

	grpcLog := &lineLogger{log: slog.New(h).With("component", "grpc"), level: slog.LevelError}
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, grpcLog))
}

// repeatLimiter logs errors, each message at most once per every: an
// exporter whose collector is down fails at each export, and one line a
// minute says so as well as hundreds. The next line of a message says how
// many were left out.
type repeatLimiter struct {
	log   *slog.Logger
	msg   string
	every time.Duration

	mu   sync.Mutex
	last map[string]repeats
}

type repeats struct {
	at      time.Time
	skipped int
}

func (l *repeatLimiter) Handle(err error) {
	text := err.Error()
	now := time.Now()
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]repeats{}
	}
	r, seen := l.last[text]
	if seen && now.Sub(r.at) < l.every {
		r.skipped++
		l.last[text] = r
		l.mu.Unlock()
		return
	}
	if len(l.last) > 100 { // many distinct messages: start over
		clear(l.last)
	}
	l.last[text] = repeats{at: now}
	l.mu.Unlock()
	if r.skipped > 0 {
		l.log.Warn(l.msg, "err", text, "repeated", r.skipped)
		return
	}
	l.log.Warn(l.msg, "err", text)
}

// lineLogger is an io.Writer that logs each line written to it as one
// record at level.
type lineLogger struct {
	log   *slog.Logger
	level slog.Level

	mu  sync.Mutex
	buf []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(l.buf[:i]); len(line) > 0 {
			l.log.Log(context.Background(), l.level, string(line))
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}
