package skillfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpsag/router/internal/skill"
)

// RootSpec is a configured skill root before expansion. Path is relative to
// the workspace unless absolute, and may contain one "*" segment that matches
// any folder; with Agent "*" that segment names the agent (agents/*/skills).
type RootSpec struct {
	Path  string
	Kind  skill.SourceKind
	Agent string
}

// DefaultRoots are the roots under a workspace when none are configured:
// skills/ for everyone and agents/<agent>/skills/ for each agent.
func DefaultRoots() []RootSpec {
	return []RootSpec{
		{Path: "skills", Kind: skill.KindProject},
		{Path: "agents/*/skills", Kind: skill.KindProject, Agent: "*"},
	}
}

// ExpandRoots resolves specs against the workspace and expands wildcards. A
// root that does not exist yet is kept (it may appear later); a wildcard that
// matches nothing yields no roots. Folders starting with "_" or "." never
// match a wildcard.
func ExpandRoots(workspace string, specs []RootSpec) ([]skill.Root, error) {
	var roots []skill.Root
	for i, spec := range specs {
		if spec.Path == "" {
			return nil, fmt.Errorf("root %d: empty path", i+1)
		}
		p := filepath.FromSlash(spec.Path)
		if !filepath.IsAbs(p) {
			p = filepath.Join(workspace, p)
		}
		p = filepath.Clean(p)
		star := strings.Count(p, "*")
		if star > 1 || strings.ContainsAny(p, "?[") {
			return nil, fmt.Errorf("root %q: at most one '*' segment is supported", spec.Path)
		}
		if spec.Agent == "*" && star == 0 {
			return nil, fmt.Errorf("root %q: agent '*' needs a '*' segment in the path", spec.Path)
		}
		if star == 0 {
			roots = append(roots, newRoot(workspace, p, spec.Kind, spec.Agent, len(roots)))
			continue
		}
		before, after, _ := strings.Cut(p, "*")
		parent := filepath.Clean(before)
		if !strings.HasSuffix(before, string(filepath.Separator)) || (after != "" && !strings.HasPrefix(after, string(filepath.Separator))) {
			return nil, fmt.Errorf("root %q: '*' must be a whole path segment", spec.Path)
		}
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue // the parent may appear later; rescans expand again
		}
		for _, e := range entries {
			name := e.Name()
			if ignoredName(name) || !isDirEntry(parent, e) {
				continue
			}
			agent := spec.Agent
			if agent == "*" {
				agent = name
			}
			roots = append(roots, newRoot(workspace, filepath.Join(parent, name)+after, spec.Kind, agent, len(roots)))
		}
	}
	return roots, nil
}

func newRoot(workspace, p string, kind skill.SourceKind, agent string, order int) skill.Root {
	display := p
	if rel, err := filepath.Rel(workspace, p); err == nil && filepath.IsLocal(rel) {
		display = filepath.ToSlash(rel)
	}
	return skill.Root{Path: p, Display: display, Kind: kind, Agent: agent, Order: order}
}

// ignoredName reports whether a folder is skipped: drafts and templates
// (leading "_"), hidden folders (leading "."), and dependency trees.
func ignoredName(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || name == "node_modules"
}

func isDirEntry(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	fi, err := os.Stat(filepath.Join(parent, e.Name()))
	return err == nil && fi.IsDir()
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
