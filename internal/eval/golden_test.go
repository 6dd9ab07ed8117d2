package eval_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/routing/golden")

// routingDir is the fixed skill tree of the routing-quality golden test.
var routingDir = filepath.Join("..", "..", "testdata", "routing")

// tinyModelDir writes the embed package's tiny test model into a temporary
// folder.
func tinyModelDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatalf("WriteTinyModel: %v", err)
	}
	return dir
}

// goldenConfig is the matching configuration of the golden test: the
// defaults, with a threshold that suits the tiny test model.
func goldenConfig() match.Config {
	cfg := match.DefaultConfig()
	cfg.Abstain.Threshold = goldenThreshold
	return cfg
}

const goldenThreshold = 0.45

// openRouting opens the routing tree with the tiny model under the golden
// configuration, closed when t ends, and returns it with its queries.
func openRouting(t *testing.T) (*eval.Corpus, []eval.Query) {
	t.Helper()
	cfg := goldenConfig()
	c, err := eval.Open(context.Background(), eval.Options{Skills: routingDir, ModelDir: tinyModelDir(t), Config: &cfg})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if c.DenseErr != nil {
		t.Fatalf("tiny model: %v", c.DenseErr)
	}
	qs, err := eval.LoadQueries(filepath.Join(routingDir, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return c, qs
}

// TestRoutingGolden runs the fixed tree's queries through the loader, the
// tiny embedding model and Index.Rank in bm25 and hybrid mode and compares
// every ranking, decision and aggregate figure with the golden files, so a
// change in ranking shows up as a diff. Run with -update to accept one.
func TestRoutingGolden(t *testing.T) {
	ctx := context.Background()
	c, qs := openRouting(t)
	for _, mode := range []skill.MatchMode{skill.ModeKeyword, skill.ModeHybrid} {
		t.Run(string(mode), func(t *testing.T) {
			rep, err := c.Evaluate(ctx, qs, eval.RunOptions{Mode: mode, PerQuery: true, Set: "routing"})
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			got := goldenText(rep)
			path := filepath.Join(routingDir, "golden", string(mode)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("routing changed; diff the output against %s (go test -run TestRoutingGolden -update to accept):\n%s",
					path, lineDiff(string(want), got))
			}
		})
	}
}

// goldenText renders the parts of a report that must not change silently:
// aggregate figures (no latency) and each query's ranking and decision.
func goldenText(rep *eval.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# mode %s, fusion %q, %d skills, %d queries, threshold %.2f (tiny test model)\n",
		rep.Mode, rep.Fusion, rep.Skills, rep.Queries, goldenThreshold)
	m := rep.Ranking
	fmt.Fprintf(&b, "hit@1 %.1f  recall@3 %.1f  recall@5 %.1f  mrr@10 %.1f  ndcg@10 %.1f\n", m.Hit1, m.R3, m.R5, m.MRR10, m.NDCG10)
	a := rep.Abstention
	fmt.Fprintf(&b, "abstained %d (correct %d of %d, wrong on answerable %d; named %d, abstained on %d)\n\n",
		a.Abstained, a.Correct, a.NoSkill, a.WrongOnAnswerable, rep.Named, rep.NamedAbstained)
	for _, q := range rep.PerQuery {
		want := strings.Join(q.Relevant, ",")
		if want == "" {
			want = "-"
		}
		fmt.Fprintf(&b, "%s want %s\n", q.ID, want)
		if q.Abstained {
			fmt.Fprintf(&b, "  abstain (%s)\n", q.Rule)
		} else {
			fmt.Fprintf(&b, "  return %s (%s)\n", strings.Join(q.Returned, ", "), q.Rule)
		}
		top := q.Ranked
		if len(top) > 5 {
			top = top[:5]
		}
		fmt.Fprintf(&b, "  ranked %s\n", strings.Join(top, ", "))
	}
	return b.String()
}

// lineDiff lists the lines that differ, with line numbers.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n  - %s\n  + %s\n", i+1, a, c)
		}
	}
	return b.String()
}
