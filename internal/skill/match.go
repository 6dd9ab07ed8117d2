package skill

// Candidate is one skill proposed for a task, with the evidence behind it.
type Candidate struct {
	Skill *Skill

	Cosine float64 // cosine similarity of task and skill embeddings; 0 when keyword-only
	BM25   float64 // raw BM25 score of the skill for the task
	Fused  float64 // the score the ranking used
	// DenseRank and BM25Rank are 1-based ranks in each list; 0 when the
	// skill was not in that list.
	DenseRank int
	BM25Rank  int
	// TriggerBoost is what trigger phrases and name mentions added to Fused.
	TriggerBoost  float64
	TriggersFired []string
	NameMentioned bool
	// Reason is a one-line explanation of why the candidate ranked.
	Reason string
}

// AbstainReason says why a match returned no candidate.
type AbstainReason string

// Abstain reasons.
const (
	AbstainNone           AbstainReason = ""
	AbstainBelowThreshold AbstainReason = "below_threshold" // best score under the model's threshold
	AbstainCalibrated     AbstainReason = "calibrated"      // the calibrated classifier said no skill fits
	AbstainDisabled       AbstainReason = "disabled"        // feature flag skills_v1 is off
	AbstainNoSkills       AbstainReason = "no_skills"       // nothing is visible to this caller
	AbstainNoMatch        AbstainReason = "no_match"        // no skill shares anything with the task
	AbstainNoTools        AbstainReason = "no_tools"        // a request for tools alone, and no tool is visible to this caller
)

// Verdict is what a match says of its candidates as a whole, in the words
// a host passes on to its model: a confident match, candidates that may
// not fit (the agent decides), or no skill fits.
type Verdict string

// Verdicts.
const (
	// VerdictConfident: the candidates very likely hold a skill for the
	// task.
	VerdictConfident Verdict = "confident"
	// VerdictLowConfidence: the router is unsure; the candidates are
	// returned so the agent can judge them, and may not fit.
	VerdictLowConfidence Verdict = "low_confidence"
	// VerdictNoSkill: no skill fits; there are no candidates (Abstained).
	VerdictNoSkill Verdict = "no_skill"
)

// MatchMode selects the retrieval signals a match uses.
type MatchMode string

// Match modes.
const (
	ModeHybrid  MatchMode = "hybrid"
	ModeDense   MatchMode = "dense"
	ModeKeyword MatchMode = "bm25"
)

// Fusion names a rule that combines dense and BM25 rankings.
type Fusion string

// Fusion rules.
const (
	FusionTiebreak Fusion = "tiebreak" // rank by cosine; BM25 breaks near ties (the original design)
	FusionRRF      Fusion = "rrf"      // reciprocal rank fusion
	FusionConvex   Fusion = "convex"   // weighted mix of normalised scores
	// FusionAdaptive is the convex mix with a dense share that grows with
	// the share of the task's terms the keyword index lacks.
	FusionAdaptive Fusion = "adaptive"
)

// MatchResult is the answer to one task.
type MatchResult struct {
	Candidates []Candidate
	// Verdict says how far the candidates can be trusted; VerdictNoSkill
	// exactly when Abstained. VerdictDetail explains it in words.
	Verdict       Verdict
	VerdictDetail string
	Abstained     bool
	AbstainReason AbstainReason
	// AbstainDetail explains the abstention in words.
	AbstainDetail string
	// Generation identifies the index generation the answer came from;
	// GenerationID is its content digest, the same on every replica
	// serving the same skills, model and configuration.
	Generation   uint64
	GenerationID string
	// Degraded is set when embeddings were unavailable and the match used
	// keywords only.
	Degraded bool
	Mode     MatchMode
	Fusion   Fusion
}
