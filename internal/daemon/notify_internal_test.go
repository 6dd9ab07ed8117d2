package daemon

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWatchdogAnswers: the watchdog pings only while the gRPC server serves
// and a status call answers in time.
func TestWatchdogAnswers(t *testing.T) {
	ctx := context.Background()
	serving := make(chan struct{})
	ok := func(context.Context) error { return nil }
	if err := answers(ctx, ok, serving, time.Second); err != nil {
		t.Errorf("a serving router that answers: %v", err)
	}
	fails := func(context.Context) error { return errors.New("closed") }
	if err := answers(ctx, fails, serving, time.Second); err == nil {
		t.Error("a failing status passed")
	}
	stuck := make(chan struct{})
	defer close(stuck)
	hangs := func(context.Context) error { <-stuck; return nil }
	start := time.Now()
	if err := answers(ctx, hangs, serving, 100*time.Millisecond); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a status that never answers: %v after %s", err, time.Since(start))
	}
	ended := make(chan struct{})
	close(ended)
	if err := answers(ctx, ok, ended, time.Second); err == nil {
		t.Error("a stopped gRPC server passed")
	}
}
