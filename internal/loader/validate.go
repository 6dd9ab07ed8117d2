package loader

import (
	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

// Report is the result of validating skill folders offline.
type Report struct {
	// Files is the number of SKILL.md files checked; Valid how many parse,
	// and Served how many of those would be listed and matched (valid,
	// not shadowed, not disabled in a registry, within the default size
	// limits).
	Files, Valid, Served int
	Problems             []skill.Problem
	// Shadows are name collisions the router would resolve by precedence.
	Shadows []skill.Shadow
}

// Validate checks every SKILL.md and registry.json under roots the way a
// pass reads them, without a store, and reports every problem with its file
// and line plus the name collisions precedence (the order of root kinds, as
// configured; skill.DefaultPrecedence when nil) would resolve. A skill over
// the size limits (skill.DefaultSizeLimits, with scanLim.MaxResources files)
// is a problem and not served.
func Validate(roots []skill.Root, precedence []skill.SourceKind, lim skillmd.Limits, scanLim skillfs.ScanLimits) *Report {
	scan := skillfs.Scan(roots, scanLim, nil)
	size := skill.DefaultSizeLimits
	size.MaxFiles = scanLim.MaxResources
	rep := &Report{Files: len(scan.Files)}
	rep.Problems = append(rep.Problems, scan.Problems...)
	registries := make(map[string]map[string]skill.RegistryEntry, len(roots))
	for _, root := range roots {
		entries, _, problems := skillfs.ReadRegistry(root.Path)
		registries[root.Path] = entries
		rep.Problems = append(rep.Problems, problems...)
	}
	var skills []*skill.Skill
	for _, f := range scan.Files {
		r := parseFound(f, lim)
		rep.Problems = append(rep.Problems, r.record.Problems...)
		if !r.ok {
			continue
		}
		rep.Valid++
		g := r.record.Good
		s := &skill.Skill{Name: g.Name, Dir: f.Dir, RelPath: f.RelPath, Root: f.Root, Frontmatter: g.Frontmatter,
			Size: g.Size, Resources: f.Resources, ResourcesTruncated: f.ResourcesTruncated}
		if e, ok := registries[f.Root.Path][skillmd.FoldName(s.Name)]; ok {
			s.Registry = e
		}
		if s.Oversize = size.Oversize(s); s.Oversize != "" {
			rep.Problems = append(rep.Problems, skill.Problem{Severity: skill.SeverityWarning, Code: "skill-too-large",
				File: f.Path, Message: "not served: " + s.Oversize})
		}
		skills = append(skills, s)
	}
	cat := catalog.New(catalog.Input{Skills: skills, Precedence: precedence})
	for _, s := range cat.Winners() {
		if s.Enabled() {
			rep.Served++
		}
	}
	rep.Shadows = cat.Shadowed("*")
	skill.SortProblems(rep.Problems)
	return rep
}
