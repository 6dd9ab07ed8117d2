package main

import (
	"fmt"
	"strings"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

const showUsage = `
Usage: routerctl show NAME [--agent A]

Shows everything the router knows about one skill: frontmatter, source and
precedence, what it shadows or is shadowed by, hashes, resource files,
validation problems, and whether it is enabled (and if not, why).
`

func runShow(e *env, args []string) error {
	fs := newFlags(e, "show", showUsage)
	agent := fs.String("agent", "", "resolve the name as this agent sees it")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"show takes one skill NAME (see routerctl show --help)"}
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := c.GetSkill(ctx, &routerv1.GetSkillRequest{Name: pos[0], Agent: *agent})
	if err != nil {
		return err
	}
	if e.json {
		return e.printProto(res)
	}
	d := res.Skill
	w := e.stdout
	fm := d.Frontmatter
	fmt.Fprintf(w, "name:         %s\n", d.Name)
	fmt.Fprintf(w, "description:  %s\n", oneLine(fm.Description, 200))
	fmt.Fprintf(w, "source:       %s/%s\n", sourceText(d.Source), d.Source.Path)
	fmt.Fprintf(w, "precedence:   %d\n", d.Precedence)
	fmt.Fprintf(w, "trust:        %s\n", strings.ToLower(strings.TrimPrefix(d.Trust.String(), "TRUST_")))
	if d.Enabled {
		fmt.Fprintln(w, "enabled:      yes")
	} else {
		fmt.Fprintf(w, "enabled:      no: %s\n", d.DisabledReason)
	}
	fmt.Fprintf(w, "model match:  %v\n", d.ModelInvocable)
	if d.Owner != "" {
		fmt.Fprintf(w, "owner:        %s\n", d.Owner)
	}
	if fm.License != "" {
		fmt.Fprintf(w, "license:      %s\n", fm.License)
	}
	if len(fm.Tags) > 0 {
		fmt.Fprintf(w, "tags:         %s\n", strings.Join(fm.Tags, ", "))
	}
	if len(fm.Triggers) > 0 {
		fmt.Fprintf(w, "triggers:     %s\n", strings.Join(fm.Triggers, "; "))
	}
	if fm.Hidden {
		fmt.Fprintln(w, "hidden:       yes")
	}
	for _, k := range sortedKeys(fm.Metadata) {
		fmt.Fprintf(w, "metadata.%s: %s\n", k, fm.Metadata[k])
	}
	for _, k := range sortedKeys(fm.Extra) {
		fmt.Fprintf(w, "extra.%s: %s\n", k, oneLine(fm.Extra[k], 120))
	}
	fmt.Fprintf(w, "size:         %d bytes, body about %d tokens\n", d.SizeBytes, d.BodyTokens)
	fmt.Fprintf(w, "sha256:       %s\n", d.ContentSha256)
	if d.ShadowedBy != nil {
		fmt.Fprintf(w, "shadowed by:  %s/%s\n", sourceText(d.ShadowedBy), d.ShadowedBy.Path)
	}
	for _, s := range d.Shadows {
		fmt.Fprintf(w, "shadows:      %s/%s\n", sourceText(s), s.Path)
	}
	if len(d.Resources) > 0 {
		fmt.Fprintf(w, "resources (%d):\n", len(d.Resources))
		for _, r := range d.Resources {
			fmt.Fprintf(w, "  %-50s %8d bytes\n", r.Path, r.SizeBytes)
		}
		if d.ResourcesTruncated {
			fmt.Fprintln(w, "  ... more files than the listing cap")
		}
	}
	if len(d.Problems) > 0 {
		fmt.Fprintf(w, "problems (%d):\n", len(d.Problems))
		for _, p := range d.Problems {
			fmt.Fprintf(w, "  %s\n", problemText(p))
		}
	}
	return nil
}

func problemText(p *routerv1.Problem) string {
	sev := strings.ToLower(strings.TrimPrefix(p.Severity.String(), "SEVERITY_"))
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s: %s: %s [%s]", loc, sev, p.Message, p.Code)
}
