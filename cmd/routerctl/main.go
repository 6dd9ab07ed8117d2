// Command routerctl operates a running router (match, list, show, load,
// reindex, status, health, authorize-exec, model info) and works offline on
// skill folders and labelled queries (validate, eval, calibrate, model
// verify, token). See routerctl --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpsag/router/internal/interrupt"
	"github.com/mcpsag/router/internal/tlsconfig"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := interrupt.Context(context.Background()) // a second signal stops at once
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run executes routerctl and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{getenv: getenv}
	outTerminal, errTerminal := isTerminal(stdout), isTerminal(stderr)
	out := newTerminalWriter(stdout, func() bool { return outTerminal && !e.json })
	errOut := newTerminalWriter(stderr, func() bool { return errTerminal })
	e.stdout, e.stderr = out, errOut
	e.progress = newProgress(stderr)
	root := newRoot(e)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	e.progress.Clear()
	if e.conn != nil {
		e.conn.Close()
	}
	code := e.report(cmd, err)
	out.Flush()
	errOut.Flush()
	return code
}

// env is what every command gets: the global options, the output streams
// and, on demand, a connection to the router.
type env struct {
	addr    string
	json    bool
	timeout time.Duration
	// timeoutSet is whether --timeout was given: only then is a router
	// that does not listen waited for.
	timeoutSet bool
	token      string
	// tokenFrom names where the token came from ("--token" or
	// "MCPSAG_TOKEN"), for messages.
	tokenFrom string
	tls       tlsconfig.Client
	stdout    io.Writer
	stderr    io.Writer
	getenv    func(string) string
	progress  *progress
	conn      *grpc.ClientConn
	handshake handshakeResult
}

// usageError is a mistake in the command line; it exits with code 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// exitStatus lets a command choose its exit code without an error message
// (validate uses it when it found errors).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// report prints err for people and returns the exit code.
func (e *env) report(cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "routerctl: %s\nsee %s --help\n", ue.msg, commandPath(cmd))
		return exitUsage
	}
	var tm tlsMismatch
	if errors.As(err, &tm) {
		fmt.Fprintf(e.stderr, "routerctl: %v\n%s\n", tm, tm.hint())
		return exitError
	}
	var ce certificateError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "routerctl: %v\n", ce)
		fmt.Fprintf(e.stderr, "pass the CA that signed the certificate of %s with --tls-ca FILE (and --tls-server-name NAME when it names another host)\n", e.addr)
		return exitError
	}
	if st, ok := status.FromError(err); ok {
		return e.reportStatus(cmd, st, err)
	}
	fmt.Fprintln(e.stderr, "routerctl:", err)
	return exitError
}

// reportStatus prints the router's answer err (with status st) and a hint
// of what to do about it, and returns the exit code: a refused value came
// from the command line, so it is a usage error.
func (e *env) reportStatus(cmd *cobra.Command, st *status.Status, err error) int {
	fmt.Fprintf(e.stderr, "routerctl: %s: %s\n", st.Code(), st.Message())
	switch st.Code() {
	case codes.InvalidArgument:
		fmt.Fprintf(e.stderr, "see %s --help\n", commandPath(cmd))
		return exitUsage
	case codes.Unavailable:
		var gu gaveUp
		var nr notReached
		switch {
		case errors.As(err, &gu):
			fmt.Fprintf(e.stderr, "gave up after %s (--timeout); is the router running at %s? start it with: router --workspace DIR\n", gu.after.Round(100*time.Millisecond), e.addr)
		case errors.As(err, &nr):
			fmt.Fprintf(e.stderr, "no router answered at %s: is it running? start it with: router --workspace DIR (or give --timeout to wait for one that is starting)\n", e.addr)
		default:
			fmt.Fprintf(e.stderr, "is the router running at %s? start it with: router --workspace DIR\n", e.addr)
		}
	case codes.Unauthenticated:
		if e.token == "" {
			fmt.Fprintln(e.stderr, "the router requires a token: set MCPSAG_TOKEN or pass --token")
		} else {
			fmt.Fprintf(e.stderr, "the router rejected the token from %s; check it against the router's tokens file (routerctl token makes a new one)\n", e.tokenFrom)
		}
	}
	return exitError
}

// commandPath names the command that failed, for "see ... --help".
func commandPath(cmd *cobra.Command) string {
	if cmd == nil {
		return "routerctl"
	}
	return cmd.CommandPath()
}
