package match

import (
	"errors"
	"fmt"
	"math"

	"github.com/mcpsag/router/internal/skill"
)

// Analyzer names the text analysis applied to one field (and to the task
// when it is matched against that field). Every analyzer splits words at
// Unicode word boundaries, camelCase humps, hyphens and underscores,
// lowercases them and drops English stop words.
type Analyzer string

// Analyzers.
const (
	// AnalyzerStem adds the Snowball (Porter2) English stemmer: "forms",
	// "formatting" and "formatted" meet. Best on short fields.
	AnalyzerStem Analyzer = "stem"
	// AnalyzerLight stems English plurals only.
	AnalyzerLight Analyzer = "light"
	// AnalyzerPlain does not stem. Best on long bodies, where stemming
	// merges too many unrelated words.
	AnalyzerPlain Analyzer = "plain"
)

func (a Analyzer) valid() bool {
	return a == AnalyzerStem || a == AnalyzerLight || a == AnalyzerPlain
}

// Field configures one indexed field.
type Field struct {
	// Weight multiplies the field's BM25 score; 0 leaves the field out of
	// the index.
	Weight float64 `json:"weight" yaml:"weight"`
	// Analyzer is "stem", "light" or "plain".
	Analyzer Analyzer `json:"analyzer" yaml:"analyzer"`
	// B, when set, is this field's length normalisation (0 to 1) in place
	// of bm25.b.
	B *float64 `json:"b,omitempty" yaml:"b,omitempty"`
}

// Fields configures what BM25 indexes.
type Fields struct {
	Name        Field `json:"name" yaml:"name"`
	Description Field `json:"description" yaml:"description"`
	Tags        Field `json:"tags" yaml:"tags"`
	Triggers    Field `json:"triggers" yaml:"triggers"`
	Body        Field `json:"body" yaml:"body"`
	// Params indexes the names and descriptions of a tool's parameters
	// and results. The field exists only in an index that holds a tool
	// with parameters or results, so it changes nothing for skills.
	Params Field `json:"params" yaml:"params"`
	// BodyChars is how many characters of the body are indexed, cut back
	// to a word boundary; 0 indexes no body.
	BodyChars int `json:"body_chars" yaml:"body_chars"`
}

// BM25 holds the keyword scoring parameters.
type BM25 struct {
	// K1 is the term-frequency saturation (0 means 3).
	K1 float64 `json:"k1" yaml:"k1"`
	// B is the length normalisation, 0 to 1, of every field that does not
	// set its own.
	B float64 `json:"b" yaml:"b"`
	// Scoring is "bm25f" (empty: the default): a term's frequencies in the
	// fields that share an analyzer are weighted, length-normalised per
	// field and summed before one saturation, with one idf over the
	// documents holding it in any of them; or "sum": every field is
	// scored as its own Okapi BM25 document and the weighted scores are
	// added (the former scoring, best with k1 1.2, kept for comparison).
	Scoring string `json:"scoring,omitempty" yaml:"scoring,omitempty"`
}

// Keyword scorings.
const (
	ScoringBM25F = "bm25f"
	ScoringSum   = "sum"
)

