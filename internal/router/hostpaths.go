package router

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/mcpsag/router/internal/skill"
)

// hostPaths hides the host's folders in what Status tells clients: the
// workspace, the state folder, the model folder and the temporary folder
// (where a cache that cannot be opened in place is kept) become
// <workspace>, <state>, <model> and <temp>. An operator reads the real ones
// in the router's start log line (workspace, state_dir) and its config; a
// client learns the layout of the host from none of them.
type hostPaths []hostPath

type hostPath struct {
	dir         string
	re          *regexp.Regexp
	placeholder string
}

// newHostPaths makes the replacements for the folders named in cfg, the
// longest first, so a folder inside another is named by its own
// placeholder.
func newHostPaths(cfg Config) hostPaths {
	var out hostPaths
	for _, f := range []struct{ dir, placeholder string }{
		{cfg.Workspace, "<workspace>"}, {cfg.StateDir, "<state>"}, {cfg.ModelDir, "<model>"}, {os.TempDir(), "<temp>"},
	} {
		if f.dir == "" {
			continue
		}
		dir := filepath.Clean(f.dir)
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if dir == string(filepath.Separator) {
			continue
		}
		// The folder itself, or a path in it: not a sibling whose name
		// merely starts with the folder's.
		re := regexp.MustCompile(regexp.QuoteMeta(dir) + `(/|$|[^\w.\-])`)
		out = append(out, hostPath{dir: dir, re: re, placeholder: f.placeholder})
	}
	slices.SortStableFunc(out, func(a, b hostPath) int { return cmp.Compare(len(b.dir), len(a.dir)) })
	return out
}

// text replaces the host folders named in s with their placeholders.
func (h hostPaths) text(s string) string {
	for _, p := range h {
		s = p.re.ReplaceAllString(s, p.placeholder+"$1")
	}
	return s
}

// path shows p with its folder's placeholder, or as its base name when it
// lies in none of them.
func (h hostPaths) path(p string) string {
	if p == "" {
		return ""
	}
	if s := h.text(p); s != p || !filepath.IsAbs(p) {
		return s
	}
	return filepath.Base(p)
}

// hide replaces the host paths in the fields of st that clients see.
func (h hostPaths) hide(st *skill.Status) {
	st.DegradedReason = h.text(st.DegradedReason)
	st.LastReindexError = h.text(st.LastReindexError)
	st.Config.Path = h.path(st.Config.Path)
	st.Config.Error = h.text(st.Config.Error)
	if st.Model != nil {
		st.Model.Path = h.path(st.Model.Path)
	}
}
