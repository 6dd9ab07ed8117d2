package eval_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
)

// Dev sets and the default model, beside the checkout; MCPSAG_EVAL_DIR and
// MCPSAG_MODEL_DIR override the locations.
var (
	devEvalDir  = envOr("MCPSAG_EVAL_DIR", filepath.Join("..", "..", "..", "shared", "eval"))
	devModelDir = envOr("MCPSAG_MODEL_DIR", filepath.Join("..", "..", "models", "mcpsag-static-v1"))
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// TestDevSetsHybridNotWorse guards the issues' bars: on every dev set, the
// default hybrid ranks at least as well (NDCG@10, Recall@5, Hit@1) as the
// better of BM25 alone and dense alone, and on MetaTool it gains at least 3
// NDCG@10 points over BM25. It needs the dev sets and the
// default model, and takes tens of seconds.
func TestDevSetsHybridNotWorse(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: evaluates the dev sets")
	}
	if _, err := os.Stat(filepath.Join(devModelDir, "model.onnx")); err != nil {
		t.Skipf("default model not built at %s", devModelDir)
	}
	sets, _ := filepath.Glob(filepath.Join(devEvalDir, "*", "queries.jsonl"))
	if len(sets) == 0 {
		t.Skipf("no dev sets under %s", devEvalDir)
	}
	for _, qf := range sets {
		dir := filepath.Dir(qf)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			ctx := context.Background()
			c, err := eval.Open(ctx, eval.Options{Skills: dir, ModelDir: devModelDir})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if c.DenseErr != nil {
				t.Fatalf("model: %v", c.DenseErr)
			}
			qs, err := eval.LoadQueries(qf)
			if err != nil {
				t.Fatal(err)
			}
			got := map[skill.MatchMode]eval.Ranking{}
			for _, mode := range []skill.MatchMode{skill.ModeKeyword, skill.ModeDense, skill.ModeHybrid} {
				rep, err := c.Evaluate(ctx, qs, eval.RunOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				got[mode] = rep.Ranking
				t.Logf("%-6s NDCG@10 %.1f  Recall@5 %.1f  Hit@1 %.1f", mode, rep.Ranking.NDCG10, rep.Ranking.R5, rep.Ranking.Hit1)
			}
			h, b, d := got[skill.ModeHybrid], got[skill.ModeKeyword], got[skill.ModeDense]
			for _, m := range []struct {
				name          string
				hyb, bm, dens float64
			}{{"NDCG@10", h.NDCG10, b.NDCG10, d.NDCG10}, {"Recall@5", h.R5, b.R5, d.R5}, {"Hit@1", h.Hit1, b.Hit1, d.Hit1}} {
				if m.hyb < max(m.bm, m.dens) {
					t.Errorf("%s: hybrid %.2f is below max(bm25 %.2f, dense %.2f)", m.name, m.hyb, m.bm, m.dens)
				}
			}
			// The embedding model's bar: hybrid gains at least 3 NDCG@10
			// points over BM25 alone on MetaTool, whose skills have no body.
			if filepath.Base(dir) == "metatool" && h.NDCG10 < b.NDCG10+3 {
				t.Errorf("NDCG@10: hybrid %.2f gains less than 3 points over bm25 %.2f", h.NDCG10, b.NDCG10)
			}
		})
	}
}
