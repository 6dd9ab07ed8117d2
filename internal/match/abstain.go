package match

import (
	"errors"
	"fmt"
	"math"

	"github.com/mcpsag/router/internal/skill"
)

// Features are the score features the abstention classifier reads. They are
// computed over the skills visible to the request and do not depend on the
// fusion rule, so one classifier serves every rule.
type Features struct {
	// DenseTop is the best cosine; DenseGap the best minus the second;
	// DenseSpread the best minus the tenth. Zero without embeddings.
	DenseTop, DenseGap, DenseSpread float64
	// BM25Top is log(1 + best BM25 score); BM25Ratio the second score
	// over the best; BM25Norm the best score over the score of an ideal
	// document holding every task term.
	BM25Top, BM25Ratio, BM25Norm float64
	// Coverage is the share of the task's distinct terms that occur in
	// some indexed field.
	Coverage float64
	// Agree is 1 when both lists rank the same skill first.
	Agree float64
	// CrossRank is the reciprocal rank, in the BM25 list, of the dense
	// list's best skill (0 when absent).
	CrossRank float64
	// TaskTerms is log(1 + distinct task terms).
	TaskTerms float64
	// Boost is the largest trigger and name boost any visible candidate
	// got: how strongly the task names some skill, even when too weakly
	// to count as explicit.
	Boost float64
	// CoverBest is the largest share of the task's idf mass that one
	// candidate of the BM25 list holds in its fields, however often: every
	// distinct word form of the task counts once per analyzer group whose
	// fields hold text in some skill, weighted by its idf there (a form no
	// skill holds counts with the largest idf). Term frequencies and the
	// scale of BM25 scores play no part.
	CoverBest float64
	// Skills is log(1 + indexed skills) and Vocab log(1 + distinct
	// indexed terms): the catalog's size and how much text it holds, so a
	// classifier can read the other features against them (a catalog of
	// long skills matches more words of any task by chance).
	Skills, Vocab float64
	// NoKeyword is 1 when no visible skill shares a word with the task.
	NoKeyword float64
}

// Feature names, as written in a Classifier.
const (
	FeatDenseTop    = "dense_top"
	FeatDenseGap    = "dense_gap"
	FeatDenseSpread = "dense_spread"
	FeatBM25Top     = "bm25_top"
	FeatBM25Ratio   = "bm25_ratio"
	FeatBM25Norm    = "bm25_norm"
	FeatCoverage    = "coverage"
	FeatAgree       = "agree"
	FeatCrossRank   = "cross_rank"
	FeatTaskTerms   = "task_terms"
	FeatBoost       = "boost"
	FeatCoverBest   = "cover_best"
	FeatSkills      = "skills"
	FeatVocab       = "vocab"
	FeatNoKeyword   = "no_keyword"
)

// HybridFeatures are the features a hybrid classifier reads by default,
// those of the shipped calibration: the best cosine, how much of the task's
// idf mass one skill covers, whether the dense winner ranks high in the
// BM25 list, the trigger or name boost, and how close the second BM25
// score comes to the first. None of them names the catalog (its size, its
// vocabulary), so a classifier reading them cannot learn to recognise the
// catalogs it was fitted on. KeywordFeatures are those of them available
// without embeddings. Every other feature name stays readable, so
// classifiers fitted on other lists keep working.
var (
	HybridFeatures  = []string{FeatDenseTop, FeatCoverBest, FeatCrossRank, FeatBoost, FeatBM25Ratio}
	KeywordFeatures = []string{FeatCoverBest, FeatBoost, FeatBM25Ratio}
)

// EvidenceSigns are the directions evidence features may push a fitted
// classifier (the sign constraints of internal/eval's fits): a higher
// cosine, more of the task covered by one skill, the two lists agreeing, a
// trigger or name, more of the task's words known to the catalog never
// lower the probability that a skill fits. The catalog's size and vocabulary and the BM25 ratio are
// free: which way they push depends on the rest.
var EvidenceSigns = map[string]int{FeatDenseTop: 1, FeatDenseGap: 1, FeatDenseSpread: 1, FeatBM25Top: 1,
	FeatBM25Norm: 1, FeatCoverage: 1, FeatAgree: 1, FeatCrossRank: 1, FeatBoost: 1, FeatCoverBest: 1}

// denseFeatures need embeddings; a keyword-only classifier cannot read
// them.
var denseFeatures = map[string]bool{FeatDenseTop: true, FeatDenseGap: true, FeatDenseSpread: true,
	FeatAgree: true, FeatCrossRank: true}

