package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
)

// exampleTasks are tasks for the bundled examples, one for each skill and one
// that none serves.
var exampleTasks = []string{
	"fill in a PDF form from a JSON file",
	"my pod is stuck in CrashLoopBackOff",
	"write the release notes for the last tag",
	"review this SQL query before it runs on production",
	"clean up the dates and duplicates in this CSV export",
	"write the postmortem for last night's outage",
	"generate API docs from our OpenAPI spec",
	"what is the capital of France",
}

// BenchmarkSkillTokens reports what the router's MCP front costs a model's
// context, in estimated tokens (ceil(characters / 4), as the router counts):
// the server's instructions and its tool definitions (name, description and
// input schema as JSON; and with the output schema and annotations), every
// skill's name and description pasted as a host does without the router,
// and, for each task of a set, the text of find_skills and of load_skill on
// its first candidate (none when it abstains), as median and 95th
// percentile. Catalogs: the 7 examples, the gathered corpora under
// ../shared/corpora (139 skills) and the SkillsBench dev skills under
// ../shared/eval-transfer (1,575). The figures do not depend on the
// machine; run it once:
//
//	go test -run x -bench SkillTokens -benchtime 1x ./internal/daemon
func BenchmarkSkillTokens(b *testing.B) {
	type catalog struct {
		name  string
		roots func(b *testing.B) []string // nil: the examples
		tasks func(b *testing.B) []string
	}
	catalogs := []catalog{
		{"examples", nil, func(*testing.B) []string { return exampleTasks }},
		{"corpora", func(b *testing.B) []string {
			var roots []string
			for _, r := range sharedRoots[:6] {
				roots = append(roots, filepath.Join(sharedDir(b), r))
			}
			return roots
		}, func(b *testing.B) []string {
			return queryTexts(b, filepath.Join("..", "..", "testdata", "corpora-tasks", "queries.jsonl"))
		}},
		{"skillsbench-dev", func(b *testing.B) []string {
			return []string{filepath.Join(sharedDir(b), "eval-transfer", "skillsbench-dev", "skills")}
		}, func(b *testing.B) []string {
			return queryTexts(b, filepath.Join(sharedDir(b), "eval-transfer", "skillsbench-dev", "queries.jsonl"))
		}},
	}
	for range b.N {
		for _, c := range catalogs {
			ws := daemontest.CopyExamples(b)
			var roots []string
			if c.roots != nil {
				roots = c.roots(b)
			}
			r := daemontest.Start(b, ws, daemontest.Options{Configure: func(cfg *config.Config) {
				cfg.MCP.Addr = "127.0.0.1:0"
				cfg.Watch.Enabled, cfg.Watch.RescanInterval = false, 0
				for _, root := range roots {
					cfg.Roots = append(cfg.Roots, config.Root{Path: root, Kind: "project"})
				}
			}})
			cs := connectMCPBench(b, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
			measureSkillTokens(b, c.name, cs, c.tasks(b))
			measureLargestSkill(b, c.name, r, cs)
			r.Stop(b)
		}
	}
	b.ReportMetric(0, "ns/op")
}

func queryTexts(b *testing.B, path string) []string {
	qs, err := eval.LoadQueries(path)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]string, 0, len(qs))
	for _, q := range qs {
		out = append(out, q.Query)
	}
	return out
}

// measureSkillTokens measures one catalog through a client session.
func measureSkillTokens(b *testing.B, name string, cs *mcpsdk.ClientSession, tasks []string) {
	ctx := context.Background()
	instr := skill.EstimateTokens(cs.InitializeResult().Instructions)
	defs, full := 0, 0
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tools.Tools {
		defs += definitionTokens(t.Name, t.Description, t.InputSchema)
		j, _ := json.Marshal(t)
		full += skill.EstimateTokens(string(j))
	}
	var pasted strings.Builder
	skills, cursor := 0, ""
	for {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "list_skills", Arguments: map[string]any{"page_token": cursor}})
		if err != nil || res.IsError {
			b.Fatalf("list_skills: %v %v", err, res)
		}
		var page struct {
			Skills        []struct{ Name, Description string }
			NextPageToken string `json:"next_page_token"`
		}
		decode(b, res, &page)
		for _, s := range page.Skills {
			skills++
			fmt.Fprintf(&pasted, "- %s: %s\n", s.Name, s.Description)
		}
		if cursor = page.NextPageToken; cursor == "" {
			break
		}
	}
	paste := skill.EstimateTokens(pasted.String())

	var find, load, both []int
	for _, task := range tasks {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": task}})
		if err != nil || res.IsError {
			b.Fatalf("find_skills %q: %v %v", task, err, res)
		}
		f := contentTokens(res)
		var found struct{ Candidates []struct{ Name string } }
		decode(b, res, &found)
		l := 0
		if len(found.Candidates) > 0 {
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": found.Candidates[0].Name}})
			if err != nil || res.IsError {
				b.Fatalf("load_skill %s: %v %v", found.Candidates[0].Name, err, res)
			}
			l = contentTokens(res)
		}
		find, load, both = append(find, f), append(load, l), append(both, f+l)
	}
	b.Logf("%-15s %5d skills: instructions %d tokens, tool definitions %d (%d with output schemas and annotations); every description pasted %d; per task (%d tasks) find_skills %d/%d, load_skill %d/%d, both %d/%d (median/p95)",
		name, skills, instr, defs, full, paste, len(tasks), pct(find, 50), pct(find, 95), pct(load, 50), pct(load, 95), pct(both, 50), pct(both, 95))
	b.ReportMetric(float64(instr+defs), name+"-front-tokens")
	b.ReportMetric(float64(paste), name+"-pasted-tokens")
	b.ReportMetric(float64(pct(both, 50)), name+"-find+load-p50-tokens")
}

// contentTokens estimates the tokens of a result's content as a host passes
// it to a model: each text block's text, each other block as JSON.
func contentTokens(res *mcpsdk.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			n += skill.EstimateTokens(t.Text)
			continue
		}
		j, _ := json.Marshal(c)
		n += skill.EstimateTokens(string(j))
	}
	return n
}

func decode(b *testing.B, res *mcpsdk.CallToolResult, out any) {
	b.Helper()
	j, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(j, out); err != nil {
		b.Fatal(err)
	}
}

// pct returns the p-th percentile of xs (nearest rank).
func pct(xs []int, p float64) int {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return s[min(len(s)-1, max(0, int(math.Ceil(p/100*float64(len(s))))-1))]
}

// measureLargestSkill loads the served skill with the most files and
// compares the result's tokens with its body's.
func measureLargestSkill(b *testing.B, name string, r *daemontest.Router, cs *mcpsdk.ClientSession) {
	ctx := context.Background()
	most, files := "", 0
	token := ""
	for {
		page, err := r.Client.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range page.GetSkills() {
			d, err := r.Client.GetSkill(ctx, &routerv1.GetSkillRequest{Name: s.GetName()})
			if err != nil {
				b.Fatal(err)
			}
			if n := len(d.GetSkill().GetResources()); n > files && d.GetSkill().GetEnabled() {
				most, files = s.GetName(), n
			}
		}
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": most}})
	if err != nil || res.IsError {
		b.Fatalf("load_skill %s: %v %v", most, err, res)
	}
	var out struct{ Content string }
	decode(b, res, &out)
	b.Logf("%-15s load_skill %s (%d files): body %d tokens, result %d tokens", name, most, files, skill.EstimateTokens(out.Content), contentTokens(res))
}
