package eval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// RunOptions select how the queries are matched.
type RunOptions struct {
	// Mode is hybrid, dense or bm25; empty means the index's default.
	Mode skill.MatchMode
	// Fusion overrides the fusion rule; empty means the index's default.
	Fusion skill.Fusion
	// TopK is the top_k of each request (0: the configured default). The
	// ranking figures always look at the top 10.
	TopK int
	// IncludeHidden also matches hidden skills.
	IncludeHidden bool
	// PerQuery keeps every query's outcome in the report.
	PerQuery bool
	// Set names the query set in the report.
	Set string
	// Progress, if set, is told each query done (phase "queries").
	Progress Progress
	// ToolLabels maps the upstream names of tools to the names the
	// queries use for them (a dev set's mapping.json), so a catalog served
	// as tools of an MCP server is scored against the same labels as its
	// skill form. Tools without a label are scored by their entry name.
	ToolLabels map[string]string
}

// Report is the outcome of one evaluation run.
type Report struct {
	Set    string          `json:"set"`
	Skills int             `json:"skills"`
	Mode   skill.MatchMode `json:"mode"`
	Fusion skill.Fusion    `json:"fusion"`
	// Model is the embedding model's name, empty without one.
	Model          string `json:"model"`
	DenseAvailable bool   `json:"dense_available"`
	// Queries counts all queries; NeedSkill those with relevant skills,
	// NoSkill those without.
	Queries   int `json:"queries"`
	NeedSkill int `json:"need_skill"`
	NoSkill   int `json:"no_skill"`
	// Degraded counts queries answered keyword-only although the mode
	// asked for embeddings.
	Degraded int `json:"degraded"`
	// Ranking is measured on the candidates before abstention and
	// cut-offs, over the queries that need a skill.
	Ranking Ranking `json:"ranking"`
	// EndToEndHit1 is Hit@1 (percent) counting an abstention on a query
	// that needs a skill as a miss.
	EndToEndHit1 float64    `json:"end_to_end_hit_at_1"`
	Abstention   Abstention `json:"abstention"`
	// HiddenHits counts the queries that need a skill and were abstained
	// on although one of their relevant skills was in the top 3 of the
	// ranking: the skill the agent needed, hidden by the abstention.
	// HiddenHitShare is their share of NeedSkill in percent (-1 without
	// such queries).
	HiddenHits     int     `json:"hidden_hits"`
	HiddenHitShare float64 `json:"hidden_hit_share"`
	// Verdicts counts the verdicts of the queries that need a skill and
	// of those that need none.
	Verdicts Verdicts `json:"verdicts"`
	// Named counts the queries that need a skill and name one of their
	// relevant skills or fire one of its triggers; NamedAbstained how many
	// of them were abstained on.
	Named          int `json:"named"`
	NamedAbstained int `json:"named_abstained_on"`
	// Rules counts which rule made each abstention decision.
	Rules   map[string]int `json:"rules"`
	Latency Latency        `json:"latency"`
	// InSample is set when the configuration was calibrated on this
	// very query set, so its abstention figures are optimistic.
	InSample bool `json:"in_sample"`
	// Notes explain anything that qualifies the figures.
	Notes    []string      `json:"notes"`
	PerQuery []QueryResult `json:"per_query"`
}

// Verdicts counts the verdicts of two kinds of query, and of the queries
// that need a skill and have one of theirs in the top 3 of the ranking
// (Top3): those the router should call confident.
type Verdicts struct {
	NeedSkill VerdictCounts `json:"need_skill"`
	Top3      VerdictCounts `json:"need_skill_top3"`
	NoSkill   VerdictCounts `json:"no_skill"`
}

// VerdictCounts counts how many queries got each verdict;
// LowConfidenceShare is the share of low-confidence ones in percent (-1
// without queries).
type VerdictCounts struct {
	Confident          int     `json:"confident"`
	LowConfidence      int     `json:"low_confidence"`
	NoSkill            int     `json:"no_skill"`
	LowConfidenceShare float64 `json:"low_confidence_share"`
}

func (v *VerdictCounts) add(verdict skill.Verdict) {
	switch verdict {
	case skill.VerdictConfident:
		v.Confident++
	case skill.VerdictLowConfidence:
		v.LowConfidence++
	default:
		v.NoSkill++
	}
}

func (v VerdictCounts) total() int { return v.Confident + v.LowConfidence + v.NoSkill }

func (v *VerdictCounts) finish() {
	v.LowConfidenceShare = rate(v.LowConfidence, v.Confident+v.LowConfidence+v.NoSkill)
}

