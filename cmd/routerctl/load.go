package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newLoadCmd(e *env) *cobra.Command {
	var (
		level, budget   int
		resource, agent string
		raw             bool
	)
	cmd := &cobra.Command{
		Use:   "load NAME",
		Short: "load a skill at level 1, 2 or 3",
		Long: `Loads a skill the way an agent would:
  --level 1   summary: name, description, source
  --level 2   the SKILL.md body, cut to --budget tokens (default: the
              router's, 5000); tokens are estimated as characters/4
  --level 3   one file of the skill folder, named by --resource
Text comes wrapped in <skill_content> delimiters that mark it as data from a
skill file; --raw prints it bare. Level 2 also lists the resource files.`,
		Example: `  routerctl load release-notes --level 1
  routerctl load kubernetes-debugging --budget 300
  routerctl load pdf-form-filling --resource references/field-types.md`,
		Args: exactArgs(1, "one skill NAME"),
	}
	f := cmd.Flags()
	f.IntVar(&level, "level", 2, "disclosure `level`: 1, 2 or 3")
	f.StringVar(&resource, "resource", "", "level 3: `path` relative to the skill folder (implies --level 3)")
	f.IntVar(&budget, "budget", 0, "level 2: token `budget` (0: the router's default)")
	f.BoolVar(&raw, "raw", false, "print content without the untrusted-content frame")
	f.StringVar(&agent, "agent", "", "resolve the name as this `agent` sees it")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, args []string) error {
		if resource != "" && !cmd.Flags().Changed("level") {
			level = 3
		}
		if level < 1 || level > 3 {
			return usageErrorf("--level %d: want 1, 2 or 3", level)
		}
		if budget < 0 {
			return usageErrorf("--budget %d: want a positive number of tokens", budget)
		}
		res, err := c.Load(ctx, &routerv1.LoadRequest{
			Name: args[0], Agent: agent, Level: routerv1.LoadLevel(level),
			ResourcePath: resource, TokenBudget: int32(budget), Raw: raw,
		})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(res)
		}
		writeLoad(e, skillpb.LoadResult(res))
		return nil
	})
	return cmd
}

// writeLoad prints what a load served: a summary, or a body or a text file
// on stdout with its token counts and resources on stderr; of a binary file
// only its size and type, on stderr. Token counts follow skill.TokenCounting.
func writeLoad(e *env, res *skill.LoadResult) {
	switch res.Level {
	case skill.LevelSummary:
		fmt.Fprintf(e.stdout, "%s (%s)\n%s\n", res.Skill.Name, sourceText(res.Skill), res.Skill.Description())
	case skill.LevelBody:
		fmt.Fprint(e.stdout, res.Content)
		fmt.Fprintf(e.stderr, "\n%d of %d tokens (budget %d, %s)", res.Tokens, res.TotalTokens, res.TokenBudget, skill.TokenCounting)
		if res.Truncated {
			fmt.Fprint(e.stderr, ", TRUNCATED")
		}
		fmt.Fprintln(e.stderr)
		if len(res.Skill.Resources) > 0 {
			fmt.Fprintf(e.stderr, "%d resource files; load one with --resource PATH\n", len(res.Skill.Resources))
		}
	default:
		if res.Data != nil {
			fmt.Fprintf(e.stderr, "%s: %d bytes of %s (binary; use --json to get it base64-encoded)\n", res.ResourcePath, res.Size, res.MediaType)
			return
		}
		fmt.Fprint(e.stdout, res.Content)
	}
}
