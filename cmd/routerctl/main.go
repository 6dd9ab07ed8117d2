// Command routerctl operates a running router (match, list, show, load,
// reindex, status, authorize-exec, model) and works offline on skill folders
// and labelled queries (validate, eval, calibrate, model verify, token). See
// routerctl --help.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/tlsconfig"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// env is what every command gets: global options, output streams and, on
// demand, a client.
type env struct {
	addr    string
	json    bool
	timeout time.Duration
	token   string
	tls     tlsconfig.Client
	stdout  io.Writer
	stderr  io.Writer
	getenv  func(string) string
	conn    *grpc.ClientConn
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	// run parses args with its own flag set and does the work.
	run func(e *env, args []string) error
}

func commands() []command {
	return []command{
		{"list", "list the skills an agent sees", runList},
		{"show", "show everything about one skill", runShow},
		{"load", "load a skill at level 1, 2 or 3", runLoad},
		{"reindex", "rescan the skill folders now", runReindex},
		{"status", "show the router's state", runStatus},
		{"health", "check the gRPC health service; exit 0 only when serving", runHealth},
		{"match", "ask which skills fit a task", runMatch},
		{"authorize-exec", "ask whether a skill script may run", runAuthorizeExec},
		{"model", "show the embedding model, or verify a model folder offline", runModel},
		{"validate", "check SKILL.md folders offline (no router needed)", runValidate},
		{"eval", "measure routing quality on labelled queries (offline)", runEval},
		{"calibrate", "fit the abstention threshold and fusion weight (offline)", runCalibrate},
		{"token", "make a new API token and its tokens-file entry", runToken},
	}
}

const globalUsage = `routerctl talks to a running router over gRPC and checks skill folders.

Usage:
  routerctl [global flags] <command> [flags] [args]

Commands:
%s
Global flags:
  --addr ADDR        router address (MCPSAG_ADDR; default 127.0.0.1:7443)
  --json             print JSON for scripts instead of text
  --timeout DUR      per-call timeout (default 30s; reindex waits up to 10m)
  --token TOKEN      bearer token when the router requires one (MCPSAG_TOKEN;
                     prefer the environment: flags show up in ps)
  --tls-ca FILE      CA certificate: connect with TLS and trust this CA
  --tls-cert FILE, --tls-key FILE
                     client certificate for mutual TLS
  --tls-server-name NAME
                     expected server name (default: the host of --addr)

Run 'routerctl <command> --help' for a command's flags.
Exit codes: 0 ok, 1 error, 2 usage.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run executes routerctl and returns the exit code.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: getenv}
	fs := flag.NewFlagSet("routerctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&e.addr, "addr", cmp.Or(getenv("MCPSAG_ADDR"), "127.0.0.1:7443"), "router address")
	fs.BoolVar(&e.json, "json", false, "JSON output")
	fs.DurationVar(&e.timeout, "timeout", 30*time.Second, "per-call timeout")
	fs.StringVar(&e.token, "token", getenv("MCPSAG_TOKEN"), "bearer token")
	fs.StringVar(&e.tls.CA, "tls-ca", "", "CA certificate file")
	fs.StringVar(&e.tls.Cert, "tls-cert", "", "client certificate file")
	fs.StringVar(&e.tls.Key, "tls-key", "", "client key file")
	fs.StringVar(&e.tls.ServerName, "tls-server-name", "", "expected server name")
	fs.Usage = func() { fmt.Fprintf(stderr, globalUsage, commandList()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(e, rest)
		if e.conn != nil {
			e.conn.Close()
		}
		return report(e, err)
	}
	fmt.Fprintf(stderr, "routerctl: unknown command %q\n\n", name)
	fs.Usage()
	return exitUsage
}

func commandList() string {
	var b strings.Builder
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	return b.String()
}

// usageError is a mistake in the command line; it exits with code 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// exitStatus lets a command choose its exit code without an error message
// (validate uses it when it found errors).
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func report(e *env, err error) int {
	if err == nil {
		return exitOK
	}
	var es exitStatus
	if errors.As(err, &es) {
		return int(es)
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(e.stderr, "routerctl:", ue.msg)
		return exitUsage
	}
	if st, ok := status.FromError(err); ok {
		fmt.Fprintf(e.stderr, "routerctl: %s: %s\n", st.Code(), st.Message())
		switch st.Code() {
		case codes.Unavailable:
			fmt.Fprintf(e.stderr, "is the router running at %s? start it with: go run ./cmd/router --workspace DIR\n", e.addr)
		case codes.Unauthenticated:
			fmt.Fprintln(e.stderr, "the router requires a token: set MCPSAG_TOKEN (or --token)")
		}
		return exitError
	}
	fmt.Fprintln(e.stderr, "routerctl:", err)
	return exitError
}

// client dials the router lazily.
func (e *env) client() (routerv1.SkillRouterClient, error) {
	if e.conn == nil {
		creds := insecure.NewCredentials()
		if e.tls.Enabled() {
			if (e.tls.Cert == "") != (e.tls.Key == "") {
				return nil, usageError{"--tls-cert and --tls-key go together"}
			}
			tc, err := e.tls.Config()
			if err != nil {
				return nil, fmt.Errorf("tls: %w", err)
			}
			creds = credentials.NewTLS(tc)
		}
		opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
		if e.token != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(bearerToken(e.token)))
		}
		conn, err := grpc.NewClient(e.addr, opts...)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", e.addr, err)
		}
		e.conn = conn
	}
	return routerv1.NewSkillRouterClient(e.conn), nil
}

func (e *env) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.timeout)
}

// newFlags makes a subcommand's flag set with its usage text.
func newFlags(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("routerctl "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprint(e.stderr, strings.TrimLeft(usage, "\n"))
		fmt.Fprintln(e.stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may appear before, between or after positional
// arguments (the standard flag package stops at the first positional).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

var jsonOut = protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}

func (e *env) printProto(m proto.Message) error {
	b, err := jsonOut.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, string(b))
	return err
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
