package main

import (
	"fmt"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

const loadUsage = `
Usage: routerctl load NAME [--level 1|2|3] [--resource PATH] [--budget N] [--raw]

Loads a skill the way an agent would:
  --level 1   summary: name, description, source
  --level 2   the SKILL.md body, cut to --budget tokens (default: the
              router's, 5000); tokens are estimated as characters/4
  --level 3   one file of the skill folder, named by --resource
Text comes wrapped in <skill_content> delimiters that mark it as data from a
skill file; --raw prints it bare. Level 2 also lists the resource files.
`

func runLoad(e *env, args []string) error {
	fs := newFlags(e, "load", loadUsage)
	level := fs.Int("level", 2, "disclosure `level`: 1, 2 or 3")
	resource := fs.String("resource", "", "level 3: `path` relative to the skill folder")
	budget := fs.Int("budget", 0, "level 2: token `budget` (0: the router's default)")
	raw := fs.Bool("raw", false, "print content without the untrusted-content frame")
	agent := fs.String("agent", "", "resolve the name as this agent sees it")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"load takes one skill NAME (see routerctl load --help)"}
	}
	if *resource != "" && *level == 2 {
		*level = 3 // --resource implies level 3
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := c.Load(ctx, &routerv1.LoadRequest{
		Name: pos[0], Agent: *agent, Level: routerv1.LoadLevel(*level),
		ResourcePath: *resource, TokenBudget: int32(*budget), Raw: *raw,
	})
	if err != nil {
		return err
	}
	if e.json {
		return e.printProto(res)
	}
	switch res.Level {
	case routerv1.LoadLevel_LOAD_LEVEL_SUMMARY:
		fmt.Fprintf(e.stdout, "%s (%s)\n%s\n", res.Name, sourceText(res.Summary.Source), res.Summary.Description)
	case routerv1.LoadLevel_LOAD_LEVEL_BODY:
		fmt.Fprint(e.stdout, res.Content)
		fmt.Fprintf(e.stderr, "\n%d of %d tokens (budget %d, %s)", res.Tokens, res.TotalTokens, res.TokenBudget, res.TokenCounting)
		if res.Truncated {
			fmt.Fprint(e.stderr, ", TRUNCATED")
		}
		fmt.Fprintln(e.stderr)
		if len(res.Resources) > 0 {
			fmt.Fprintf(e.stderr, "%d resource files; load one with --resource PATH\n", len(res.Resources))
		}
	default:
		if res.Data != nil {
			fmt.Fprintf(e.stderr, "%s: %d bytes of %s (binary; use --json to get it base64-encoded)\n", res.ResourcePath, res.SizeBytes, res.MediaType)
			return nil
		}
		fmt.Fprint(e.stdout, res.Content)
	}
	return nil
}
