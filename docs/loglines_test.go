package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLogLinesExist checks that every message in the tables of
// docs/operations.md's "Log lines an operator greps for" and of its
// rollback table is one the router's code writes: a message that was
// reworded in the code would otherwise be grepped for in vain.
func TestLogLinesExist(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Upgrade and rollback\n")
	if !ok {
		t.Fatal("docs/operations.md has no section Upgrade and rollback")
	}
	var msgs []string
	for _, m := range regexp.MustCompile("(?m)^\\| `[^`]*`[^|`]* \\| `([^`]+)` \\||^\\| `([^`]+)` \\| (?:INFO|WARN|ERROR) \\|").FindAllStringSubmatch(section, -1) {
		msgs = append(msgs, m[1]+m[2])
	}
	if len(msgs) < 30 {
		t.Fatalf("found %d messages in the tables, want at least 30: %q", len(msgs), msgs)
	}

	// Every string literal of the code that is not a test.
	var code strings.Builder
	for _, dir := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			code.Write(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, msg := range msgs {
		if !strings.Contains(code.String(), strconv.Quote(msg)) && !strings.Contains(code.String(), strconv.Quote(msg)[:len(msg)+1]) {
			t.Errorf("docs/operations.md names the log message %q, which no code writes", msg)
		}
	}
}
