package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"
)

func TestContextEndsAtASignal(t *testing.T) {
	ctx, stop := Context(context.Background())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the context did not end at SIGTERM")
	}
}