// QueryResult is one query's outcome.
type QueryResult struct {
	ID          string   `json:"id"`
	Relevant    []string `json:"relevant"`
	Ranked      []string `json:"ranked"`
	Returned    []string `json:"returned"`
	Verdict     string   `json:"verdict"`
	Abstained   bool     `json:"abstained"`
	Reason      string   `json:"reason"`
	Rule        string   `json:"rule"`
	Probability float64  `json:"probability"`
	Degraded    bool     `json:"degraded"`
	NDCG10      float64  `json:"ndcg_at_10"`
	// Named is set when the task names a relevant skill or fires one of
	// its triggers.
	Named bool `json:"named,omitempty"`
}

// Evaluate runs the queries on the corpus's index.
func (c *Corpus) Evaluate(ctx context.Context, qs []Query, opt RunOptions) (*Report, error) {
	return c.EvaluateIndex(ctx, c.Index, qs, opt)
}

// EvaluateIndex runs the queries on ix, which must be built from this
// corpus (Corpus.Build), and notes when dense matching is unavailable.
func (c *Corpus) EvaluateIndex(ctx context.Context, ix *match.Index, qs []Query, opt RunOptions) (*Report, error) {
	rep, err := Run(ctx, ix, qs, opt)
	if err != nil {
		return nil, err
	}
	rep.Model = c.Model.Name
	if c.DenseErr != nil && rep.Mode != skill.ModeKeyword {
		rep.Notes = append([]string{fmt.Sprintf("dense matching is unavailable (%v): these %s figures are keyword-only", c.DenseErr, rep.Mode)}, rep.Notes...)
	}
	return rep, nil
}

