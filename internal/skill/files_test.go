package skill

import "testing"

func TestMediaType(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"SKILL.md", "text/markdown; charset=utf-8"},
		{"references/notes.MARKDOWN", "text/markdown; charset=utf-8"},
		{"scripts/fill.py", "text/x-python; charset=utf-8"},
		{"scripts/FILL.PY", "text/x-python; charset=utf-8"},
		{"scripts/run.sh", "text/x-shellscript; charset=utf-8"},
		{"assets/logo.png", "image/png"}, // the system's table, whose built-in part Go fixes
		{"LICENSE", ""},
		{"data.no-such-extension", ""},
	} {
		if got := MediaType(c.name); got != c.want {
			t.Errorf("MediaType(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
