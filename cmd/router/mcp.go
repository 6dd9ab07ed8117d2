package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/buildinfo"
	"github.com/mcpsag/router/internal/mcp"
	"github.com/mcpsag/router/internal/remote"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/tlsconfig"
)

const mcpLong = `router mcp serves MCP on stdio: an agent host starts it and talks to it on
its stdin and stdout. Nothing but MCP messages is written to stdout; the log
goes to stderr.

Standalone (the default): the command indexes --workspace itself, with the
same flags and config file as the daemon. When another router (a daemon or
another session) holds the workspace's state directory, the session shares
that router's index over a socket in the directory, and takes the directory
over when that router stops.

Attached (--connect ADDR): the command forwards to a running router over
gRPC, so many agent sessions share one index and one model in memory. It
takes routerctl's connection flags; a token comes from MCPSAG_TOKEN or
--token.

Tools: find_skills, load_skill, read_skill_file, list_skills (and
authorize_exec while skills_exec is on; find_tools and call_tool with MCP
servers configured); each skill is also a prompt and its files skill://
resources, served with the MCP Skills extension. See docs/mcp.md for host
configuration.`

const mcpExample = `  claude mcp add skills -- router mcp --workspace ~/project
  router mcp --connect 127.0.0.1:7443 --agent reviewer`

// mcpFlags are router mcp's own flags.
type mcpFlags struct {
	connect, agent, token string
	tls                   tlsconfig.Client
}

func (c *cli) mcpCommand() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:     "mcp",
		Short:   "Serve MCP on stdio (standalone, or attached to a running router)",
		Long:    mcpLong,
		Example: mcpExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := skill.ValidateAgent(f.agent); err != nil {
				return usageError{fmt.Errorf("--agent: %w", err)}
			}
			c.serving = true
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if f.connect != "" {
				return c.serveAttached(ctx, f)
			}
			m, err := c.main(cmd)
			if err != nil {
				return err
			}
			return m.ServeMCP(ctx, f.agent, c.stdin, c.stdout)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.connect, "connect", "", "forward to the router at this gRPC `address` instead of indexing the workspace")
	fl.StringVar(&f.agent, "agent", "", "the `agent` this session acts for: it sees global skills and its own")
	fl.StringVar(&f.token, "token", "", "bearer `token` for --connect (MCPSAG_TOKEN; prefer the variable: flags show up in ps)")
	fl.StringVar(&f.tls.CA, "tls-ca", "", "with --connect: connect with TLS and trust this CA `file`")
	fl.StringVar(&f.tls.Cert, "tls-cert", "", "with --connect: client certificate `file` for mutual TLS")
	fl.StringVar(&f.tls.Key, "tls-key", "", "with --connect: client key `file` for mutual TLS")
	fl.StringVar(&f.tls.ServerName, "tls-server-name", "", "with --connect: expected server `name` (default: the host of --connect)")
	return cmd
}

// serveAttached serves MCP on stdio over a running router.
func (c *cli) serveAttached(ctx context.Context, f mcpFlags) error {
	if (f.tls.Cert == "") != (f.tls.Key == "") {
		return usageError{fmt.Errorf("--tls-cert and --tls-key go together")}
	}
	if err := remote.CheckAddr(f.connect); err != nil {
		return usageError{fmt.Errorf("--connect %w", err)}
	}
	conn, err := remote.Dial(f.connect, remote.DialOptions{Token: cmp.Or(f.token, c.getenv("MCPSAG_TOKEN")), TLS: f.tls})
	if err != nil {
		return err
	}
	defer conn.Close()
	log := slog.New(slog.NewJSONHandler(c.stderr, nil)) // the front names its component itself
	log.Info("serving MCP on stdio over a running router", "component", "mcp", "connect", f.connect, "agent", f.agent, "version", buildinfo.Read().String())
	r := remote.New(routerv1.NewSkillRouterClient(conn), remote.Options{PollInterval: 2 * time.Second})
	feat, err := mcp.ProbeFeatures(ctx, r, f.agent)
	if err != nil {
		return err
	}
	log.Info("the router's token allows", "features", feat.String())
	return mcp.Serve(ctx, r, c.stdin, c.stdout, mcp.Options{
		Name: "mcpsag-router", Version: buildinfo.Read().String(), Agent: f.agent, Logger: log, Features: feat,
	})
}
