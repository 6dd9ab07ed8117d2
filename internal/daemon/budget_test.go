package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/skill"
)

// loadReply is what TestLoadSkillRepliesFitTheirBudget reads of a
// load_skill reply.
type loadReply struct {
	Content        string
	Truncated      bool
	Tokens         int
	TokenBudget    int `json:"token_budget"`
	Files          []struct{ Path string }
	Folders        []struct{ Path string }
	FilesTotal     int    `json:"files_total"`
	FilesTruncated bool   `json:"files_truncated"`
	FilesNote      string `json:"files_note"`
}

// writeLargeSkill writes a skill of 500 files (SKILL.md and 499 more, in
// folders up to four deep) with a body of about 15,600 tokens, and returns
// the paths of its files besides SKILL.md.
func writeLargeSkill(t *testing.T, ws, name string) []string {
	t.Helper()
	dir := filepath.Join(ws, "skills", name)
	var body strings.Builder
	for i := range 600 {
		fmt.Fprintf(&body, "Step %d: reconcile the ledger \"entries\" of the period against the archive, and note each <difference>.\n", i)
	}
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+
		"\ndescription: Reconcile ledger archives kept as many small files.\n---\n"+body.String()), 0o644))
	var paths []string
	add := func(rel string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte("record of "+rel+"\n"), 0o644))
		paths = append(paths, rel)
	}
	for i := range 4 {
		add(fmt.Sprintf("README-%d.md", i))
	}
	for i := range 15 {
		add(fmt.Sprintf("references/topic-%02d.md", i))
	}
	for i := range 10 {
		add(fmt.Sprintf("scripts/step-%02d.py", i))
	}
	for i := range 400 {
		add(fmt.Sprintf("archive/%d/q%d/entry-%03d.json", 2020+i%4, 1+(i/4)%4, i))
	}
	for i := range 70 {
		add(fmt.Sprintf("templates/forms/regional/eu/form-%02d.md", i))
	}
	slices.Sort(paths)
	return paths
}

// TestLoadSkillRepliesFitTheirBudget: a load_skill reply stays within its
// token budget, the file list included, for a skill of 500 files and a long
// body, at the default budget and others; and every file the reply does
// not list is reached by listing the folders it names with
// read_skill_file. Through the Go SDK's client, against a router.
func TestLoadSkillRepliesFitTheirBudget(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	want := writeLargeSkill(t, ws, "ledger-archive")
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "budget", Version: "1"}, nil,
		&mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
	must(t, err)
	defer cs.Close()

	for _, budget := range []int{0, 1000, 2000, 5000, 20000, 50000} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": "ledger-archive", "token_budget": budget}})
			must(t, err)
			var out loadReply
			decodeStructured(t, res, &out)
			n := skill.EstimateTokens(text(res))
			limit := budget
			if budget == 0 {
				limit = 5000 // the router's default
			}
			t.Logf("budget %d: reply %d tokens, body %d tokens, %d of %d files listed, %d folders; %s", budget, n, out.Tokens, len(out.Files), out.FilesTotal, len(out.Folders), out.FilesNote)
			if n > limit || out.TokenBudget != limit || out.FilesTotal != len(want) {
				t.Errorf("reply of %d tokens for a budget of %d (token_budget %d, files_total %d)", n, limit, out.TokenBudget, out.FilesTotal)
			}
			if out.FilesTruncated != (len(out.Files) < len(want)) || out.FilesTruncated && !strings.Contains(out.FilesNote, "read_skill_file with a folder's path") {
				t.Errorf("files_truncated %v with %d of %d files listed; note %q", out.FilesTruncated, len(out.Files), len(want), out.FilesNote)
			}
			// The body (some 15,600 tokens) is cut when it does not fit.
			if out.Truncated != (limit < 20000) || !strings.HasPrefix(out.Content, "<skill_content ") {
				t.Errorf("the body: truncated %v, %.80q", out.Truncated, out.Content)
			}
			if got := reachable(ctx, t, cs, "ledger-archive", out); !slices.Equal(got, want) {
				t.Errorf("%d files reachable from the reply, want %d", len(got), len(want))
			}
		})
	}
}

// reachable returns every file a load_skill reply lists or names a folder
// of, listing the folders with read_skill_file, page by page.
func reachable(ctx context.Context, t *testing.T, cs *mcpsdk.ClientSession, name string, out loadReply) []string {
	t.Helper()
	var files, folders []string
	for _, f := range out.Files {
		files = append(files, f.Path)
	}
	for _, f := range out.Folders {
		folders = append(folders, f.Path)
	}
	for len(folders) > 0 {
		dir := folders[0]
		folders = folders[1:]
		for token := ""; ; {
			args := map[string]any{"name": name, "path": dir}
			if token != "" {
				args["page_token"] = token
			}
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read_skill_file", Arguments: args})
			must(t, err)
			var page struct {
				Entries []struct {
					Path, Kind string
					Files      int
				}
				NextPageToken string `json:"next_page_token"`
			}
			decodeStructured(t, res, &page)
			if len(page.Entries) == 0 || len(page.Entries) > 100 {
				t.Fatalf("read_skill_file %s: %d entries", dir, len(page.Entries))
			}
			for _, e := range page.Entries {
				if e.Kind == "folder" {
					folders = append(folders, e.Path)
				} else {
					files = append(files, e.Path)
				}
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

// TestLokiModeFitsTheDefaultBudget loads SkillsBench's loki-mode, whose
// folder holds 1,071 files the router lists (more than the 512 a skill may
// hold by default, so the limit is raised here), at the default budget: the
// reply stays within 5,000 tokens, and every file is reached from it.
func TestLokiModeFitsTheDefaultBudget(t *testing.T) {
	loki := filepath.Join(sharedDir(t), "eval-transfer", "skillsbench-dev", "skills", "loki-mode")
	if _, err := os.Stat(filepath.Join(loki, "SKILL.md")); err != nil {
		t.Skipf("SkillsBench's loki-mode is not at %s: this test reads it where it is", loki)
	}
	r := daemontest.Start(t, t.TempDir(), daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Roots = []config.Root{{Path: filepath.Dir(loki), Kind: "project"}} // read where it is, never copied
		c.Limits.MaxSkillFiles = 2000
		c.Model.Disabled = true // loading needs no embeddings
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "budget", Version: "1"}, nil,
		&mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
	must(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": "loki-mode"}})
	must(t, err)
	var out loadReply
	decodeStructured(t, res, &out)
	n := skill.EstimateTokens(text(res))
	got := reachable(ctx, t, cs, "loki-mode", out)
	t.Logf("loki-mode at the default budget: reply %d tokens, body %d tokens, %d of %d files listed, %d folders; %d files reachable",
		n, out.Tokens, len(out.Files), out.FilesTotal, len(out.Folders), len(got))
	if n > 5000 || out.FilesTotal < 1000 || len(got) != out.FilesTotal {
		t.Errorf("reply of %d tokens; %d of %d files reachable", n, len(got), out.FilesTotal)
	}
}
