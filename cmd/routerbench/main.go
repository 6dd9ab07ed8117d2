// Command routerbench measures a skill router: it writes synthetic
// workspaces of any size from the dev sets and real skill trees (gen),
// drives a running router with concurrent clients over gRPC or MCP and
// reports throughput, latency percentiles, errors and memory (run), and
// times a router's cold index, warm restart and edit-to-served delay at one
// workspace (lifecycle). See routerbench --help and docs/benchmarks.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/interrupt"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := interrupt.Context(context.Background()) // a second signal stops at once
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a mistake on the command line; it exits with code 2.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// noArgs accepts no positional argument.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q", cmd.Name(), strings.Join(args, " "))
	}
	return nil
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "routerbench",
		Short:         "benchmark a skill router: synthetic workspaces, load, lifecycle timings",
		SilenceErrors: true,
		SilenceUsage:  true,
		// A bare "routerbench" prints the help on stderr and exits 2;
		// anything else that is not a command is a usage error.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(stderr)
			_ = cmd.Help()
			return usagef("routerbench needs a command: gen, run or lifecycle")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newGenCmd(), newRunCmd(), newLifecycleCmd())
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "routerbench: %v\nsee routerbench --help\n", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, "routerbench:", err)
	return exitError
}
