package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newServersCmd(e *env) *cobra.Command {
	var details bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "show the MCP servers whose tools the router serves",
		Long: `Shows every MCP server the router is configured with (config mcp_servers):
its transport, state (ready, starting, failed, disabled), trust, how many
tools it serves, lists, has filtered out by enabled_tools/disabled_tools and
has left out as unusable, its resources and prompts, and its last error. A
failed server also shows when it is tried again and the end of its stderr.
--details adds every server's findings about its tools (duplicate names,
shortened descriptions, schemas that are not objects) and stderr tail.

The command, its arguments, environment values and secrets never appear:
the router does not report them.

--json prints the servers of the StatusResponse ({"servers": [...]}).`,
		Example: `  routerctl servers
  routerctl servers --details
  routerctl servers --json`,
		Args: noArgs,
	}
	cmd.Flags().BoolVar(&details, "details", false, "show every server's findings and stderr tail")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, _ []string) error {
		st, err := c.Status(ctx, &routerv1.StatusRequest{})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(&routerv1.StatusResponse{Servers: st.Servers})
		}
		return writeServers(e.stdout, skillpb.Status(st), details)
	})
	return cmd
}

// writeServers prints the servers table and, for failed servers (all with
// details), what explains their state.
func writeServers(w io.Writer, st *skill.Status, details bool) error {
	if len(st.Servers) == 0 {
		fmt.Fprintln(w, "no MCP servers configured (config mcp_servers)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tTRUST\tTOOLS\tLISTED\tFILTERED\tDROPPED\tRESOURCES\tPROMPTS\tLAST ERROR")
	tools := 0
	for _, s := range st.Servers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", s.Name, transportText(s), s.State,
			trustWord(s.Trusted), s.Tools, s.ToolsListed, s.ToolsFiltered, s.ToolsDropped,
			count(s.Resources), count(s.Prompts), oneLine(orDash(s.LastError), 70))
		tools += s.Tools
	}
	tw.Flush()
	fmt.Fprintf(w, "%d servers, %d tools served (index generation %d); calling tools is %s (flag tools_call)\n",
		len(st.Servers), tools, st.Generation, onOff(st.Flags.ToolsCall))
	for _, s := range st.Servers {
		if failed := s.State == skill.ServerFailed; failed || details {
			writeServerState(w, s, failed, details)
		}
	}
	return nil
}

// writeServerState prints what explains a server's state: what it calls
// itself, its last error and next attempt (when failed), its notifications,
// findings and the end of its stderr (all of it with details).
func writeServerState(w io.Writer, s skill.ServerStatus, failed, details bool) {
	fmt.Fprintf(w, "\n%s:\n", s.Name)
	if s.ServerName != "" {
		fmt.Fprintf(w, "  calls itself %s %s (protocol %s)\n", oneLine(s.ServerName, 60), oneLine(s.ServerVersion, 30), s.ProtocolVersion)
	}
	if s.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", oneLine(s.LastError, 300))
	}
	if t := s.NextAttempt; !t.IsZero() && failed {
		fmt.Fprintf(w, "  next attempt in %s (%d restarts so far)\n", time.Until(t).Round(time.Second), s.Restarts)
	}
	if s.ListChanged > 0 {
		fmt.Fprintf(w, "  %d list_changed notifications, %d listings after them\n", s.ListChanged, s.Refreshes)
	}
	for _, d := range s.Diagnostics {
		fmt.Fprintf(w, "  finding: %s\n", oneLine(d, 200))
	}
	tail := s.StderrTail
	if !details && len(tail) > 5 {
		tail = tail[len(tail)-5:]
	}
	for _, l := range tail {
		fmt.Fprintf(w, "  stderr: %s\n", oneLine(l, 200))
	}
}

func transportText(s skill.ServerStatus) string {
	if s.Endpoint != "" {
		return s.Transport + " " + s.Endpoint
	}
	return s.Transport
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
