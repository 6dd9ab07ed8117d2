package telemetry

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"google.golang.org/grpc/grpclog"

	"github.com/mcpsag/router/internal/testlog"
)

func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// TestLineLoggerLogsEachLine: text written in pieces, several lines at a
// time, comes out as one record per non-empty line.
func TestLineLoggerLogsEachLine(t *testing.T) {
	var buf testlog.Buffer
	l := &lineLogger{log: slog.New(slog.NewJSONHandler(&buf, nil)), level: slog.LevelError}
	for _, piece := range []string{"ERROR: first ", "line\nsecond line\n", "\n  \nthird", " line\n"} {
		if n, err := l.Write([]byte(piece)); n != len(piece) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", piece, n, err)
		}
	}
	lines := jsonLines(t, buf.String())
	var msgs []string
	for _, m := range lines {
		msgs = append(msgs, m["msg"].(string))
		if m["level"] != "ERROR" {
			t.Errorf("level %v", m["level"])
		}
	}
	if got := strings.Join(msgs, "|"); got != "ERROR: first line|second line|third line" {
		t.Errorf("records %q", got)
	}
}

// TestRepeatLimiterLogsARepeatOncePerInterval: the same error within the
// interval is counted, not logged; the next line says how many were left
// out. A different error is logged at once.
func TestRepeatLimiterLogsARepeatOncePerInterval(t *testing.T) {
	var buf testlog.Buffer
	l := &repeatLimiter{log: slog.New(slog.NewJSONHandler(&buf, nil)), msg: "OpenTelemetry error", every: 200 * time.Millisecond}
	down := errors.New("failed to upload metrics: connection refused")
	for range 5 {
		l.Handle(down)
	}
	l.Handle(errors.New("failed to upload spans: connection refused"))
	time.Sleep(250 * time.Millisecond)
	l.Handle(down)
	lines := jsonLines(t, buf.String())
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	if lines[0]["err"] != down.Error() || lines[0]["repeated"] != nil {
		t.Errorf("first: %v", lines[0])
	}
	if !strings.Contains(lines[1]["err"].(string), "spans") {
		t.Errorf("second: %v", lines[1])
	}
	if lines[2]["err"] != down.Error() || lines[2]["repeated"] != 4.0 {
		t.Errorf("after the interval: %v, want repeated 4", lines[2])
	}
}

// TestRouteProcessLogs: what the standard log package (net/http's report
// of a handler that panicked, stack included), OpenTelemetry's error
// handler and gRPC's logger write comes out as one JSON line each, naming
// its component; gRPC's info is dropped.
func TestRouteProcessLogs(t *testing.T) {
	prevSlog, prevFlags := slog.Default(), log.Flags()
	t.Cleanup(func() {
		slog.SetDefault(prevSlog)
		log.SetOutput(os.Stderr)
		log.SetFlags(prevFlags)
		grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, os.Stderr))
	})
	var buf testlog.Buffer
	RouteProcessLogs(&buf)

	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("handler bug") }))
	if resp, err := http.Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Errorf("a panicking handler answered %s", resp.Status)
	}
	srv.Close()
	otel.Handle(errors.New("failed to upload metrics: connection refused"))
	grpclog.Error("transport: bad frame")
	grpclog.Info("transport: connected")

	lines := jsonLines(t, buf.String())
	byComponent := map[string][]map[string]any{}
	for _, m := range lines {
		c, _ := m["component"].(string)
		byComponent[c] = append(byComponent[c], m)
	}
	if len(lines) != 3 || len(byComponent["log"]) != 1 || len(byComponent["otel"]) != 1 || len(byComponent["grpc"]) != 1 {
		t.Fatalf("want one line each from log, otel and grpc, got:\n%s", buf.String())
	}
	if msg := byComponent["log"][0]["msg"].(string); !strings.Contains(msg, "panic serving") || !strings.Contains(msg, "handler bug") || !strings.Contains(msg, "goroutine") {
		t.Errorf("the panic's line %q lacks the panic or its stack", msg)
	}
	if m := byComponent["otel"][0]; !strings.Contains(fmt.Sprint(m["err"]), "upload metrics") {
		t.Errorf("otel line %v", m)
	}
	if m := byComponent["grpc"][0]; m["level"] != "ERROR" || !strings.Contains(fmt.Sprint(m["msg"]), "bad frame") {
		t.Errorf("grpc line %v", m)
	}
}
