// Package allowlist reads ALLOWLIST.txt, the operator's list of skill scripts
// that may run. The router never runs scripts; it answers whether one may run
// (AuthorizeExec) from this list, the skills_exec flag and the script's
// current content.
//
// File format, one entry per line:
//
//	# comment
//	<skill-name>  <script path relative to the skill folder>  [sha256:<hex>]
//
// for example
//
//	pdf-form-filling  scripts/fill_form.py  sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	release-notes     scripts/collect_commits.sh
//
// A pinned entry allows only that exact content; an unpinned one allows
// whatever the file holds. Scripts of untrusted (learned) skills are allowed
// only when pinned. Paths use forward slashes and may not leave the skill
// folder. Lines that do not parse are reported and allow nothing.
//
// The same file lists the tools of MCP servers that CallTool may call, one
// per line, by their "server.tool" names:
//
//	tool:<server>.<tool>  [sha256:<hex>]
//	tool:<server>.*
//
// A pin names the sha256 of the tool's definition (its name, title,
// description, input schema and annotations), so a server that changes a
// tool after it was approved is refused. Tools of untrusted servers are
// allowed only when pinned; "server.*" allows every tool of a trusted
// server and cannot be pinned. A skill whose name starts with "tool:"
// cannot have its scripts listed.
package allowlist

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/mcpsag/router/internal/filestamp"
)

// maxFileBytes caps ALLOWLIST.txt.
const maxFileBytes = 1 << 20

// Entry allows one script of one skill.
type Entry struct {
	Skill  string
	Script string // cleaned, slash-separated, relative to the skill folder
	// SHA256 pins the content (lower-case hex), empty when unpinned.
	SHA256 string
	Line   int
}

// Problem is a line that did not parse.
type Problem struct {
	Line    int
	Message string
}

// ToolEntry allows one tool of an MCP server, or every tool of a server
// (Tool "server.*").
type ToolEntry struct {
	Tool string
	// SHA256 pins the tool's definition (lower-case hex), empty when
	// unpinned.
	SHA256 string
	Line   int
}

// ToolPrefix starts a tool line.
const ToolPrefix = "tool:"

// List is a parsed allowlist.
type List struct {
	entries  map[string]Entry // skill + "\x00" + script
	tools    map[string]ToolEntry
	Problems []Problem
}

func key(skill, script string) string { return skill + "\x00" + script }

// Parse reads an allowlist. Bad lines become Problems; they never widen what
// is allowed.
func Parse(r io.Reader) (*List, error) {
	l := &List{entries: map[string]Entry{}, tools: map[string]ToolEntry{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(f[0], ToolPrefix) {
			l.parseTool(n, f)
			continue
		}
		if len(f) < 2 || len(f) > 3 {
			l.Problems = append(l.Problems, Problem{n, "want: <skill> <script> [sha256:<hex>]"})
			continue
		}
		script, err := CleanScript(f[1])
		if err != nil {
			l.Problems = append(l.Problems, Problem{n, err.Error()})
			continue
		}
		e := Entry{Skill: f[0], Script: script, Line: n}
		if len(f) == 3 {
			h, err := parsePin(f[2])
			if err != nil {
				l.Problems = append(l.Problems, Problem{n, err.Error()})
				continue
			}
			e.SHA256 = h
		}
		if prev, dup := l.entries[key(e.Skill, e.Script)]; dup {
			l.Problems = append(l.Problems, Problem{n, fmt.Sprintf("duplicate of line %d; the first entry applies", prev.Line)})
			continue
		}
		l.entries[key(e.Skill, e.Script)] = e
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read allowlist: %w", err)
	}
	return l, nil
}

// parsePin reads sha256:<hex>.
func parsePin(s string) (string, error) {
	h, ok := strings.CutPrefix(strings.ToLower(s), "sha256:")
	if b, err := hex.DecodeString(h); !ok || err != nil || len(b) != 32 {
		return "", fmt.Errorf("%q is not sha256:<64 hex digits>", s)
	}
	return h, nil
}

// parseTool reads a tool line.
func (l *List) parseTool(n int, f []string) {
	bad := func(format string, args ...any) {
		l.Problems = append(l.Problems, Problem{n, fmt.Sprintf(format, args...)})
	}
	if len(f) > 2 {
		bad("want: tool:<server>.<tool> [sha256:<hex>]")
		return
	}
	e := ToolEntry{Tool: strings.TrimPrefix(f[0], ToolPrefix), Line: n}
	server, tool, ok := strings.Cut(e.Tool, ".")
	switch {
	case !ok || server == "" || tool == "":
		bad("%q is not a tool name: want tool:<server>.<tool> as Match lists it", f[0])
		return
	case strings.Contains(tool, "*") && tool != "*":
		bad("%q: only <server>.* may use a wildcard", f[0])
		return
	}
	if len(f) == 2 {
		if tool == "*" {
			bad("%q allows every tool of a server and cannot be pinned; pin tools one by one", f[0])
			return
		}
		h, err := parsePin(f[1])
		if err != nil {
			bad("%v", err)
			return
		}
		e.SHA256 = h
	}
	if prev, dup := l.tools[e.Tool]; dup {
		bad("duplicate of line %d; the first entry applies", prev.Line)
		return
	}
	l.tools[e.Tool] = e
}

// LookupTool returns the entry that allows a tool: its own, else its
// server's "server.*" entry.
func (l *List) LookupTool(name string) (ToolEntry, bool) {
	if l == nil {
		return ToolEntry{}, false
	}
	if e, ok := l.tools[name]; ok {
		return e, true
	}
	if server, _, ok := strings.Cut(name, "."); ok {
		e, ok := l.tools[server+".*"]
		return e, ok
	}
	return ToolEntry{}, false
}

// CleanScript validates and cleans a script path: relative, forward slashes,
// inside the skill folder.
func CleanScript(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New("script path is empty")
	case strings.ContainsRune(p, 0) || strings.Contains(p, `\`):
		return "", fmt.Errorf("script path %q has a NUL or backslash", p)
	case path.IsAbs(p):
		return "", fmt.Errorf("script path %q is absolute; give it relative to the skill folder", p)
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("script path %q leaves the skill folder", p)
	}
	return c, nil
}

// Lookup returns the entry for a skill's script.
func (l *List) Lookup(skill, script string) (Entry, bool) {
	if l == nil {
		return Entry{}, false
	}
	e, ok := l.entries[key(skill, script)]
	return e, ok
}

// Len returns the number of entries.
func (l *List) Len() int { return len(l.entries) }

// File is an allowlist file read on demand: it is re-read when its size or
// modification time changes, so edits apply to the next decision without a
// restart. A missing file is an empty list (nothing may run).
type File struct {
	Path string

	mu    sync.Mutex
	files *filestamp.Watch
	list  *List
	err   error
}

// Load returns the current list. A file that cannot be read yields an error;
// callers deny in that case.
func (f *File) Load() (*List, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.files == nil {
		f.files = &filestamp.Watch{Paths: []string{f.Path}}
	}
	if f.list != nil && !f.files.Changed() {
		return f.list, f.err
	}
	if f.list == nil {
		f.files.Mark() // the file as this read sees it
	}
	f.list, f.err = readFile(f.Path)
	return f.list, f.err
}

func readFile(p string) (*List, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return &List{entries: map[string]Entry{}, tools: map[string]ToolEntry{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("allowlist %s: %w", p, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("allowlist %s is over %d bytes", p, maxFileBytes)
	}
	return Parse(bytes.NewReader(data))
}
