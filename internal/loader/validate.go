package loader

import (
	"os"
	"path/filepath"

	"github.com/mcpsag/router/internal/skill"
)

// Report is the result of validating skill folders offline.
type Report struct {
	// Files is the number of SKILL.md files checked; Valid how many
	// would be served.
	Files, Valid int
	Problems     []skill.Problem
	// Shadows are name collisions the router would resolve by precedence.
	Shadows []Shadow
}

// RootsForPath interprets a folder given on the command line: a skill folder
// (it holds SKILL.md), a workspace (it holds skills/ or agents/), or else a
// skill root.
func RootsForPath(dir string) ([]skill.Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, SkillFile)); err == nil {
		return []skill.Root{newRoot(filepath.Dir(abs), filepath.Dir(abs), skill.KindProject, "", 0)}, nil
	}
	for _, sub := range []string{"skills", "agents"} {
		if fi, err := os.Stat(filepath.Join(abs, sub)); err == nil && fi.IsDir() {
			return ExpandRoots(abs, DefaultRoots())
		}
	}
	return []skill.Root{newRoot(abs, abs, skill.KindProject, "", 0)}, nil
}

// Validate checks every SKILL.md and registry.json under roots the way the
// router would load them, without a store, and reports every problem with its
// file and line plus the name collisions precedence would resolve.
func Validate(roots []skill.Root, lim Limits, scanLim ScanLimits) *Report {
	scan := Scan(roots, scanLim)
	rep := &Report{Files: len(scan.Files)}
	rep.Problems = append(rep.Problems, scan.Problems...)
	var skills []*skill.Skill
	for _, f := range scan.Files {
		r := parseFound(f, lim)
		rep.Problems = append(rep.Problems, r.record.Problems...)
		if !r.ok {
			continue
		}
		rep.Valid++
		g := r.record.Good
		skills = append(skills, &skill.Skill{Name: g.Name, Dir: f.Dir, RelPath: f.RelPath, Root: f.Root})
	}
	for _, root := range roots {
		_, _, problems := ReadRegistry(root.Path)
		rep.Problems = append(rep.Problems, problems...)
	}
	rep.Shadows = NewCatalog(CatalogInput{Skills: skills}).Shadowed("*")
	sortProblems(rep.Problems)
	return rep
}
