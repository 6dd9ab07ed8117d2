package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newShowCmd(e *env) *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "show everything about one skill",
		Long: `Shows everything the router knows about one skill: frontmatter, source and
precedence, what it shadows or is shadowed by, hashes, resource files,
validation problems, whether it is enabled (and if not, why), and whether
the router may match it to a task (model-invocable: no when its frontmatter
sets disable-model-invocation; it still loads by name).`,
		Example: `  routerctl show pdf-form-filling
  routerctl show code-review-checklist --agent reviewer --json`,
		Args: exactArgs(1, "one skill NAME"),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "resolve the name as this `agent` sees it")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, args []string) error {
		res, err := c.GetSkill(ctx, &routerv1.GetSkillRequest{Name: args[0], Agent: agent})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(res)
		}
		return writeSkill(e.stdout, skillpb.Entry(res.GetSkill()))
	})
	return cmd
}

// writeSkill prints an entry's details as aligned "label: value" rows,
// then its resource files and problems.
func writeSkill(w io.Writer, ent *skill.Entry) error {
	var b strings.Builder
	rs := skillRows(ent)
	width := 0
	for _, r := range rs {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	for _, r := range rs {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, r[0]+":", r[1])
	}
	s := ent.Skill
	if len(s.Resources) > 0 {
		fmt.Fprintf(&b, "resources (%d):\n", len(s.Resources))
		for _, r := range s.Resources {
			fmt.Fprintf(&b, "  %-50s %8d bytes\n", r.Path, r.Size)
		}
		if s.ResourcesTruncated {
			fmt.Fprintln(&b, "  ... more files than the listing cap")
		}
	}
	if len(s.Problems) > 0 {
		fmt.Fprintf(&b, "problems (%d):\n", len(s.Problems))
		for _, p := range s.Problems {
			fmt.Fprintf(&b, "  %s\n", problemText(p))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// rows are "label: value" rows, in order.
type rows [][2]string

func (r *rows) add(label, format string, args ...any) {
	*r = append(*r, [2]string{label, fmt.Sprintf(format, args...)})
}

// skillRows are the rows of an entry: where it comes from and whether it
// is served, then its frontmatter, then its size and what it shadows.
func skillRows(ent *skill.Entry) rows {
	s := ent.Skill
	var r rows
	r.add("name", "%s", s.Name)
	r.add("description", "%s", oneLine(s.Description(), 200))
	r.add("source", "%s/%s", sourceText(s), s.RelPath)
	r.add("precedence", "%d", ent.Rank)
	r.add("trust", "%s", trustWord(s.Trusted()))
	if s.Enabled() {
		r.add("enabled", "yes")
	} else {
		r.add("enabled", "no: %s", s.DisabledReason())
	}
	if s.Enabled() && !s.Frontmatter.DisableModelInvocation {
		r.add("model-invocable", "yes: the router may match it to a task")
	} else {
		r.add("model-invocable", "no: never matched (disable-model-invocation); loads by name")
	}
	if s.Registry.Owner != "" {
		r.add("owner", "%s", s.Registry.Owner)
	}
	r = append(r, frontmatterRows(s.Frontmatter)...)
	r.add("size", "%d bytes, body about %d tokens", s.Size, s.BodyTokens)
	r.add("sha256", "%s", s.ContentHash)
	if sb := ent.ShadowedBy; sb != nil {
		r.add("shadowed by", "%s/%s", sourceText(sb.Skill), sb.Skill.RelPath)
	}
	for _, sh := range ent.Shadows {
		r.add("shadows", "%s/%s", sourceText(sh.Skill), sh.Skill.RelPath)
	}
	return r
}

// frontmatterRows are the rows of the frontmatter fields set beside the
// name and description.
func frontmatterRows(fm skill.Frontmatter) rows {
	var r rows
	if fm.License != "" {
		r.add("license", "%s", fm.License)
	}
	if len(fm.Tags) > 0 {
		r.add("tags", "%s", strings.Join(fm.Tags, ", "))
	}
	if len(fm.Triggers) > 0 {
		r.add("triggers", "%s", strings.Join(fm.Triggers, "; "))
	}
	if fm.Hidden {
		r.add("hidden", "yes")
	}
	for _, k := range slices.Sorted(maps.Keys(fm.Metadata)) {
		r.add("metadata."+oneLine(k, 40), "%s", oneLine(fm.Metadata[k], 120))
	}
	for _, k := range slices.Sorted(maps.Keys(fm.Extra)) {
		r.add("extra."+oneLine(k, 40), "%s", oneLine(fm.Extra[k], 120))
	}
	return r
}

// trustWord names a source's trust as the API's enum does.
func trustWord(trusted bool) string {
	if trusted {
		return "trusted"
	}
	return "untrusted"
}

func problemText(p skill.Problem) string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s: %s: %s [%s]", loc, p.Severity, p.Message, p.Code)
}
