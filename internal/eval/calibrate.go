package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// CalibrateOptions configure Calibrate.
type CalibrateOptions struct {
	// Mode is hybrid (the default: fits the convex and adaptive weights,
	// the cosine threshold and the hybrid classifier) or bm25 (the
	// keyword threshold and the keyword-only classifier).
	Mode skill.MatchMode
	// Weights are the dense weights tried, for the convex weight and for
	// the adaptive weight alike; default 0, 0.1, ..., 1.
	Weights []float64
	// Folds is k of the k-fold cross-validation (default 5).
	Folds int
	// L2 is the classifier's weight penalty (default 1).
	L2 float64
	// Beta weighs abstention precision against recall when a cutoff is
	// chosen: the cutoff maximises F-beta (default 1; below 1 favours
	// precision, that is fewer wrong abstentions).
	Beta float64
	// Set names the query set in the output.
	Set string
	// Progress, if set, is told each query ranked, per phase ("convex
	// weight", "adaptive weight": every query at every weight; then
	// "features").
	Progress Progress
}

// CurvePoint is one operating point of an abstention rule: abstain when
// the score is below Cutoff.
type CurvePoint struct {
	Cutoff    float64 `json:"cutoff"`
	Abstained int     `json:"abstained"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F         float64 `json:"f"`
}

// WeightPoint is the ranking quality at one fusion weight.
type WeightPoint struct {
	Weight  float64 `json:"weight"`
	Ranking Ranking `json:"ranking"`
}

// Calibration is what Calibrate fitted and how well it does.
type Calibration struct {
	Set       string          `json:"set"`
	Digest    string          `json:"digest"`
	Mode      skill.MatchMode `json:"mode"`
	Model     string          `json:"model"`
	Queries   int             `json:"queries"`
	NeedSkill int             `json:"need_skill"`
	NoSkill   int             `json:"no_skill"`
	// Weights is ranking quality per convex weight (in-sample); the
	// chosen weight maximises NDCG@10. ConvexWeight is -1 when no weight
	// was fitted (bm25 mode, or no embeddings).
	Weights      []WeightPoint `json:"weights"`
	ConvexWeight float64       `json:"convex_weight"`
	// AdaptiveWeights and AdaptiveWeight are the same for the adaptive
	// rule's weight (match.FusionConfig.AdaptiveWeight).
	AdaptiveWeights []WeightPoint `json:"adaptive_weights"`
	AdaptiveWeight  float64       `json:"adaptive_weight"`
	// ThresholdScore names the single score the threshold applies to.
	ThresholdScore string `json:"threshold_score"`
	// Threshold maximises F-beta of abstention over all queries.
	Threshold      float64      `json:"threshold"`
	ThresholdAUROC float64      `json:"threshold_auroc"`
	ThresholdCurve []CurvePoint `json:"threshold_curve"`
	// ThresholdCV is the k-fold figure: each fold's threshold is chosen
	// on the other folds.
	ThresholdCV Abstention `json:"threshold_cv"`
	// Classifier is fitted on all queries; nil when the set lacks
	// queries that need no skill.
	Classifier *match.Classifier `json:"classifier"`
	// ClassifierAUROC and ClassifierCurve use out-of-fold probabilities.
	ClassifierAUROC float64      `json:"classifier_auroc"`
	ClassifierCurve []CurvePoint `json:"classifier_curve"`
	// ClassifierCV is the k-fold figure: each fold is judged by a model
	// and cutoff fitted on the other folds. ClassifierInSample is the
	// final model on the queries it was fitted on (optimistic).
	ClassifierCV       Abstention `json:"classifier_cv"`
	ClassifierInSample Abstention `json:"classifier_in_sample"`
	// Config is the input configuration with the fitted values applied
	// and CalibratedOn set to Digest.
	Config match.Config `json:"config"`
	Notes  []string     `json:"notes"`
}

// Calibrate fits, on labelled queries, the convex and adaptive weights
// (hybrid mode: best NDCG@10 each), the single-score threshold and the
// abstention classifier (best F-beta of abstention), and reports trade-off
// curves with cross-validated figures. ix must have been built from the skills the
// queries are labelled against.
func Calibrate(ctx context.Context, ix *match.Index, qs []Query, opt CalibrateOptions) (*Calibration, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	cal := newCalibration(qs, opt)
	cfg := ix.Config()
	hybrid := opt.Mode == skill.ModeHybrid
	if hybrid && !ix.DenseAvailable() {
		return nil, errors.New("calibrate: hybrid calibration needs embeddings; use mode bm25")
	}
	if hybrid {
		cal.Model = ix.Model()
	}

	// 1. The convex and adaptive weights, by NDCG@10 over queries that
	// need a skill.
	if hybrid && cal.NeedSkill > 0 {
		if err := cal.calibrateWeights(ctx, ix, &cfg, qs, opt); err != nil {
			return nil, err
		}
	}

	// 2. Features of every query (they do not depend on the fusion rule).
	samples, scores, err := querySamples(ctx, ix, qs, opt)
	if err != nil {
		return nil, err
	}
	cal.ThresholdScore = "best cosine (dense_top)"
	if !hybrid {
		cal.ThresholdScore = "best BM25 score"
	}
	if cal.NoSkill == 0 || cal.NeedSkill == 0 {
		cal.Notes = append(cal.Notes, "the set needs both queries with and without relevant skills to fit a threshold or a classifier; only the convex weight was fitted")
		cal.Config = apply(cfg, cal, opt.Mode)
		return cal, nil
	}
	noSkill := make([]bool, len(qs))
	for i, s := range samples {
		noSkill[i] = !s.Positive
	}
	folds := stratifiedFolds(noSkill, opt.Folds)

	// 3. The single-score threshold.
	cal.calibrateThreshold(scores, noSkill, folds, opt.Beta)

	// 4. The classifier: out-of-fold probabilities and cutoffs, then a
	// final fit on everything.
	if err := cal.calibrateClassifier(samples, noSkill, folds, opt); err != nil {
		return nil, err
	}
	cal.Config = apply(cfg, cal, opt.Mode)
	return cal, nil
}

// newCalibration returns the calibration of qs before anything is fitted:
// the queries counted, no weights.
func newCalibration(qs []Query, opt CalibrateOptions) *Calibration {
	cal := &Calibration{Set: opt.Set, Digest: Digest(qs), Mode: opt.Mode, Queries: len(qs), ConvexWeight: -1, AdaptiveWeight: -1}
	for _, q := range qs {
		if q.NeedSkill() {
			cal.NeedSkill++
		} else {
			cal.NoSkill++
		}
	}
	return cal
}

// withDefaults returns opt with its zero values replaced by the defaults
// (hybrid mode, 5 folds, L2 1, beta 1, convex weights 0, 0.1, ..., 1). It
// fails on a mode that is not hybrid or bm25.
func (opt CalibrateOptions) withDefaults() (CalibrateOptions, error) {
	opt.Mode = cmp.Or(opt.Mode, skill.ModeHybrid)
	if opt.Mode != skill.ModeHybrid && opt.Mode != skill.ModeKeyword {
		return opt, fmt.Errorf("calibrate: mode %q is not hybrid or bm25", opt.Mode)
	}
	opt.Folds = cmp.Or(opt.Folds, 5)
	opt.L2 = cmp.Or(opt.L2, 1)
	opt.Beta = cmp.Or(opt.Beta, 1)
	if len(opt.Weights) == 0 {
		for i := 0; i <= 10; i++ {
			opt.Weights = append(opt.Weights, float64(i)/10)
		}
	}
	return opt, nil
}

// calibrateWeights fits the convex and the adaptive weight (best NDCG@10 each,
// over the queries that need a skill) into cal and into cfg, which the
// later steps rank with.
func (cal *Calibration) calibrateWeights(ctx context.Context, ix *match.Index, cfg *match.Config, qs []Query, opt CalibrateOptions) error {
	var err error
	cal.Weights, cal.ConvexWeight, err = fitWeight(ctx, ix, *cfg, qs, opt.Weights, skill.FusionConvex,
		func(c *match.Config, w float64) { c.Fusion.ConvexWeight = w }, opt.Progress.phase("convex weight"))
	if err != nil {
		return err
	}
	cal.AdaptiveWeights, cal.AdaptiveWeight, err = fitWeight(ctx, ix, *cfg, qs, opt.Weights, skill.FusionAdaptive,
		func(c *match.Config, w float64) { c.Fusion.AdaptiveWeight = w }, opt.Progress.phase("adaptive weight"))
	if err != nil {
		return err
	}
	cfg.Fusion.ConvexWeight = cal.ConvexWeight
	cfg.Fusion.AdaptiveWeight = cal.AdaptiveWeight
	return nil
}

// querySamples ranks each query in opt.Mode and returns its features with
// its class (a skill needed or not), and the single score the threshold is
// fitted on: the best cosine in hybrid mode, the best BM25 score in bm25
// mode.
func querySamples(ctx context.Context, ix *match.Index, qs []Query, opt CalibrateOptions) ([]sample, []float64, error) {
	hybrid := opt.Mode == skill.ModeHybrid
	samples := make([]sample, len(qs))
	scores := make([]float64, len(qs))
	for i, q := range qs {
		rk, err := ix.Rank(ctx, skill.MatchRequest{Task: q.Query, Options: skill.MatchOptions{Mode: opt.Mode}}, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		if hybrid && rk.Result.Degraded {
			return nil, nil, fmt.Errorf("query %s: embeddings failed during calibration", q.ID)
		}
		samples[i] = sample{Features: rk.Features, Positive: q.NeedSkill()}
		if opt.Progress != nil {
			opt.Progress("features", i+1, len(qs))
		}
		if hybrid {
			scores[i] = rk.Features.DenseTop
		} else {
			scores[i] = math.Expm1(rk.Features.BM25Top)
		}
	}
	return samples, scores, nil
}

// calibrateThreshold fits the single-score threshold (best F-beta of abstention)
// into cal, with its AUROC, trade-off curve and cross-validated figures
// over folds.
func (cal *Calibration) calibrateThreshold(scores []float64, noSkill []bool, folds [][]int, beta float64) {
	n := len(scores)
	cal.Threshold, _ = bestCutoff(scores, noSkill, allIndexes(n), beta)
	cal.ThresholdAUROC = auroc(scores, negate(noSkill))
	cal.ThresholdCurve = curve(scores, noSkill, beta)
	pred := make([]bool, n)
	for _, test := range folds {
		thr, _ := bestCutoff(scores, noSkill, complement(test, n), beta)
		for _, i := range test {
			pred[i] = scores[i] < thr
		}
	}
	cal.ThresholdCV = abstention(pred, noSkill)
}

// calibrateClassifier fits the abstention classifier into cal: out-of-fold
// probabilities and cutoffs over folds for the cross-validated figures,
// then a final fit on every sample with its cutoff (best F-beta) and
// in-sample figures.
func (cal *Calibration) calibrateClassifier(samples []sample, noSkill []bool, folds [][]int, opt CalibrateOptions) error {
	n := len(samples)
	names := match.HybridFeatures
	if opt.Mode != skill.ModeHybrid {
		names = match.KeywordFeatures
	}
	pred := make([]bool, n)
	oof := make([]float64, n)
	for _, test := range folds {
		train := complement(test, n)
		cls, err := fitClassifier(opt.Mode, cal.Model, names, pick(samples, train), fitSettings{L2: opt.L2})
		if err != nil {
			return err
		}
		trainP := make([]float64, n)
		for _, i := range train {
			trainP[i] = cls.Probability(samples[i].Features)
		}
		cut, _ := bestCutoff(trainP, noSkill, train, opt.Beta)
		for _, i := range test {
			oof[i] = cls.Probability(samples[i].Features)
			pred[i] = oof[i] < cut
		}
	}
	cal.ClassifierCV = abstention(pred, noSkill)
	cal.ClassifierAUROC = auroc(oof, negate(noSkill))
	cal.ClassifierCurve = curve(oof, noSkill, opt.Beta)
	cls, err := fitClassifier(opt.Mode, cal.Model, names, samples, fitSettings{L2: opt.L2})
	if err != nil {
		return err
	}
	all := make([]float64, n)
	for i := range samples {
		all[i] = cls.Probability(samples[i].Features)
	}
	cls.Cutoff, _ = bestCutoff(all, noSkill, allIndexes(n), opt.Beta)
	for i := range all {
		pred[i] = all[i] < cls.Cutoff
	}
	cal.ClassifierInSample = abstention(pred, noSkill)
	cal.Classifier = cls
	return nil
}

// fitWeight ranks the queries under the fusion rule with each weight (set
// writes it into a configuration) and returns the table and the weight of
// best NDCG@10; the first wins ties.
func fitWeight(ctx context.Context, ix *match.Index, cfg match.Config, qs []Query, weights []float64,
	rule skill.Fusion, set func(*match.Config, float64), progress Progress) ([]WeightPoint, float64, error) {
	var table []WeightPoint
	best, chosen := math.Inf(-1), -1.0
	for k, w := range weights {
		c := cfg
		set(&c, w)
		wix, err := ix.WithConfig(c)
		if err != nil {
			return nil, -1, err
		}
		var each Progress
		if progress != nil {
			each = func(_ string, done, _ int) { progress("", k*len(qs)+done, len(weights)*len(qs)) }
		}
		rep, err := Run(ctx, wix, qs, RunOptions{Mode: skill.ModeHybrid, Fusion: rule, Progress: each})
		if err != nil {
			return nil, -1, err
		}
		table = append(table, WeightPoint{Weight: w, Ranking: rep.Ranking})
		if rep.Ranking.NDCG10 > best+1e-9 {
			best, chosen = rep.Ranking.NDCG10, w
		}
	}
	return table, chosen, nil
}

// apply writes the fitted values into cfg.
func apply(cfg match.Config, cal *Calibration, mode skill.MatchMode) match.Config {
	if cal.ConvexWeight >= 0 {
		cfg.Fusion.ConvexWeight = cal.ConvexWeight
	}
	if cal.AdaptiveWeight >= 0 {
		cfg.Fusion.AdaptiveWeight = cal.AdaptiveWeight
	}
	if cal.Classifier != nil {
		if mode == skill.ModeHybrid {
			cfg.Abstain.Threshold = cal.Threshold
		} else {
			cfg.Abstain.KeywordThreshold = cal.Threshold
		}
		var keep []match.Classifier
		for _, c := range cfg.Abstain.Classifiers {
			if c.Mode != cal.Classifier.Mode {
				keep = append(keep, c)
			}
		}
		cfg.Abstain.Classifiers = append(keep, *cal.Classifier)
	}
	cfg.CalibratedOn = cal.Digest
	return cfg
}

// bestCutoff returns the cutoff, among midpoints between the scores of the
// given queries, that maximises F-beta of "abstain when score < cutoff",
// and that F-beta.
func bestCutoff(scores []float64, noSkill []bool, idx []int, beta float64) (float64, float64) {
	type sv struct {
		s  float64
		no bool
	}
	vs := make([]sv, len(idx))
	totalNo := 0
	for j, i := range idx {
		vs[j] = sv{scores[i], noSkill[i]}
		if noSkill[i] {
			totalNo++
		}
	}
	sort.Slice(vs, func(a, b int) bool { return vs[a].s < vs[b].s })
	bestF, bestCut := -1.0, math.Inf(-1)
	b2 := beta * beta
	correct := 0
	for j := 0; j < len(vs); j++ {
		if vs[j].no {
			correct++
		}
		if j+1 < len(vs) && vs[j+1].s == vs[j].s {
			continue
		}
		abstained := j + 1
		p := float64(correct) / float64(abstained)
		r := 0.0
		if totalNo > 0 {
			r = float64(correct) / float64(totalNo)
		}
		f := 0.0
		if p > 0 && r > 0 {
			f = (1 + b2) * p * r / (b2*p + r)
		}
		if f > bestF {
			bestF = f
			if j+1 < len(vs) {
				bestCut = (vs[j].s + vs[j+1].s) / 2
			} else {
				bestCut = math.Nextafter(vs[j].s, math.Inf(1))
			}
		}
	}
	return bestCut, bestF
}

// curve returns operating points at every 5% of queries abstained.
func curve(scores []float64, noSkill []bool, beta float64) []CurvePoint {
	s := append([]float64(nil), scores...)
	sort.Float64s(s)
	var out []CurvePoint
	last := math.Inf(-1)
	for q := 1; q <= 19; q++ {
		cut := s[min(len(s)-1, q*len(s)/20)]
		if cut == last {
			continue
		}
		last = cut
		pred := make([]bool, len(scores))
		for i, v := range scores {
			pred[i] = v < cut
		}
		a := abstention(pred, noSkill)
		out = append(out, CurvePoint{Cutoff: cut, Abstained: a.Abstained, Precision: a.Precision, Recall: a.Recall, F: 100 * a.fBeta(beta)})
	}
	return out
}

// stratifiedFolds splits the indexes into k folds with the same share of
// each class, in a fixed pseudo-random order.
func stratifiedFolds(class []bool, k int) [][]int {
	var a, b []int
	for i, c := range class {
		if c {
			a = append(a, i)
		} else {
			b = append(b, i)
		}
	}
	r := rand.New(rand.NewPCG(0x6d637073, 0x61676576))
	r.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	r.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	folds := make([][]int, k)
	for j, i := range append(a, b...) {
		folds[j%k] = append(folds[j%k], i)
	}
	return folds
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func complement(idx []int, n int) []int {
	in := make([]bool, n)
	for _, i := range idx {
		in[i] = true
	}
	var out []int
	for i := 0; i < n; i++ {
		if !in[i] {
			out = append(out, i)
		}
	}
	return out
}

func pick(s []sample, idx []int) []sample {
	out := make([]sample, len(idx))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}

func negate(b []bool) []bool {
	out := make([]bool, len(b))
	for i, v := range b {
		out[i] = !v
	}
	return out
}