// Value returns the feature called name, and false for an unknown name.
func (f Features) Value(name string) (float64, bool) {
	switch name {
	case FeatDenseTop:
		return f.DenseTop, true
	case FeatDenseGap:
		return f.DenseGap, true
	case FeatDenseSpread:
		return f.DenseSpread, true
	case FeatBM25Top:
		return f.BM25Top, true
	case FeatBM25Ratio:
		return f.BM25Ratio, true
	case FeatBM25Norm:
		return f.BM25Norm, true
	case FeatCoverage:
		return f.Coverage, true
	case FeatAgree:
		return f.Agree, true
	case FeatCrossRank:
		return f.CrossRank, true
	case FeatTaskTerms:
		return f.TaskTerms, true
	case FeatBoost:
		return f.Boost, true
	case FeatCoverBest:
		return f.CoverBest, true
	case FeatSkills:
		return f.Skills, true
	case FeatVocab:
		return f.Vocab, true
	case FeatNoKeyword:
		return f.NoKeyword, true
	}
	return 0, false
}

// Classifier is a logistic model over standardised Features of "the top
// candidates hold a skill for the task" (the shipped calibration), or of
// "the task needs one of the skills" (routerctl calibrate on one labelled
// set). Match abstains when its probability is below Cutoff; a served
// match is confident at or above Confident and low-confidence below it.
type Classifier struct {
	// Mode is "hybrid" (used by hybrid and dense matching) or "bm25"
	// (keyword-only matching, including degraded requests).
	Mode skill.MatchMode `json:"mode" yaml:"mode"`
	// Model is the embedding model the dense features came from; a
	// hybrid classifier is only used with the same model. Empty matches
	// any model.
	Model    string    `json:"model,omitempty" yaml:"model,omitempty"`
	Features []string  `json:"features" yaml:"features"`
	Mean     []float64 `json:"mean" yaml:"mean"`
	Scale    []float64 `json:"scale" yaml:"scale"`
	Weights  []float64 `json:"weights" yaml:"weights"`
	Bias     float64   `json:"bias" yaml:"bias"`
	Cutoff   float64   `json:"cutoff" yaml:"cutoff"`
	// Confident is the probability from which a served match is
	// confident; between Cutoff and it the candidates are returned as
	// low-confidence. 0 (or anything at or under Cutoff) makes every
	// served match confident.
	Confident float64 `json:"confident,omitempty" yaml:"confident,omitempty"`
}

// Validate reports whether c can be used: a known mode, at least one
// feature, all known (and none dense in keyword mode), mean, scale and
// weight for each, finite numbers, positive scales, and cutoff and
// confident in [0, 1]. The configuration checks each classifier with it;
// a fit checks what it built.
func (c *Classifier) Validate() error {
	if c.Mode != skill.ModeHybrid && c.Mode != skill.ModeKeyword {
		return fmt.Errorf("mode %q is not hybrid or bm25", c.Mode)
	}
	n := len(c.Features)
	if n == 0 {
		return errors.New("no features")
	}
	if len(c.Mean) != n || len(c.Scale) != n || len(c.Weights) != n {
		return fmt.Errorf("features, mean, scale and weights must have the same length (%d, %d, %d, %d)",
			n, len(c.Mean), len(c.Scale), len(c.Weights))
	}
	for i, name := range c.Features {
		if _, ok := (Features{}).Value(name); !ok {
			return fmt.Errorf("unknown feature %q", name)
		}
		if c.Mode == skill.ModeKeyword && denseFeatures[name] {
			return fmt.Errorf("feature %q is not available in mode %s", name, c.Mode)
		}
		if !finiteAll(c.Mean[i], c.Scale[i], c.Weights[i]) || c.Scale[i] <= 0 {
			return fmt.Errorf("feature %q: mean, scale and weight must be finite and scale positive", name)
		}
	}
	if !finiteAll(c.Bias, c.Cutoff, c.Confident) || c.Cutoff < 0 || c.Cutoff > 1 || c.Confident < 0 || c.Confident > 1 {
		return errors.New("bias must be finite, and cutoff and confident in [0, 1]")
	}
	return nil
}

// Probability returns the classifier's probability that the task needs a
// skill.
func (c *Classifier) Probability(f Features) float64 {
	z := c.Bias
	for i, name := range c.Features {
		v, _ := f.Value(name)
		z += c.Weights[i] * (v - c.Mean[i]) / c.Scale[i]
	}
	return Sigmoid(z)
}

// Sigmoid is the classifier's link, the logistic function 1/(1+e^-z),
// computed without overflow; a fit computes its probabilities with it, so
// the fitted Probability is the model that was fitted.
func Sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

func finiteAll(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
