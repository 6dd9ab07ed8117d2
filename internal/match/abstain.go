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
)

// KeywordFeatures are the features available without embeddings;
// HybridFeatures are all of them.
var (
	KeywordFeatures = []string{FeatBM25Top, FeatBM25Ratio, FeatBM25Norm, FeatCoverage, FeatTaskTerms, FeatBoost}
	HybridFeatures  = []string{FeatDenseTop, FeatDenseGap, FeatDenseSpread, FeatBM25Top, FeatBM25Ratio,
		FeatBM25Norm, FeatCoverage, FeatAgree, FeatCrossRank, FeatTaskTerms, FeatBoost}
)

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
	}
	return 0, false
}

// Classifier is a logistic model of "the task needs one of the skills"
// over standardised Features, fitted by Calibrate. Match abstains when its
// probability is below Cutoff.
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
}

func (c *Classifier) validate() error {
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
	allowed := HybridFeatures
	if c.Mode == skill.ModeKeyword {
		allowed = KeywordFeatures
	}
	for i, name := range c.Features {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			return fmt.Errorf("feature %q is not available in mode %s", name, c.Mode)
		}
		if !finiteAll(c.Mean[i], c.Scale[i], c.Weights[i]) || c.Scale[i] <= 0 {
			return fmt.Errorf("feature %q: mean, scale and weight must be finite and scale positive", name)
		}
	}
	if !finiteAll(c.Bias, c.Cutoff) || c.Cutoff < 0 || c.Cutoff > 1 {
		return errors.New("bias must be finite and cutoff in [0, 1]")
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
	return sigmoid(z)
}

func sigmoid(z float64) float64 {
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
