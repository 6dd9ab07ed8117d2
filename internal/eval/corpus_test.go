package eval_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

func TestOpenWithoutModel(t *testing.T) {
	ctx := context.Background()
	c, err := eval.Open(ctx, eval.Options{Skills: routingDir, ModelDir: filepath.Join(t.TempDir(), "missing")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !errors.Is(c.DenseErr, eval.ErrNoModel) || c.Index.DenseAvailable() {
		t.Fatalf("DenseErr %v, want ErrNoModel", c.DenseErr)
	}
	qs, err := eval.LoadQueries(filepath.Join(routingDir, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	rep, err := c.Evaluate(ctx, qs, eval.RunOptions{Mode: skill.ModeKeyword, Progress: func(phase string, done, total int) {
		calls++
		if phase != "queries" || done != calls || total != len(qs) {
			t.Errorf("progress call %d: %s %d/%d, want queries %d/%d", calls, phase, done, total, calls, len(qs))
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != len(qs) {
		t.Errorf("progress told %d times for %d queries", calls, len(qs))
	}
	if rep.Degraded != 0 || rep.Ranking.NDCG10 < 80 {
		t.Errorf("bm25 without a model: %+v", rep)
	}
	rep, err = c.Evaluate(ctx, qs, eval.RunOptions{Mode: skill.ModeHybrid})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Degraded != len(qs) || len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "dense matching is unavailable") {
		t.Errorf("hybrid without a model must say it is keyword-only: degraded %d notes %q", rep.Degraded, rep.Notes)
	}
	var out bytes.Buffer
	if err := rep.WriteText(&out); err != nil || !strings.Contains(out.String(), "NDCG@10") {
		t.Errorf("WriteText: %v\n%s", err, out.String())
	}
	if _, err := eval.Calibrate(ctx, c.Index, qs, eval.CalibrateOptions{Mode: skill.ModeHybrid}); err == nil {
		t.Error("hybrid calibration without embeddings succeeded")
	}
}

func TestOpenRejectsBadFolders(t *testing.T) {
	ctx := context.Background()
	if _, err := eval.Open(ctx, eval.Options{Skills: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Error("a missing folder was accepted")
	}
	if _, err := eval.Open(ctx, eval.Options{Skills: t.TempDir()}); err == nil {
		t.Error("a folder without skills was accepted")
	}
}

// TestCalibrateRouting fits the routing tree's labels and checks that the
// calibrated configuration is recognised as in-sample on the same set.
func TestCalibrateRouting(t *testing.T) {
	ctx := context.Background()
	c, qs := openRouting(t)
	last := map[string][2]int{} // phase -> the last done and total reported
	progress := func(phase string, done, total int) {
		if prev := last[phase]; done < prev[0] || total <= 0 || done > total {
			t.Errorf("progress %s: %d/%d after %d/%d", phase, done, total, prev[0], prev[1])
		}
		last[phase] = [2]int{done, total}
	}
	cal, err := eval.Calibrate(ctx, c.Index, qs, eval.CalibrateOptions{Folds: 3, Weights: []float64{0, 0.3, 1}, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	for phase, n := range map[string]int{"convex weight": 3 * len(qs), "adaptive weight": 3 * len(qs), "features": len(qs)} {
		if got := last[phase]; got != [2]int{n, n} {
			t.Errorf("progress of %s ended at %d/%d, want %d/%d", phase, got[0], got[1], n, n)
		}
	}
	if len(cal.Weights) != 3 || cal.ConvexWeight < 0 || len(cal.AdaptiveWeights) != 3 || cal.AdaptiveWeight < 0 ||
		cal.Classifier == nil || len(cal.ThresholdCurve) == 0 {
		t.Fatalf("calibration incomplete: %+v", cal)
	}
	if f := cal.Config.Fusion; f.ConvexWeight != cal.ConvexWeight || f.AdaptiveWeight != cal.AdaptiveWeight {
		t.Errorf("calibrated config has weights %v and %v, want %v and %v", f.ConvexWeight, f.AdaptiveWeight, cal.ConvexWeight, cal.AdaptiveWeight)
	}
	if cal.Classifier.Model != c.Model.Fingerprint || cal.Config.CalibratedOn != eval.Digest(qs) {
		t.Errorf("classifier model %q, calibrated on %q", cal.Classifier.Model, cal.Config.CalibratedOn)
	}
	if err := cal.Config.Validate(); err != nil {
		t.Fatalf("calibrated config is invalid: %v", err)
	}
	var out bytes.Buffer
	if err := cal.WriteText(&out); err != nil || !strings.Contains(out.String(), "cross-validated") || !strings.Contains(out.String(), "adaptive weight") {
		t.Errorf("WriteText: %v\n%s", err, out.String())
	}
	ix, err := c.Index.WithConfig(cal.Config)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.EvaluateIndex(ctx, ix, qs, eval.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.InSample || !strings.Contains(strings.Join(rep.Notes, " "), "in-sample") {
		t.Errorf("evaluation on the calibration set is not flagged in-sample: %v", rep.Notes)
	}
	if rep.Rules[match.RuleClassifier] == 0 {
		t.Errorf("the calibrated classifier decided nothing: %v", rep.Rules)
	}
}