// FusionConfig configures how the dense and BM25 rankings combine.
type FusionConfig struct {
	// Rule is the default fusion rule; a request may name another.
	Rule skill.Fusion `json:"rule" yaml:"rule"`
	// ConvexWeight is the dense share of the convex mix:
	// fused = w*dense + (1-w)*bm25, each min-max normalised over its
	// candidate list.
	ConvexWeight float64 `json:"convex_weight" yaml:"convex_weight"`
	// AdaptiveWeight is the adaptive rule's dense share for a task none of
	// whose terms occurs in the index. The rule is the convex mix with
	// w = AdaptiveWeight * (1 - coverage), where coverage is the share of
	// the task's terms found in some indexed field (Features.Coverage), so
	// a task the keyword index fully covers is ranked by BM25 alone.
	AdaptiveWeight float64 `json:"adaptive_weight" yaml:"adaptive_weight"`
	// Normalize is how the convex and adaptive rules put both lists on
	// one scale:
	// "minmax" maps each list's pool to [0, 1]; "zscore" standardises
	// each pool (mean 0, standard deviation 1). Empty means minmax.
	Normalize string `json:"normalize,omitempty" yaml:"normalize,omitempty"`
	// RRFK is reciprocal rank fusion's k (0 means 60).
	RRFK float64 `json:"rrf_k" yaml:"rrf_k"`
	// RRFDenseWeight is the dense share of the reciprocal-rank vote; 0.5
	// is plain RRF.
	RRFDenseWeight float64 `json:"rrf_dense_weight" yaml:"rrf_dense_weight"`
	// TiebreakEpsilon is the cosine difference under which the tiebreak
	// rule lets BM25 order two skills.
	TiebreakEpsilon float64 `json:"tiebreak_epsilon" yaml:"tiebreak_epsilon"`
	// Pool is how many candidates each list contributes before fusion
	// (0 means 100).
	Pool int `json:"pool" yaml:"pool"`
}

// AbstainConfig configures when Match returns no candidate and how many it
// returns otherwise.
type AbstainConfig struct {
	// Threshold is the cosine the best visible skill must reach. It
	// belongs to the embedding model, since cosine scales differ between
	// models: 0 means the model's own threshold (see WithModelThreshold).
	// It applies when no classifier fits the request, or when the request
	// sets its own threshold.
	Threshold float64 `json:"threshold" yaml:"threshold"`
	// KeywordThreshold is the BM25 score the best skill must reach when
	// matching is keyword-only (mode bm25, or embeddings unavailable);
	// 0 turns the rule off.
	KeywordThreshold float64 `json:"keyword_threshold" yaml:"keyword_threshold"`
	// Relative drops candidates whose fused score is below Relative times
	// the best one (0 keeps all, 1 keeps only ties with the best).
	Relative float64 `json:"relative" yaml:"relative"`
	// Margin keeps only the candidates whose fused score is within Margin
	// of the best, measured as a share of the fusion's score scale, so
	// a clear winner comes alone and a cluster of close scores comes
	// together; 0 turns the rule off.
	Margin float64 `json:"margin" yaml:"margin"`
	// Classifiers are calibrated abstention models (see Calibrate), one
	// per matching mode at most. A classifier fitted with another
	// embedding model is not used.
	Classifiers []Classifier `json:"classifiers,omitempty" yaml:"classifiers,omitempty"`
}

// TriggerConfig bounds what trigger phrases and name mentions add to a
// skill's fused score, in units of the fusion's score scale (the best
// possible fused score is 1).
type TriggerConfig struct {
	// PhraseBoost is added for a trigger of two or more informative words
	// found in the task.
	PhraseBoost float64 `json:"phrase_boost" yaml:"phrase_boost"`
	// WordBoost is the most a one-word trigger adds; it is scaled by how
	// rare the word is among the indexed skills, so a common word adds
	// almost nothing.
	WordBoost float64 `json:"word_boost" yaml:"word_boost"`
	// NameBoost is added when the task names the skill (a name of two or
	// more words; one-word names count as a one-word trigger).
	NameBoost float64 `json:"name_boost" yaml:"name_boost"`
	// MaxBoost caps the total boost of one skill.
	MaxBoost float64 `json:"max_boost" yaml:"max_boost"`
	// PhraseInfo is how informative a phrase must be to count fully: the
	// sum over its words of their rarity (1 for a word only one skill
	// uses, near 0 for a word every skill uses). Weaker phrases are
	// scaled down and never count as explicit.
	PhraseInfo float64 `json:"phrase_info" yaml:"phrase_info"`
	// Explicit lets a full-strength phrase trigger or name mention on the
	// best candidate override abstention: the task asked for that skill
	// in so many words. One-word triggers never do.
	Explicit bool `json:"explicit" yaml:"explicit"`
}

