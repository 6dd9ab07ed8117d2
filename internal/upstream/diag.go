package upstream

import (
	"bytes"
	"sort"
	"strings"
	"sync"
)

// Bounds of a stdio server's stderr tail.
const (
	tailLines     = 30
	tailLineBytes = 512
)

// tail keeps the last lines a process wrote, each cleaned and clipped, for
// diagnostics. It is an io.Writer safe for concurrent use.
type tail struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(t.partial) < tailLineBytes {
				t.partial = append(t.partial, p[:min(len(p), tailLineBytes-len(t.partial))]...)
			}
			break
		}
		if len(t.partial) < tailLineBytes {
			t.partial = append(t.partial, p[:min(i, tailLineBytes-len(t.partial))]...)
		}
		t.push()
		p = p[i+1:]
	}
	return n, nil
}

func (t *tail) push() {
	line, _ := Clean(string(t.partial), tailLineBytes)
	t.partial = t.partial[:0]
	if line == "" {
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > tailLines {
		t.lines = t.lines[len(t.lines)-tailLines:]
	}
}

// Lines returns the tail, the unfinished last line included.
func (t *tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		if line, _ := Clean(string(t.partial), tailLineBytes); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// redactor hides a server's command, arguments, environment values, header
// values and URL path from text shown to anyone: errors, Status and logs.
type redactor struct {
	secrets []string // longest first
}

func newRedactor(cfg *ServerConfig, resolved []string) *redactor {
	var s []string
	add := func(v string) {
		if len(strings.TrimSpace(v)) >= 3 {
			s = append(s, v)
		}
	}
	add(cfg.Command)
	for _, a := range cfg.Args {
		add(a)
	}
	add(cfg.Cwd)
	for _, v := range resolved {
		add(v)
	}
	if cfg.URL != "" {
		add(cfg.URL)
		if e := endpoint(cfg.URL); e != "" && len(cfg.URL) > len(e) {
			add(strings.TrimPrefix(cfg.URL, e))
		}
	}
	sort.Slice(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return &redactor{secrets: s}
}

// redact replaces every secret in text with REDACTED.
func (r *redactor) redact(text string) string {
	if r == nil {
		return text
	}
	for _, s := range r.secrets {
		if strings.Contains(text, s) {
			text = strings.ReplaceAll(text, s, "REDACTED")
		}
	}
	return text
}

func (r *redactor) lines(in []string) []string {
	for i, l := range in {
		in[i] = r.redact(l)
	}
	return in
}
