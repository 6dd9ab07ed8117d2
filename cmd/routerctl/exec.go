package main

import (
	"fmt"
	"strings"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

const authorizeExecUsage = `
Usage: routerctl authorize-exec NAME SCRIPT [--agent A] [--caller WHO]

Asks the router whether SCRIPT (a path relative to the skill folder, such as
scripts/fill_form.py) of skill NAME may run. The router never runs scripts;
it decides and records the decision in its audit log. A script may run when
the feature flag skills_exec is on, the skill is enabled, and ALLOWLIST.txt
lists the script (with a matching sha256 when pinned; pins are required for
learned skills).

Exit code 0 when allowed, 1 when denied or on error.
`

func runAuthorizeExec(e *env, args []string) error {
	fs := newFlags(e, "authorize-exec", authorizeExecUsage)
	agent := fs.String("agent", "", "resolve the skill as this agent sees it")
	caller := fs.String("caller", "routerctl", "who asks, for the audit record")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{"authorize-exec takes a skill NAME and a SCRIPT path (see routerctl authorize-exec --help)"}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := c.AuthorizeExec(ctx, &routerv1.AuthorizeExecRequest{Skill: pos[0], Script: pos[1], Agent: *agent, Caller: *caller})
	if err != nil {
		return err
	}
	if e.json {
		if err := e.printProto(res); err != nil {
			return err
		}
	} else if res.Decision == routerv1.ExecDecision_EXEC_DECISION_ALLOW {
		fmt.Fprintf(e.stdout, "ALLOW %s %s (sha256 %s): %s\ndecision %s\n", pos[0], pos[1], res.ScriptSha256, res.Message, res.DecisionId)
	} else {
		reason := strings.ToLower(strings.TrimPrefix(res.DenyReason.String(), "EXEC_DENY_REASON_"))
		fmt.Fprintf(e.stdout, "DENY %s %s [%s]: %s\ndecision %s\n", pos[0], pos[1], reason, res.Message, res.DecisionId)
	}
	if res.Decision != routerv1.ExecDecision_EXEC_DECISION_ALLOW {
		return exitStatus(exitError)
	}
	return nil
}