// Config configures indexing and matching. Start from DefaultConfig and
// change fields; the zero value of a field whose zero is meaningless (TopK,
// MaxTopK, MaxTaskBytes, BM25.K1, Fusion.RRFK, Fusion.Pool, Mode,
// Fusion.Rule, Triggers.PhraseInfo, analyzers) means its default.
type Config struct {
	// Mode is the default matching mode: hybrid, dense or bm25.
	Mode   skill.MatchMode `json:"mode" yaml:"mode"`
	Fields Fields          `json:"fields" yaml:"fields"`
	BM25   BM25            `json:"bm25" yaml:"bm25"`
	Fusion FusionConfig    `json:"fusion" yaml:"fusion"`
	// Abstain holds the abstention and cut-off rules.
	Abstain  AbstainConfig `json:"abstain" yaml:"abstain"`
	Triggers TriggerConfig `json:"triggers" yaml:"triggers"`
	// Parts splits a task of several sentences for dense matching.
	Parts PartsConfig `json:"parts" yaml:"parts"`
	// TopK is the number of candidates when a request asks for 0.
	TopK int `json:"top_k" yaml:"top_k"`
	// MaxTopK is the largest top_k a request may ask for.
	MaxTopK int `json:"max_top_k" yaml:"max_top_k"`
	// MaxTaskBytes caps the task text; longer tasks are rejected.
	MaxTaskBytes int `json:"max_task_bytes" yaml:"max_task_bytes"`
	// CalibratedOn records the labelled query sets (digests, see
	// eval.Digest, separated by spaces) that the threshold, the convex
	// weight and the classifiers were fitted on, so an evaluation on one of
	// them can say its verdict figures are in-sample. Empty when not
	// calibrated.
	CalibratedOn string `json:"calibrated_on,omitempty" yaml:"calibrated_on,omitempty"`
}

// Defaults. The fusion rule, the field analyzers, the convex weight, the
// adaptive weight and k1 were chosen on the dev sets; docs/matching.md has
// the numbers.
const (
	DefaultTopK         = 3
	DefaultMaxTopK      = 50
	DefaultMaxTaskBytes = 16 << 10
	DefaultPool         = 100
	DefaultRRFK         = 60
	DefaultK1           = 3
	DefaultB            = 0.75
)

// DefaultConfig returns the configuration Match uses unless told otherwise.
func DefaultConfig() Config {
	return Config{
		Mode: skill.ModeHybrid,
		Fields: Fields{
			Name:        Field{Weight: 1.5, Analyzer: AnalyzerStem},
			Description: Field{Weight: 1, Analyzer: AnalyzerStem},
			Tags:        Field{Weight: 1, Analyzer: AnalyzerStem},
			Triggers:    Field{Weight: 1, Analyzer: AnalyzerStem},
			Body:        Field{Weight: 1.25, Analyzer: AnalyzerPlain},
			Params:      Field{Weight: 1, Analyzer: AnalyzerPlain},
			BodyChars:   8000,
		},
		BM25: BM25{K1: DefaultK1, B: DefaultB, Scoring: ScoringBM25F},
		// Chosen for the default model, mcpsag-minilm-v1: the weight that
		// keeps every dev set left out of its fine-tuning above BM25 alone
		// (docs/matching.md, Decisions). The static model ranked best with
		// the adaptive rule at 0.5.
		Fusion: FusionConfig{
			Rule:            skill.FusionConvex,
			ConvexWeight:    0.5,
			AdaptiveWeight:  0.5,
			RRFK:            DefaultRRFK,
			RRFDenseWeight:  0.5,
			TiebreakEpsilon: 0.01,
			Pool:            DefaultPool,
		},
		Abstain: AbstainConfig{
			Threshold: 0,
			Relative:  0.5,
			Margin:    0,
		},
		Triggers: TriggerConfig{
			PhraseBoost: 0.15,
			WordBoost:   0.04,
			NameBoost:   0.2,
			MaxBoost:    0.3,
			PhraseInfo:  1,
			Explicit:    true,
		},
		Parts:        PartsConfig{Max: 8, Weight: 0.5},
		TopK:         DefaultTopK,
		MaxTopK:      DefaultMaxTopK,
		MaxTaskBytes: DefaultMaxTaskBytes,
	}
}

