package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// tsClient returns node and the folder of the TypeScript SDK client, or
// skips the test when either is missing.
func tsClient(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK client test needs Node 18 or later")
	}
	_, file, _, _ := runtime.Caller(0)
	dir = filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mcp-ts-client")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skipf("the TypeScript SDK is not installed: run 'npm ci' in %s (.ci/run does)", dir)
	}
	return node, dir
}

// skillsSummary is what skills.mjs prints.
type skillsSummary struct {
	Transport                     string
	Pages, Skills                 int
	VerifiedSkills, VerifiedFiles int
	Refused                       int
	Directory                     []string
	// Total and Hint are the _meta of a listing of more than one page.
	Total int
	Hint  string
}

// runSkills runs skills.mjs with args and decodes its summary.
func runSkills(t *testing.T, node, dir string, timeout time.Duration, args ...string) skillsSummary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"skills.mjs"}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("skills.mjs %v: %v\n%s", args, err, stderr.String())
	}
	var s skillsSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	return s
}

// TestTypeScriptSkillsExtension drives the Skills extension with the
// official TypeScript SDK over Streamable HTTP and stdio: every skill of
// the examples listed and confirmed, every file of every skill read and
// checked against its digest, and the scoping of agents and hidden skills.
func TestTypeScriptSkillsExtension(t *testing.T) {
	node, dir := tsClient(t)
	ws := daemontest.CopyExamples(t)
	hidden := filepath.Join(ws, "skills", "internal-helper")
	must(t, os.MkdirAll(hidden, 0o755))
	must(t, os.WriteFile(filepath.Join(hidden, "SKILL.md"), []byte("---\nname: internal-helper\ndescription: A helper other skills name.\nhidden: true\n---\nHelp.\n"), 0o644))
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	stdio := []string{"--stdio", "--", router(t), "mcp", "--workspace", ws, "--state-dir", t.TempDir()}

	// The global view: not the reviewer's skill, not the hidden or the
	// disabled one.
	global := []string{"--expect", "pdf-form-filling", "--absent", "code-review-checklist", "--absent", "internal-helper", "--absent", "legacy-ftp-upload"}
	reviewer := []string{"--expect", "code-review-checklist", "--expect", "pdf-form-filling", "--absent", "internal-helper"}
	for name, args := range map[string][]string{
		"http":           append(append([]string{}, global...), "--url", url),
		"http reviewer":  append(append([]string{}, reviewer...), "--url", url+"?agent=reviewer"),
		"stdio":          append(append([]string{}, global...), stdio...),
		"stdio reviewer": append(append(append([]string{}, reviewer...), stdio...), "--agent", "reviewer"),
	} {
		t.Run(name, func(t *testing.T) {
			s := runSkills(t, node, dir, 90*time.Second, args...)
			if s.Skills < 7 || s.VerifiedSkills != s.Skills || s.VerifiedFiles <= s.Skills || s.Refused == 0 || len(s.Directory) == 0 ||
				s.Total != 0 || s.Hint != "" {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

// TestTypeScriptSkillsExtensionLargeCatalog pages through a catalog of
// 10,000 skills with the TypeScript SDK, over HTTP and over a stdio session
// attached to the same router.
func TestTypeScriptSkillsExtensionLargeCatalog(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds an index of 10,000 skills")
	}
	node, dir := tsClient(t)
	const n = 10000
	ws := t.TempDir()
	for i := range n {
		d := filepath.Join(ws, "skills", fmt.Sprintf("synthetic-%05d", i))
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(fmt.Sprintf(
			"---\nname: synthetic-%05d\ndescription: Synthetic skill %d for paging a large catalog.\n---\nStep %d.\n", i, i, i)), 0o644))
		if i%1000 == 0 {
			must(t, os.MkdirAll(filepath.Join(d, "references"), 0o755))
			must(t, os.WriteFile(filepath.Join(d, "references", "notes.md"), []byte(fmt.Sprintf("Notes %d.\n", i)), 0o644))
		}
	}
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Model.Disabled = true // paging needs no embeddings
	}})
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	for name, args := range map[string][]string{
		"http":  {"--url", url},
		"stdio": {"--stdio", "--", router(t), "mcp", "--connect", r.Addr},
	} {
		t.Run(name, func(t *testing.T) {
			s := runSkills(t, node, dir, 5*time.Minute, append([]string{"--verify", "20", "--expect", "synthetic-09999", "--absent", "synthetic-10000"}, args...)...)
			if s.Skills != n || s.Pages != n/100 || s.VerifiedSkills != 20 || s.VerifiedFiles != 21 ||
				s.Total != n || !strings.Contains(s.Hint, "This listing holds 10000 skills in 100 pages") || !strings.Contains(s.Hint, "find_skills") {
				t.Errorf("summary %+v", s)
			}
		})
	}
}