// Run matches every query with ix through Index.Rank, the code path of the
// Match RPC, and aggregates the figures. Each query sees every indexed
// skill (no agent scope). It fails only when ctx ends or a request is
// rejected.
func Run(ctx context.Context, ix *match.Index, qs []Query, opt RunOptions) (*Report, error) {
	cfg := ix.Config()
	rep := newReport(ix, cfg, len(qs), opt)
	t := newTally(ix, opt, len(qs))
	for i, q := range qs {
		req := skill.MatchRequest{Task: q.Query, TopK: opt.TopK, Options: skill.MatchOptions{Mode: opt.Mode, Fusion: opt.Fusion, IncludeHidden: opt.IncludeHidden}}
		start := time.Now()
		rk, err := ix.Rank(ctx, req, nil)
		t.times = append(t.times, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		t.add(rep, i, q, rk)
		if opt.Progress != nil {
			opt.Progress("queries", i+1, len(qs))
		}
	}
	t.finish(rep)
	rep.addNotes(qs, cfg, t.missing)
	return rep, nil
}

// tally gathers what Run counts over the queries besides the report's
// counters.
type tally struct {
	opt     RunOptions
	known   map[string]bool // the labels of the indexed skills
	missing int             // relevant labels that name no indexed skill
	pred    []bool          // by query: abstained
	truth   []bool          // by query: needs no skill
	times   []time.Duration
	rank    Ranking
	e2e     float64 // the sum of Hit1 over the queries answered
}

func newTally(ix *match.Index, opt RunOptions, n int) *tally {
	t := &tally{opt: opt, known: map[string]bool{}, pred: make([]bool, n), truth: make([]bool, n), times: make([]time.Duration, 0, n)}
	for _, s := range ix.Skills() {
		t.known[t.label(s)] = true
	}
	return t
}

// label is the name a query's relevant labels use for s: a tool's label
// from ToolLabels, else its name.
func (t *tally) label(s *skill.Skill) string {
	if s.IsTool() {
		if l, ok := t.opt.ToolLabels[s.Tool.Name]; ok {
			return l
		}
	}
	return s.Name
}

// add counts query i's ranking rk into t and rep.
func (t *tally) add(rep *Report, i int, q Query, rk *match.Ranking) {
	res := rk.Result
	ranked := make([]string, len(rk.Ranked))
	for j, c := range rk.Ranked {
		ranked[j] = t.label(c.Skill)
	}
	t.pred[i], t.truth[i] = res.Abstained, !q.NeedSkill()
	rep.Rules[rk.Rule]++
	if res.Degraded {
		rep.Degraded++
	}
	var m Ranking
	named := false
	if q.NeedSkill() {
		m, named = t.addNeedSkill(rep, q, rk, ranked)
	} else {
		rep.NoSkill++
		rep.Verdicts.NoSkill.add(res.Verdict)
	}
	if t.opt.PerQuery {
		qr := QueryResult{
			ID: q.ID, Relevant: q.Relevant, Ranked: ranked, Verdict: string(res.Verdict), Abstained: res.Abstained,
			Reason: res.VerdictDetail, Rule: rk.Rule, Probability: rk.Probability,
			Degraded: res.Degraded, NDCG10: m.NDCG10, Named: named,
		}
		for _, c := range res.Candidates {
			qr.Returned = append(qr.Returned, t.label(c.Skill))
		}
		rep.PerQuery = append(rep.PerQuery, qr)
	}
}

// addNeedSkill counts a query that needs a skill, returning its ranking
// figures and whether its ranking names a relevant skill.
func (t *tally) addNeedSkill(rep *Report, q Query, rk *match.Ranking, ranked []string) (m Ranking, named bool) {
	res := rk.Result
	rep.NeedSkill++
	for _, r := range q.Relevant {
		if !t.known[r] {
			t.missing++
		}
	}
	named = namesRelevant(rk.Ranked, q.Relevant)
	if named {
		rep.Named++
		if res.Abstained {
			rep.NamedAbstained++
		}
	}
	m = queryRanking(ranked, q.Relevant)
	t.rank.add(m)
	top3 := hasRelevant(ranked[:min(3, len(ranked))], q.Relevant)
	if !res.Abstained {
		t.e2e += m.Hit1
	} else if top3 {
		rep.HiddenHits++
	}
	rep.Verdicts.NeedSkill.add(res.Verdict)
	if top3 {
		rep.Verdicts.Top3.add(res.Verdict)
	}
	return m, named
}

// finish puts the tally's figures into rep.
func (t *tally) finish(rep *Report) {
	t.rank.percent(rep.NeedSkill)
	rep.Ranking = t.rank
	rep.HiddenHitShare = rate(rep.HiddenHits, rep.NeedSkill)
	rep.Verdicts.NeedSkill.finish()
	rep.Verdicts.Top3.finish()
	rep.Verdicts.NoSkill.finish()
	if rep.NeedSkill > 0 {
		rep.EndToEndHit1 = 100 * t.e2e / float64(rep.NeedSkill)
	}
	rep.Abstention = abstention(t.pred, t.truth)
	rep.Latency = latency(t.times)
}

// newReport returns the empty report of a run of n queries over ix: the
// mode is the run's or else the configuration's, the fusion rule the
// run's or else (hybrid) the configuration's, and none in keyword mode.
func newReport(ix *match.Index, cfg match.Config, n int, opt RunOptions) *Report {
	rep := &Report{
		Set: opt.Set, Skills: ix.Len(), Mode: opt.Mode, Fusion: opt.Fusion,
		DenseAvailable: ix.DenseAvailable(), Queries: n, Rules: map[string]int{},
	}
	if rep.Mode == "" {
		rep.Mode = cfg.Mode
	}
	if rep.Fusion == "" && rep.Mode == skill.ModeHybrid {
		rep.Fusion = cfg.Fusion.Rule
	}
	if rep.Mode == skill.ModeKeyword {
		rep.Fusion = ""
	}
	return rep
}

// addNotes notes what qualifies the report's figures: missing relevant
// labels that name no indexed skill, a configuration calibrated on these
// very queries (marked InSample), and no query that needs no skill.
func (rep *Report) addNotes(qs []Query, cfg match.Config, missing int) {
	if missing > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d relevant labels name skills that are not indexed; they count as misses", missing))
	}
	if d := Digest(qs); slices.Contains(strings.Fields(cfg.CalibratedOn), d) {
		rep.InSample = true
		rep.Notes = append(rep.Notes, "the configuration was calibrated on this query set ("+d+
			"): verdict figures (and the fusion weights) are in-sample; docs/matching.md has held-out figures")
	}
	if rep.NoSkill == 0 {
		rep.Notes = append(rep.Notes, "no query needs no skill: abstention recall is undefined")
	}
}

// hasRelevant reports whether one of names is relevant.
func hasRelevant(names, relevant []string) bool {
	for _, n := range names {
		if slices.Contains(relevant, n) {
			return true
		}
	}
	return false
}

// namesRelevant reports whether a relevant skill among the ranked
// candidates was named by the task or fired one of its triggers.
func namesRelevant(ranked []skill.Candidate, relevant []string) bool {
	for _, c := range ranked {
		if (c.NameMentioned || len(c.TriggersFired) > 0) && slices.Contains(relevant, c.Skill.Name) {
			return true
		}
	}
	return false
}