// withDefaults fills the fields whose zero value means "default".
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.Fusion.Rule == "" {
		c.Fusion.Rule = d.Fusion.Rule
	}
	if c.Fusion.RRFK == 0 {
		c.Fusion.RRFK = d.Fusion.RRFK
	}
	if c.Fusion.Pool == 0 {
		c.Fusion.Pool = d.Fusion.Pool
	}
	if c.BM25.K1 == 0 {
		c.BM25.K1 = d.BM25.K1
	}
	if c.TopK == 0 {
		c.TopK = d.TopK
	}
	if c.MaxTopK == 0 {
		c.MaxTopK = d.MaxTopK
	}
	if c.MaxTaskBytes == 0 {
		c.MaxTaskBytes = d.MaxTaskBytes
	}
	if c.Triggers.PhraseInfo == 0 {
		c.Triggers.PhraseInfo = d.Triggers.PhraseInfo
	}
	for _, f := range []*Field{&c.Fields.Name, &c.Fields.Description, &c.Fields.Tags, &c.Fields.Triggers} {
		if f.Analyzer == "" {
			f.Analyzer = AnalyzerStem
		}
	}
	if c.Fields.Body.Analyzer == "" {
		c.Fields.Body.Analyzer = AnalyzerPlain
	}
	if c.Fields.Params.Analyzer == "" {
		c.Fields.Params.Analyzer = AnalyzerPlain
	}
	return c
}

// Validate reports every setting that is out of range, after filling
// defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var v checker
	if !validMode(c.Mode) {
		v.bad("mode", "%q is not hybrid, dense or bm25", c.Mode)
	}
	if n := c.Fusion.Normalize; n != "" && n != NormalizeMinMax && n != NormalizeZScore {
		v.bad("fusion.normalize", "%q is not minmax or zscore", n)
	}
	if !validFusion(c.Fusion.Rule) {
		v.bad("fusion.rule", "%q is not tiebreak, rrf, convex or adaptive", c.Fusion.Rule)
	}
	c.Fields.check(&v)
	v.nonNeg("bm25.k1", c.BM25.K1)
	v.unit("bm25.b", c.BM25.B)
	if sc := c.BM25.Scoring; sc != "" && sc != ScoringBM25F && sc != ScoringSum {
		v.bad("bm25.scoring", "%q is not bm25f or sum", sc)
	}
	c.Fusion.check(&v)
	c.Abstain.check(&v)
	c.Triggers.check(&v)
	v.unit("parts.weight", c.Parts.Weight)
	if c.Parts.Max < 0 || c.Parts.Max > 64 {
		v.bad("parts.max", "%d is outside [0, 64]", c.Parts.Max)
	}
	if c.TopK < 1 || c.TopK > c.MaxTopK {
		v.bad("top_k", "%d is outside [1, max_top_k=%d]", c.TopK, c.MaxTopK)
	}
	if c.MaxTopK < 1 || c.MaxTopK > 1000 {
		v.bad("max_top_k", "%d is outside [1, 1000]", c.MaxTopK)
	}
	if c.MaxTaskBytes < 1 || c.MaxTaskBytes > 1<<20 {
		v.bad("max_task_bytes", "%d is outside [1, 1048576]", c.MaxTaskBytes)
	}
	return errors.Join(v.errs...)
}

// checker gathers the settings Validate finds out of range, in order.
type checker struct{ errs []error }

func (v *checker) bad(field, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

func (v *checker) finite(field string, x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		v.bad(field, "must be a finite number")
		return false
	}
	return true
}

func (v *checker) unit(field string, x float64) {
	if v.finite(field, x) && (x < 0 || x > 1) {
		v.bad(field, "%g is outside [0, 1]", x)
	}
}

func (v *checker) nonNeg(field string, x float64) {
	if v.finite(field, x) && x < 0 {
		v.bad(field, "%g is negative", x)
	}
}

