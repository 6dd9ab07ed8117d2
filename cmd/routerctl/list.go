package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newListCmd(e *env) *cobra.Command {
	var (
		agent, kinds               string
		shadowed, hidden, disabled bool
		budget                     int
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list the skills and tools an agent sees",
		Long: `Lists the skills and the tools of connected MCP servers an agent sees (all
pages), sorted by name; --kinds skills or --kinds tools lists one kind. Tools
are named server.tool and their source is their server. --shadowed lists
name collisions instead: which copy is served and which is hidden, and why.
--budget N prints the prompt-ready catalog the router renders within N
characters, and says which skills it shortened or cut.

--json prints the ListSkillsResponse (pages merged); its "shadowed" list
holds the collisions and "catalog" the rendered catalog.`,
		Example: `  routerctl list
  routerctl list --agent reviewer --hidden
  routerctl list --shadowed
  routerctl list --kinds tools
  routerctl list --budget 800`,
		Args: noArgs,
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "list what this `agent` sees")
	f.BoolVar(&shadowed, "shadowed", false, "list name collisions instead of skills")
	f.BoolVar(&hidden, "hidden", false, "include skills marked hidden")
	f.BoolVar(&disabled, "disabled", false, "include skills disabled in registry.json")
	f.IntVar(&budget, "budget", 0, "render the catalog within `N` characters")
	f.StringVar(&kinds, "kinds", "", "list `kinds`: skills, tools or both (default both)")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, _ []string) error {
		if budget < 0 {
			return usageErrorf("--budget %d: want a positive number of characters", budget)
		}
		kf, err := kindsFilter(kinds)
		if err != nil {
			return err
		}
		all, err := listAll(ctx, c, &routerv1.ListSkillsRequest{Agent: agent, PageSize: 1000, IncludeHidden: hidden,
			IncludeDisabled: disabled, CatalogCharBudget: int32(budget), Kinds: kf})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(all)
		}
		return writeList(e, skillpb.ListResult(all), shadowed, kf)
	})
	return cmd
}

// listAll asks for every page of a listing and merges them; the catalog
// is asked for with the first page only.
func listAll(ctx context.Context, c routerv1.SkillRouterClient, req *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	all := &routerv1.ListSkillsResponse{}
	for {
		page, err := c.ListSkills(ctx, req)
		if err != nil {
			return nil, err
		}
		all.Skills = append(all.Skills, page.Skills...)
		all.Shadowed, all.TotalSize, all.IndexGeneration = page.Shadowed, page.TotalSize, page.IndexGeneration
		if page.Catalog != nil {
			all.Catalog = page.Catalog
			req.CatalogCharBudget = 0
		}
		if page.NextPageToken == "" {
			return all, nil
		}
		req.PageToken = page.NextPageToken
	}
}

// writeList prints a listing: its name collisions (shadowed), its rendered
// catalog when it has one, else a table of its entries.
func writeList(e *env, res *skill.ListResult, shadowed bool, kf routerv1.KindFilter) error {
	switch {
	case shadowed:
		return printShadowed(e, res.Shadowed)
	case res.Catalog != nil:
		cat, out := res.Catalog, e.stdout
		fmt.Fprint(out, cat.Text)
		fmt.Fprintf(out, "\n%d of %d characters; %d skills listed, %d shortened, %d cut\n", cat.Chars, cat.Budget, len(cat.Included), len(cat.Shortened), len(cat.Cut))
		if len(cat.Cut) > 0 {
			fmt.Fprintf(out, "cut: %s\n", strings.Join(cat.Cut, ", "))
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tDESCRIPTION")
	for _, s := range res.Skills {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, sourceText(s), oneLine(s.Description(), 80))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%s (index generation %d)\n", countKinds(res.Skills, kf), res.Generation)
	return nil
}

// countKinds says how many skills and tools a listing holds: "7 skills",
// "13 tools", "7 skills and 13 tools".
func countKinds(entries []*skill.Skill, kf routerv1.KindFilter) string {
	tools := 0
	for _, s := range entries {
		if s.Root.Kind == skill.KindServer {
			tools++
		}
	}
	skills := len(entries) - tools
	switch {
	case kf == routerv1.KindFilter_KIND_FILTER_TOOLS:
		return fmt.Sprintf("%d tool%s", tools, plural(tools))
	case tools == 0:
		return fmt.Sprintf("%d skill%s", skills, plural(skills))
	}
	return fmt.Sprintf("%d skill%s and %d tool%s", skills, plural(skills), tools, plural(tools))
}

func printShadowed(e *env, shadows []skill.Shadow) error {
	if len(shadows) == 0 {
		fmt.Fprintln(e.stdout, "no name collisions")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSERVED\tSHADOWED\tWHY")
	for _, s := range shadows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, sourceText(s.Winner), sourceText(s.Loser), s.Reason)
	}
	return tw.Flush()
}

// sourceText names where an entry comes from: its kind (mcp for a tool's
// server) and root, and the agent the root serves; "-" for none.
func sourceText(s *skill.Skill) string {
	if s == nil {
		return "-"
	}
	kind := string(s.Root.Kind)
	if s.Root.Kind == skill.KindServer {
		kind = "mcp"
	}
	out := kind + ":" + s.Root.Display
	if s.Root.Agent != "" {
		out += " (agent " + s.Root.Agent + ")"
	}
	return out
}

// oneLine collapses whitespace, drops control characters (skill text is
// untrusted: no terminal escapes) and cuts s to n characters.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
