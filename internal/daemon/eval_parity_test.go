package daemon_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/models"
)

// TestEvaluationMeasuresWhatIsServed indexes one labelled tree twice, through
// the daemon (over gRPC) and through package eval, with the same model and
// settings, and requires the same ranking and the same scores for every
// query: evaluation figures then describe the router as it runs.
func TestEvaluationMeasuresWhatIsServed(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	tree := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "routing")
	modelDir, err := models.Default(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, tree, daemontest.Options{Configure: func(c *config.Config) { c.Model.Dir = modelDir }})
	mcfg := config.Default().Match
	c, err := eval.Open(context.Background(), eval.Options{Skills: tree, ModelDir: modelDir, Config: &mcfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	qs, err := eval.LoadQueries(filepath.Join(tree, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 20 {
		t.Fatalf("%d queries; the tree should have more", len(qs))
	}
	const topK = 10
	for _, q := range qs {
		served, err := r.Client.Match(context.Background(), &routerv1.MatchRequest{Task: q.Query, TopK: topK})
		if err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		measured, err := c.Index.Match(context.Background(), skill.MatchRequest{Task: q.Query, TopK: topK}, nil)
		if err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		if served.Abstained != measured.Abstained || len(served.Candidates) != len(measured.Candidates) {
			t.Errorf("%s: served abstained=%v with %d candidates, evaluated abstained=%v with %d",
				q.ID, served.Abstained, len(served.Candidates), measured.Abstained, len(measured.Candidates))
			continue
		}
		wantVerdict := "MATCH_VERDICT_" + strings.ToUpper(string(measured.Verdict))
		if served.Verdict.String() != wantVerdict || served.VerdictDetail != measured.VerdictDetail {
			t.Errorf("%s: served verdict %s (%q), evaluated %s (%q)", q.ID, served.Verdict, served.VerdictDetail,
				measured.Verdict, measured.VerdictDetail)
		}
		if served.Degraded || measured.Degraded {
			t.Errorf("%s: degraded (served %v, evaluated %v); the model should be in use", q.ID, served.Degraded, measured.Degraded)
		}
		for i, sc := range served.Candidates {
			mc := measured.Candidates[i]
			if sc.Skill.Name != mc.Skill.Name || sc.Scores.Fused != mc.Fused || sc.Scores.Cosine != mc.Cosine || sc.Scores.Bm25 != mc.BM25 {
				t.Errorf("%s rank %d: served %s (fused %v cos %v bm25 %v), evaluated %s (fused %v cos %v bm25 %v)", q.ID, i+1,
					sc.Skill.Name, sc.Scores.Fused, sc.Scores.Cosine, sc.Scores.Bm25, mc.Skill.Name, mc.Fused, mc.Cosine, mc.BM25)
			}
		}
	}
}
