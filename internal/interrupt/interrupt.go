// Package interrupt ends a command's context at the first SIGINT or SIGTERM
// and leaves a second one to end the process at once, as the router's
// commands (routerctl, routerbench) stop on a signal.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Context returns a copy of parent that ends at the first SIGINT or
// SIGTERM. From then on the signals have their default action again, so a
// second one ends the process at once. stop releases the signals.
func Context(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
