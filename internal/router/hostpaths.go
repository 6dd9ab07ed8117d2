package router

import (
	"cmp"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// hostPaths hides the host's folders in what Status tells clients: the
// workspace, the state folder, the model folder and the temporary folder
// (where a cache that cannot be opened in place is kept) become
// <workspace>, <state>, <model> and <temp>. The temporary folder is every
// process's: after <temp> come only the folders the router makes there
// (statedir's), and any other path in it shows as <temp>/…/ and its base
// name. An operator reads the real ones in the router's start log line
// (workspace, state_dir) and its config; a client learns the layout of the
// host from none of them.
type hostPaths []hostPath

type hostPath struct {
	dir         string
	re          *regexp.Regexp
	placeholder string
	temp        bool
}

// tempRest matches the temporary folder and the rest of a path in it, up to
// a character that ends a path in a message.
const tempRest = `(/[^\s"'\x60:;,()\[\]<>]*)?`

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
		if f.placeholder == "<temp>" {
			out = append(out, hostPath{dir: dir, re: regexp.MustCompile(regexp.QuoteMeta(dir) + tempRest), placeholder: f.placeholder, temp: true})
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
		if p.temp {
			s = p.tempText(s)
			continue
		}
		s = p.re.ReplaceAllString(s, p.placeholder+"$1")
	}
	return s
}

// tempText replaces the temporary folder in s, and the paths in it: a
// folder the router made there keeps its path after <temp>, any other is
// <temp>/…/ and its base name.
func (p hostPath) tempText(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		end := m[1]
		if m[2] < 0 && end < len(s) && (isWordByte(s[end]) || s[end] == '.' || s[end] == '-') {
			continue // a sibling whose name starts with the folder's
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(p.placeholder)
		if m[2] >= 0 {
			b.WriteString(tempPath(s[m[2]+1 : m[3]]))
		}
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// tempPath is how rest, a path in the temporary folder, is shown after
// <temp>.
func tempPath(rest string) string {
	first, _, nested := strings.Cut(rest, "/")
	switch {
	case strings.HasPrefix(first, statedir.TempCachePrefix), strings.HasPrefix(first, statedir.PrivateStatePrefix):
		return "/" + rest
	case !nested || strings.Trim(rest[len(first):], "/") == "":
		return "/" + rest
	}
	trailing := ""
	if strings.HasSuffix(rest, "/") {
		trailing = "/"
	}
	return "/…/" + path.Base(strings.TrimRight(rest, "/")) + trailing
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
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
	for _, m := range []*skill.ModelStatus{st.Model, st.FastModel} {
		if m != nil {
			m.Path = h.path(m.Path)
		}
	}
}