func (f Fields) check(v *checker) {
	fields := []struct {
		name string
		f    Field
	}{
		{"fields.name", f.Name}, {"fields.description", f.Description},
		{"fields.tags", f.Tags}, {"fields.triggers", f.Triggers}, {"fields.body", f.Body},
		{"fields.params", f.Params},
	}
	for _, fd := range fields {
		v.nonNeg(fd.name+".weight", fd.f.Weight)
		if fd.f.B != nil {
			v.unit(fd.name+".b", *fd.f.B)
		}
		if !fd.f.Analyzer.valid() {
			v.bad(fd.name+".analyzer", "%q is not stem, light or plain", fd.f.Analyzer)
		}
	}
	if f.BodyChars < 0 {
		v.bad("fields.body_chars", "%d is negative", f.BodyChars)
	}
}

func (f FusionConfig) check(v *checker) {
	v.unit("fusion.convex_weight", f.ConvexWeight)
	v.unit("fusion.adaptive_weight", f.AdaptiveWeight)
	v.unit("fusion.rrf_dense_weight", f.RRFDenseWeight)
	v.nonNeg("fusion.rrf_k", f.RRFK)
	v.nonNeg("fusion.tiebreak_epsilon", f.TiebreakEpsilon)
	if f.Pool < 1 || f.Pool > 10000 {
		v.bad("fusion.pool", "%d is outside [1, 10000]", f.Pool)
	}
}

func (a AbstainConfig) check(v *checker) {
	if v.finite("abstain.threshold", a.Threshold) && (a.Threshold < -1 || a.Threshold > 1) {
		v.bad("abstain.threshold", "%g is outside [-1, 1]", a.Threshold)
	}
	v.nonNeg("abstain.keyword_threshold", a.KeywordThreshold)
	v.unit("abstain.relative", a.Relative)
	v.unit("abstain.margin", a.Margin)
	// One classifier per mode and model: a hybrid classifier reads the
	// scores of the model it was fitted with (Classifier.Model), so the
	// bundled models each bring their own.
	type key struct {
		mode  skill.MatchMode
		model string
	}
	seen := map[key]bool{}
	for i, cl := range a.Classifiers {
		if err := cl.Validate(); err != nil {
			v.bad(fmt.Sprintf("abstain.classifiers[%d]", i), "%v", err)
		}
		k := key{cl.Mode, cl.Model}
		if seen[k] {
			if cl.Model != "" {
				v.bad(fmt.Sprintf("abstain.classifiers[%d]", i), "a second classifier for mode %q and model %s", cl.Mode, cl.Model)
			} else {
				v.bad(fmt.Sprintf("abstain.classifiers[%d]", i), "a second classifier for mode %q", cl.Mode)
			}
		}
		seen[k] = true
	}
}

func (t TriggerConfig) check(v *checker) {
	v.unit("triggers.phrase_boost", t.PhraseBoost)
	v.unit("triggers.word_boost", t.WordBoost)
	v.unit("triggers.name_boost", t.NameBoost)
	v.unit("triggers.max_boost", t.MaxBoost)
	if v.finite("triggers.phrase_info", t.PhraseInfo) && t.PhraseInfo <= 0 {
		v.bad("triggers.phrase_info", "%g must be positive", t.PhraseInfo)
	}
}

// Normalisations of the convex and adaptive rules.
const (
	NormalizeMinMax = "minmax"
	NormalizeZScore = "zscore"
)

func validMode(m skill.MatchMode) bool {
	return m == skill.ModeHybrid || m == skill.ModeDense || m == skill.ModeKeyword
}

func validFusion(f skill.Fusion) bool {
	return f == skill.FusionTiebreak || f == skill.FusionRRF || f == skill.FusionConvex || f == skill.FusionAdaptive
}

// WithModelThreshold returns c with the embedding model's cosine threshold
// filled in, unless c sets its own.
func (c Config) WithModelThreshold(t float64) Config {
	if c.Abstain.Threshold == 0 {
		c.Abstain.Threshold = t
	}
	return c
}
