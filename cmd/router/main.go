// Command router is the MCPSAG skill router: a daemon that serves skills over
// gRPC (and MCP over HTTP with --mcp-addr), and an MCP server on stdio for
// agent hosts (router mcp). See router --help.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon"
	"github.com/mcpsag/router/internal/telemetry"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv))
}

// cli is what every command gets: the streams, the environment and the
// settings the flags give.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      config.LookupEnv
	getenv         func(string) string
	flags          config.Overrides
	// serving is set once a command that serves (router, router mcp)
	// starts: its errors are then logged as JSON, like the rest of stderr.
	serving bool
}

// usageError is a mistake on the command line; it exits with code 2.
type usageError struct{ error }

// run executes the command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv config.LookupEnv) int {
	getenv := func(key string) string {
		v, _ := lookupEnv(key)
		return v
	}
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: lookupEnv, getenv: getenv}
	telemetry.RouteProcessLogs(stderr)
	root := c.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "router: %v\nsee router --help\n", err)
		return exitUsage
	}
	if c.serving {
		// A serving router's stderr is all JSON lines, its last one too.
		slog.New(slog.NewJSONHandler(stderr, nil)).Error("router failed", "err", err.Error())
		return exitError
	}
	fmt.Fprintln(stderr, "router:", err)
	return exitError
}

const rootLong = `router serves skills to agents: it indexes SKILL.md folders, matches tasks
to skills (or says none fits) and loads them progressively, over gRPC and,
with --mcp-addr, over MCP's Streamable HTTP transport. 'router mcp' serves MCP
on stdio for agent hosts (Claude Code, Codex, Cursor, ...).

Settings come from, in increasing precedence: built-in defaults, the config
file (--config, else <workspace>/.mcp/.mcp-config.yaml when present), MCPSAG_*
environment variables, and flags. Relative paths in flags and variables are
relative to the working directory; in the config file, to the workspace.
--print-config shows every effective setting and where it came from.`

const rootExample = `  router --workspace examples                  # serve the example skills on 127.0.0.1:7443
  router --workspace . --mcp-addr 127.0.0.1:7444 # also serve MCP at http://127.0.0.1:7444/mcp
  router --workspace . --print-config           # what would run, and why
  router mcp --workspace ~/project              # MCP on stdio, standalone
  router mcp --connect 127.0.0.1:7443           # MCP on stdio, over a running router`

func (c *cli) rootCommand() *cobra.Command {
	var printConfig bool
	root := &cobra.Command{
		Use:           "router",
		Short:         "Serve skills to agents over gRPC and MCP",
		Long:          rootLong,
		Example:       rootExample,
		Args:          noArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.serving = !printConfig
			m, err := c.main(cmd)
			if err != nil {
				return err
			}
			if printConfig {
				out, err := m.ExplainConfig()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(c.stdout, out)
				return err
			}
			return serve(cmd.Context(), m)
		},
	}
	root.SetVersionTemplate("router {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&c.flags.Workspace, "workspace", "", "workspace `dir` holding skills/ and agents/*/skills/ (MCPSAG_WORKSPACE; default .)")
	pf.StringVar(&c.flags.ConfigFile, "config", "", "config `file` (MCPSAG_CONFIG; default <workspace>/.mcp/.mcp-config.yaml)")
	pf.StringVar(&c.flags.StateDir, "state-dir", "", "`dir` for the cache (MCPSAG_STATE_DIR; default <workspace>/.mcp/state; a relative path is relative to the working directory)")
	pf.StringVar(&c.flags.ModelDir, "model-dir", "", "embedding model `dir`; empty uses the bundled model (MCPSAG_MODEL_DIR; a relative path is relative to the working directory)")
	pf.StringVar(&c.flags.LogLevel, "log-level", "", "debug, info, warn or error (MCPSAG_LOG_LEVEL; default info)")
	f := root.Flags()
	f.StringVar(&c.flags.Addr, "addr", "", "gRPC listen `address` (MCPSAG_ADDR; default 127.0.0.1:7443)")
	f.StringVar(&c.flags.AdminAddr, "admin-addr", "", "`address` for /metrics, /healthz and /readyz (MCPSAG_ADMIN_ADDR); \"\" turns it off, also when the config file sets it")
	f.StringVar(&c.flags.MCPAddr, "mcp-addr", "", "serve MCP over Streamable HTTP at this `address`, path /mcp (MCPSAG_MCP_ADDR); \"\" turns it off, also when the config file sets it")
	f.BoolVar(&printConfig, "print-config", false, "print the effective configuration, each setting with its source, and exit")
	root.AddCommand(c.mcpCommand(), c.versionCommand())
	return root
}

// main resolves the configuration and returns the process to run. A
// listener flag given an empty address turns that listener off.
func (c *cli) main(cmd *cobra.Command) (*daemon.Main, error) {
	for flag, key := range map[string]string{"admin-addr": config.OffAdmin, "mcp-addr": config.OffMCP} {
		if f := cmd.Flags().Lookup(flag); f != nil && f.Changed && f.Value.String() == "" {
			c.flags.Off = append(c.flags.Off, key)
		}
	}
	cfg, err := config.ResolveEnv(c.flags, c.lookupEnv)
	if err != nil {
		return nil, err
	}
	return &daemon.Main{Config: cfg, Overrides: c.flags, Getenv: c.getenv, LookupEnv: c.lookupEnv, Stderr: c.stderr}, nil
}

// serve runs the daemon until SIGINT or SIGTERM, then stops it gracefully; a
// second signal cuts the graceful stop short.
func serve(ctx context.Context, m *daemon.Main) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return m.Serve(ctx, sigs)
}

// noArgs refuses positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError{fmt.Errorf("unexpected argument %q; %s takes flags only", args[0], cmd.CommandPath())}
	}
	return nil
}
