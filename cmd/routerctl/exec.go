package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skillpb"
)

func newAuthorizeExecCmd(e *env) *cobra.Command {
	var agent, caller string
	cmd := &cobra.Command{
		Use:   "authorize-exec NAME SCRIPT",
		Short: "ask whether a skill script may run",
		Long: `Asks the router whether SCRIPT (a path relative to the skill folder, such as
scripts/fill_form.py) of skill NAME may run. The router never runs scripts;
it decides and records the decision in its audit log. A script may run when
the feature flag skills_exec is on, the skill is enabled, and ALLOWLIST.txt
lists the script (with a matching sha256 when pinned; pins are required for
learned skills).

Exit code 0 when allowed, 1 when denied or on error.`,
		Example: `  routerctl authorize-exec pdf-form-filling scripts/fill_form.py
  routerctl authorize-exec csv-data-cleaning scripts/profile_csv.py --caller ci --json`,
		Args: exactArgs(2, "a skill NAME and a SCRIPT path"),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "resolve the skill as this `agent` sees it")
	cmd.Flags().StringVar(&caller, "caller", "routerctl", "`who` asks, for the audit record")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, args []string) error {
		name, script := args[0], args[1]
		res, err := c.AuthorizeExec(ctx, &routerv1.AuthorizeExecRequest{Skill: name, Script: script, Agent: agent, Caller: caller})
		if err != nil {
			return err
		}
		d := skillpb.ExecDecision(res)
		switch {
		case e.json:
			if err := e.printJSON(res); err != nil {
				return err
			}
		case d.Allowed:
			fmt.Fprintf(e.stdout, "ALLOW %s %s (sha256 %s): %s\ndecision %s\n", name, script, d.ScriptSHA256, d.Message, d.DecisionID)
		default:
			fmt.Fprintf(e.stdout, "DENY %s %s [%s]: %s\ndecision %s\n", name, script, d.Reason, d.Message, d.DecisionID)
		}
		if !d.Allowed {
			return exitStatus(exitError)
		}
		return nil
	})
	return cmd
}
