package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
	"github.com/mcpsag/router/internal/upstream"
	"github.com/mcpsag/router/internal/upstream/upstreamtest"
	"github.com/mcpsag/router/models"
)

func TestMain(m *testing.M) {
	upstreamtest.Main() // serves a dev set's catalog when the test binary runs as an MCP server
	code := m.Run()
	removeDevStates()
	os.Exit(code)
}

// TestDevSetsAsTools serves each dev set's tool catalog from an MCP server
// (this test binary, over stdio, through the official Go SDK), indexes its
// tools as the router does, and checks that routing quality through the
// tool path equals the skill path: NDCG@10 within half a point in the
// router's default (hybrid) matching, and, with MCPSAG_EVAL_ALL_MODES=1, in
// bm25 and dense matching too (docs/mcp.md's table). Under the race
// detector, which slows ranking several times, it compares the two paths on
// every fourth query. It needs the dev sets and the default model.
func TestDevSetsAsTools(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: evaluates the dev sets twice")
	}
	slowtest.Skip(t, "evaluates the dev sets of ../shared twice")
	// Both paths embed the catalog, as skills and as tools: the fast
	// model keeps that cheap, and the comparison holds for any model.
	modelDir := filepath.Join("..", "..", "models", models.FastName)
	if _, err := os.Stat(filepath.Join(modelDir, "model.onnx")); err != nil {
		t.Skipf("fast model not found at %s", modelDir)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"metatool", "seal-tools"} {
		dir, _ := filepath.Abs(filepath.Join(devEvalDir, set))
		if _, err := os.Stat(filepath.Join(dir, "mapping.json")); err != nil {
			t.Skipf("dev set %s not found: %v", set, err)
		}
		t.Run(set, func(t *testing.T) {
			ctx := context.Background()
			qs, err := eval.LoadQueries(filepath.Join(dir, "queries.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			tools, err := upstreamtest.LoadCatalog(dir)
			if err != nil {
				t.Fatal(err)
			}
			skills, err := eval.Open(ctx, eval.Options{Skills: dir, ModelDir: modelDir})
			if err != nil {
				t.Fatal(err)
			}
			defer skills.Close()
			served, err := eval.Open(ctx, eval.Options{ModelDir: modelDir, ServerWait: 3 * time.Minute,
				Servers: []upstream.ServerConfig{{Name: "catalog", Command: exe, MaxTools: 10000, StartupTimeout: 2 * time.Minute,
					Env: map[string]upstream.Value{upstreamtest.EnvCatalog: {Literal: dir}}}}})
			if err != nil {
				t.Fatal(err)
			}
			defer served.Close()
			if got := served.Index.Len(); got != len(tools) || got != skills.Index.Len() {
				t.Fatalf("%d tools indexed, %d in the catalog, %d skills", got, len(tools), skills.Index.Len())
			}
			labels := upstreamtest.Labels(tools)
			modes := []skill.MatchMode{skill.ModeHybrid}
			if os.Getenv("MCPSAG_EVAL_ALL_MODES") != "" {
				modes = append(modes, skill.ModeKeyword, skill.ModeDense)
			}
			if raceDetector {
				var some []eval.Query
				for i := 0; i < len(qs); i += 4 {
					some = append(some, qs[i])
				}
				qs = some
			}
			for _, mode := range modes {
				a, err := skills.Evaluate(ctx, qs, eval.RunOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				b, err := served.Evaluate(ctx, qs, eval.RunOptions{Mode: mode, ToolLabels: labels})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%-6s NDCG@10 skills %.2f tools %.2f  Hit@1 %.2f %.2f  R@5 %.2f %.2f", mode,
					a.Ranking.NDCG10, b.Ranking.NDCG10, a.Ranking.Hit1, b.Ranking.Hit1, a.Ranking.R5, b.Ranking.R5)
				if d := b.Ranking.NDCG10 - a.Ranking.NDCG10; d < -0.5 || d > 0.5 {
					t.Errorf("%s: NDCG@10 through tools %.2f, as skills %.2f: more than half a point apart", mode, b.Ranking.NDCG10, a.Ranking.NDCG10)
				}
				if len(b.Notes) > 0 && b.NeedSkill > 0 {
					for _, n := range b.Notes {
						t.Logf("note: %s", n)
					}
				}
			}
		})
	}
}
