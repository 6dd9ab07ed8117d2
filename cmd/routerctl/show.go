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
		return writeSkill(e.stdout, res.Skill)
	})
	return cmd
}

// writeSkill prints a skill's details as aligned "label: value" rows.
func writeSkill(w io.Writer, d *routerv1.SkillDetail) error {
	fm := d.GetFrontmatter()
	var rows [][2]string
	add := func(label, format string, args ...any) {
		rows = append(rows, [2]string{label, fmt.Sprintf(format, args...)})
	}
	add("name", "%s", d.Name)
	add("description", "%s", oneLine(fm.GetDescription(), 200))
	add("source", "%s/%s", sourceText(d.Source), d.Source.GetPath())
	add("precedence", "%d", d.Precedence)
	add("trust", "%s", strings.ToLower(strings.TrimPrefix(d.Trust.String(), "TRUST_")))
	if d.Enabled {
		add("enabled", "yes")
	} else {
		add("enabled", "no: %s", d.DisabledReason)
	}
	if d.ModelInvocable {
		add("model-invocable", "yes: the router may match it to a task")
	} else {
		add("model-invocable", "no: never matched (disable-model-invocation); loads by name")
	}
	if d.Owner != "" {
		add("owner", "%s", d.Owner)
	}
	if fm.GetLicense() != "" {
		add("license", "%s", fm.License)
	}
	if len(fm.GetTags()) > 0 {
		add("tags", "%s", strings.Join(fm.Tags, ", "))
	}
	if len(fm.GetTriggers()) > 0 {
		add("triggers", "%s", strings.Join(fm.Triggers, "; "))
	}
	if fm.GetHidden() {
		add("hidden", "yes")
	}
	for _, k := range slices.Sorted(maps.Keys(fm.GetMetadata())) {
		add("metadata."+oneLine(k, 40), "%s", oneLine(fm.Metadata[k], 120))
	}
	for _, k := range slices.Sorted(maps.Keys(fm.GetExtra())) {
		add("extra."+oneLine(k, 40), "%s", oneLine(fm.Extra[k], 120))
	}
	add("size", "%d bytes, body about %d tokens", d.SizeBytes, d.BodyTokens)
	add("sha256", "%s", d.ContentSha256)
	if d.ShadowedBy != nil {
		add("shadowed by", "%s/%s", sourceText(d.ShadowedBy), d.ShadowedBy.Path)
	}
	for _, s := range d.Shadows {
		add("shadows", "%s/%s", sourceText(s), s.Path)
	}
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r[0]))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s  %s\n", width+1, r[0]+":", r[1])
	}
	if len(d.Resources) > 0 {
		fmt.Fprintf(&b, "resources (%d):\n", len(d.Resources))
		for _, r := range d.Resources {
			fmt.Fprintf(&b, "  %-50s %8d bytes\n", r.Path, r.SizeBytes)
		}
		if d.ResourcesTruncated {
			fmt.Fprintln(&b, "  ... more files than the listing cap")
		}
	}
	if len(d.Problems) > 0 {
		fmt.Fprintf(&b, "problems (%d):\n", len(d.Problems))
		for _, p := range d.Problems {
			fmt.Fprintf(&b, "  %s\n", problemText(p))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func problemText(p *routerv1.Problem) string {
	sev := strings.ToLower(strings.TrimPrefix(p.Severity.String(), "SEVERITY_"))
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s: %s: %s [%s]", loc, sev, p.Message, p.Code)
}
