// Command router is the MCPSAG skill router daemon. See router --help.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpsag/router/internal/daemon"
)

func main() {
	m := &daemon.Main{}
	if err := m.ParseFlags(os.Args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(2)
	}
	if m.PrintConfig {
		fmt.Print(m.Config.Redacted())
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	stop()

	// The first signal starts a graceful stop; a second one cuts it short.
	closeCtx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := m.Close(closeCtx); err != nil {
		fmt.Fprintln(os.Stderr, "router:", err)
		os.Exit(1)
	}
}
