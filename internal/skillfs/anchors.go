package skillfs

import (
	"os"
	"path/filepath"
	"strings"
)

// watchAnchors returns the folders to watch so that a root (possibly with a
// "*" segment) is noticed when it appears: the root's parent and, for a
// wildcard root, the wildcard's parent and each folder it matches.
func watchAnchors(workspace, spec string) []string {
	p := filepath.FromSlash(spec)
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	before, after, wild := strings.Cut(p, "*")
	if !wild {
		return []string{filepath.Dir(filepath.Clean(p)), filepath.Clean(p)}
	}
	parent := filepath.Clean(before)
	out := []string{parent}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.IsDir() {
			match := filepath.Join(parent, e.Name())
			out = append(out, match, filepath.Dir(filepath.Clean(match+after)))
		}
	}
	return out
}

// WatchDirs returns the folders a watcher should cover so that every change
// under the roots is seen: the workspace, every folder a scan visited, and
// the anchors of each configured root (so that new roots and agent folders
// are noticed), keeping only folders that exist.
func WatchDirs(workspace string, specs []RootSpec, scanned []string) []string {
	dirs := append([]string{workspace}, scanned...)
	if len(specs) == 0 {
		specs = DefaultRoots()
	}
	for _, spec := range specs {
		dirs = append(dirs, watchAnchors(workspace, spec.Path)...)
	}
	return existing(dirs)
}

// existing keeps the folders that exist, without duplicates.
func existing(dirs []string) []string {
	seen := make(map[string]bool, len(dirs))
	var out []string
	for _, d := range dirs {
		d = filepath.Clean(d)
		if seen[d] {
			continue
		}
		seen[d] = true
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}
