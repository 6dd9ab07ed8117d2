package daemon_test

import (
	"context"
	"encoding/json"
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
)

// writeSkill writes a skill folder under ws/skills: its SKILL.md, and
// files more of size bytes each (sparse: no data is written), spread over
// four folders.
func writeSkill(t *testing.T, ws, name, description string, files int, size int64) {
	t.Helper()
	dir := filepath.Join(ws, "skills", name)
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(fmt.Sprintf(
		"---\nname: %s\ndescription: %s\n---\nUse the files under data/.\n", name, description)), 0o644))
	for i := range files {
		sub := filepath.Join(dir, "data", fmt.Sprintf("part-%d", i%4))
		must(t, os.MkdirAll(sub, 0o755))
		f, err := os.Create(filepath.Join(sub, fmt.Sprintf("file-%04d.txt", i)))
		must(t, err)
		if size > 0 {
			must(t, f.Truncate(size))
		} else {
			_, err = fmt.Fprintf(f, "record %d\n", i)
			must(t, err)
		}
		must(t, f.Close())
	}
}

// TestOversizeSkillsAreServedNowhere: a skill over the size limits (more
// than 512 files with SKILL.md, or more than 16 MiB) is served by no
// surface, and every surface that is asked for it gives the same reason; a
// skill of exactly 512 files is served by all of them. Through the Go
// SDK's client and the TypeScript SDK's, against a router.
func TestOversizeSkillsAreServedNowhere(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	writeSkill(t, ws, "big-files", "Tabulate the quarterly ledger records kept in many files.", 600, 0)
	writeSkill(t, ws, "big-bytes", "Tabulate the quarterly ledger records kept in large files.", 17, 1<<20)
	writeSkill(t, ws, "many-files", "Tabulate the census records kept in many small files.", 511, 0)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "limits", Version: "1"}, nil,
		&mcpsdk.StreamableClientTransport{Endpoint: url}, extensionClient)
	must(t, err)
	defer cs.Close()

	reasons := map[string]string{
		"big-files": `failed_precondition: skill "big-files" is too large: its folder holds at least 514 files, more than the 512 a skill may hold (limits.max_skill_files) [SKILL_TOO_LARGE]`,
		"big-bytes": fmt.Sprintf(`failed_precondition: skill "big-bytes" is too large: its files hold %d bytes, more than the 16777216 a skill may hold (limits.max_skill_bytes) [SKILL_TOO_LARGE]`,
			17<<20+fileSize(t, filepath.Join(ws, "skills", "big-bytes", "SKILL.md"))),
	}
	listed := listedEverywhere(ctx, t, cs)
	for name, reason := range reasons {
		t.Run(name, func(t *testing.T) {
			for surface, names := range listed {
				if slices.Contains(names, name) {
					t.Errorf("%s lists %s", surface, name)
				}
			}
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills",
				Arguments: map[string]any{"task": "tabulate the quarterly ledger records", "top_k": 10}})
			must(t, err)
			if strings.Contains(text(res), name) {
				t.Errorf("find_skills proposes %s: %s", name, text(res))
			}
			refusals := map[string]string{}
			for tool, args := range map[string]map[string]any{
				"load_skill":      {"name": name},
				"read_skill_file": {"name": name, "path": "SKILL.md"},
			} {
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
				must(t, err)
				if !res.IsError {
					t.Errorf("%s served %s", tool, name)
				}
				refusals[tool] = text(res)
			}
			uri := "skill://" + name + "/SKILL.md"
			_, err = cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
			refusals["resources/read"] = errText(err)
			refusals["resources/directory/read"] = errText(ext(ctx, cs, "resources/directory/read", extParams{URI: "skill://" + name}, nil))
			refusals["skills/get"] = errText(ext(ctx, cs, "skills/get", extParams{URI: uri}, nil))
			_, err = cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: name})
			refusals["prompts/get"] = errText(err)
			for surface, got := range refusals {
				if !strings.Contains(got, reason) {
					t.Errorf("%s: %q, want the reason %q", surface, got, reason)
				}
			}
		})
	}

	t.Run("status", func(t *testing.T) {
		st := routerStatus(t, r)
		if got := st.GetValidation().GetByCode()["skill-too-large"]; got != 2 || st.GetSkillsDisabled() < 2 {
			t.Errorf("status: %d skill-too-large problems, %d skills disabled; want 2 and at least 2", got, st.GetSkillsDisabled())
		}
	})

	t.Run("512 files", func(t *testing.T) {
		for surface, names := range listed {
			if !slices.Contains(names, "many-files") {
				t.Errorf("%s does not list many-files", surface)
			}
		}
		var entry struct{ Skill struct{ Resources []any } }
		must(t, ext(ctx, cs, "skills/get", extParams{URI: "skill://many-files/SKILL.md"}, &entry))
		if len(entry.Skill.Resources) != 512 {
			t.Errorf("skills/get many-files: %d resources, want 512", len(entry.Skill.Resources))
		}
	})

	t.Run("TypeScript", func(t *testing.T) {
		node, dir := tsClient(t)
		s := runSkills(t, node, dir, 2*time.Minute, "--url", url, "--verify", "0",
			"--expect", "many-files", "--absent", "big-files", "--absent", "big-bytes")
		if s.Refused != 2 {
			t.Errorf("summary %+v", s)
		}
	})
}

// listedEverywhere returns, for each surface that lists skills, the names
// it lists.
func listedEverywhere(ctx context.Context, t *testing.T, cs *mcpsdk.ClientSession) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var list struct {
		Skills        []struct{ Name string }
		NextPageToken string `json:"next_page_token"`
	}
	for token := ""; ; token = list.NextPageToken {
		list.NextPageToken = ""
		args := map[string]any{}
		if token != "" {
			args["page_token"] = token
		}
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "list_skills", Arguments: args})
		must(t, err)
		decodeStructured(t, res, &list)
		for _, s := range list.Skills {
			out["list_skills"] = append(out["list_skills"], s.Name)
		}
		if list.NextPageToken == "" {
			break
		}
	}
	for r, err := range cs.Resources(ctx, nil) {
		must(t, err)
		out["resources/list"] = append(out["resources/list"], r.Name)
	}
	for p, err := range cs.Prompts(ctx, nil) {
		must(t, err)
		out["prompts/list"] = append(out["prompts/list"], p.Name)
	}
	var page struct {
		Skills     []struct{ Frontmatter struct{ Name string } }
		NextCursor string
	}
	for cursor := ""; ; cursor = page.NextCursor {
		page.NextCursor = ""
		must(t, ext(ctx, cs, "skills/list", extParams{Cursor: cursor}, &page))
		for _, s := range page.Skills {
			out["skills/list"] = append(out["skills/list"], s.Frontmatter.Name)
		}
		if page.NextCursor == "" {
			break
		}
	}
	res, err := cs.Complete(ctx, &mcpsdk.CompleteParams{Ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "skill://{name}/{+path}"},
		Argument: mcpsdk.CompleteParamsArgument{Name: "name", Value: ""}})
	must(t, err)
	out["completion"] = res.Completion.Values
	return out
}

// errText is the text of err, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// decodeStructured decodes a tool result's structured content into out.
func decodeStructured(t *testing.T, res *mcpsdk.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	must(t, err)
	must(t, json.Unmarshal(b, out))
}

// fileSize returns the size of the file at p.
func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi.Size()
}
