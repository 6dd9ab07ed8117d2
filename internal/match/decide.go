package match

import (
	"fmt"
	"math"

	"github.com/mcpsag/router/internal/skill"
)

// features computes the abstention features from the visible lists.
func features(denseList, bm25List []entry, qs queryStats) Features {
	var f Features
	if len(denseList) > 0 {
		c1 := float64(denseList[0].score)
		f.DenseTop = c1
		if len(denseList) > 1 {
			f.DenseGap = c1 - float64(denseList[1].score)
		}
		f.DenseSpread = c1 - float64(denseList[min(9, len(denseList)-1)].score)
	}
	if len(bm25List) > 0 {
		b1 := float64(bm25List[0].score)
		f.BM25Top = math.Log1p(b1)
		if len(bm25List) > 1 && b1 > 0 {
			f.BM25Ratio = float64(bm25List[1].score) / b1
		}
		if qs.selfScore > 0 {
			f.BM25Norm = b1 / qs.selfScore
		}
	}
	f.Coverage = qs.coverage()
	f.TaskTerms = math.Log1p(float64(qs.terms))
	if len(denseList) > 0 && len(bm25List) > 0 {
		if denseList[0].doc == bm25List[0].doc {
			f.Agree = 1
		}
		for i, e := range bm25List {
			if e.doc == denseList[0].doc {
				f.CrossRank = 1 / float64(i+1)
				break
			}
		}
	}
	return f
}

// catalogFeatures adds the features that compare the task with the whole
// catalog: how much of the task's idf mass the best keyword candidate
// holds, and the catalog's size and vocabulary.
func (ix *Index) catalogFeatures(f *Features, sc *scratch, bm25List []entry, qs queryStats) {
	f.Skills = math.Log1p(float64(ix.Len()))
	f.Vocab = math.Log1p(float64(ix.sparse.distinctTerms()))
	if len(bm25List) == 0 {
		f.NoKeyword = 1
	}
	if qs.idfMass == 0 {
		return
	}
	for _, e := range bm25List {
		f.CoverBest = max(f.CoverBest, float64(sc.cover[e.doc])/qs.idfMass)
	}
}

// classifier returns the calibrated classifier for the matching mode, or
// nil.
func (ix *Index) classifier(mode skill.MatchMode) *Classifier {
	want := skill.ModeHybrid
	if mode == skill.ModeKeyword {
		want = skill.ModeKeyword
	}
	for i := range ix.cfg.Abstain.Classifiers {
		c := &ix.cfg.Abstain.Classifiers[i]
		if c.Mode != want {
			continue
		}
		if want == skill.ModeHybrid && c.Model != "" && c.Model != ix.model {
			continue
		}
		return c
	}
	return nil
}

// decide applies the abstention rules in order (no visible skill, no
// match, an explicit phrase on the best candidate, then the threshold when
// the request sets one or no classifier fits, or the classifier) and gives
// the result its verdict: a served match is confident unless a classifier
// put it between its cutoffs, or nothing judged it (keyword-only matching
// with no threshold).
func (ix *Index) decide(rk *Ranking, res *skill.MatchResult, r resolved, mode skill.MatchMode,
	cands []*candidate, denseList, bm25List []entry, visible func(int32) bool) {
	j := judgment{rk: rk, res: res}
	if len(cands) == 0 {
		if !ix.anyVisible(visible) {
			j.abstain(RuleNoSkills, r.noneVisible, "no %s is visible to this caller", r.noun)
			return
		}
		j.abstain(RuleNoMatch, skill.AbstainNoMatch, "no %s shares a word with the task", r.noun)
		return
	}
	keywordless := len(bm25List) == 0 && !anyFired(cands)
	if keywordless && (len(denseList) == 0 || denseList[0].score <= 0) {
		j.abstain(RuleNoMatch, skill.AbstainNoMatch, "no %s shares a word with the task", r.noun)
		return
	}
	if top := cands[0]; top.fire != nil && top.fire.explicit && ix.cfg.Triggers.Explicit {
		rk.Rule = RuleExplicit
		j.serve(skill.VerdictConfident, "the task names %s in so many words", ix.docs[top.doc].Name)
		return
	}
	// Without a visible skill that has a vector, only keywords can judge.
	keyword := mode == skill.ModeKeyword || len(denseList) == 0
	if keyword {
		mode = skill.ModeKeyword
	}
	cls := ix.classifier(mode)
	if r.threshold != nil || cls == nil {
		ix.decideThreshold(j, r, keyword, denseList, bm25List)
		return
	}
	ix.decideClassifier(j, r, cls, keywordless, denseList)
}

// judgment writes a decision into the ranking and the result.
type judgment struct {
	rk  *Ranking
	res *skill.MatchResult
}

// abstain abstains by rule, for reason, saying why.
func (j judgment) abstain(rule string, reason skill.AbstainReason, format string, args ...any) {
	j.rk.Rule = rule
	j.res.Abstained = true
	j.res.AbstainReason = reason
	j.res.AbstainDetail = fmt.Sprintf(format, args...)
	j.res.Verdict, j.res.VerdictDetail = skill.VerdictNoSkill, j.res.AbstainDetail
}

// serve serves the candidates with verdict v, saying why.
func (j judgment) serve(v skill.Verdict, format string, args ...any) {
	j.res.Verdict, j.res.VerdictDetail = v, fmt.Sprintf(format, args...)
}

// anyFired reports whether a trigger fired on one of cands.
func anyFired(cands []*candidate) bool {
	for _, c := range cands {
		if c.fire != nil {
			return true
		}
	}
	return false
}

// decideClassifier decides by the calibrated classifier cls, or, for a
// keywordless task (no keyword or trigger evidence), by the model's cosine
// threshold, the classifier then saying only how sure a served match is.
func (ix *Index) decideClassifier(j judgment, r resolved, cls *Classifier, keywordless bool, denseList []entry) {
	rk := j.rk
	p := cls.Probability(rk.Features)
	rk.Probability = p
	// No keyword, trigger or name evidence: the classifier's features
	// (BM25 ratios, covers) say nothing about such a task, so the model's
	// cosine threshold decides whether to abstain, and the classifier
	// only how sure a served match is.
	if thr := ix.cfg.Abstain.Threshold; keywordless && thr > 0 {
		rk.Rule = RuleKeywordless
		if c1 := float64(denseList[0].score); c1 < thr {
			j.abstain(RuleKeywordless, skill.AbstainBelowThreshold,
				"no %s shares a word with the task, and the best cosine %.3f is below the model's threshold %.3f", r.noun, c1, thr)
			return
		}
	} else {
		rk.Rule = RuleClassifier
		switch {
		case p < cls.Cutoff && rk.Features.Boost > 0:
			// A task that names a skill or fires a trigger is never
			// abstained on, however weakly it does.
			j.serve(skill.VerdictLowConfidence,
				"the calibrated classifier gives %.2f that these candidates hold a %s for the task, under its cutoff %.2f, "+
					"but the task names a %s or fires a trigger: they may not fit", p, r.noun, cls.Cutoff, r.noun)
			return
		case p < cls.Cutoff:
			j.abstain(RuleClassifier, skill.AbstainCalibrated,
				"the calibrated classifier gives %.2f that a %s fits, below its cutoff %.2f", p, r.noun, cls.Cutoff)
			return
		}
	}
	if p < cls.Confident {
		j.serve(skill.VerdictLowConfidence,
			"the calibrated classifier gives %.2f that these candidates hold a %s for the task, under %.2f: they may not fit", p, r.noun, cls.Confident)
		return
	}
	j.serve(skill.VerdictConfident, "the calibrated classifier gives %.2f that these candidates hold a %s for the task", p, r.noun)
}

// decideThreshold decides by a single score: the best cosine against the
// model's (or the request's) threshold, or in keyword-only matching the
// best BM25 score against the keyword threshold. A keyword-only match with
// no threshold (0, the default) was judged by nothing, so it is served as
// low-confidence.
func (ix *Index) decideThreshold(j judgment, r resolved, keyword bool, denseList, bm25List []entry) {
	rk := j.rk
	if keyword {
		thr := ix.cfg.Abstain.KeywordThreshold
		if r.threshold != nil {
			thr = *r.threshold
		}
		rk.Rule = RuleKeywordThreshold
		b1 := 0.0
		if len(bm25List) > 0 {
			b1 = float64(bm25List[0].score)
		}
		switch {
		case b1 < thr:
			j.abstain(RuleKeywordThreshold, skill.AbstainBelowThreshold,
				"best BM25 score %.3g is below the keyword threshold %.3g", b1, thr)
		case thr <= 0:
			j.serve(skill.VerdictLowConfidence, "keyword-only matching with no calibrated judgment: the candidates may not fit")
		default:
			j.serve(skill.VerdictConfident, "best BM25 score %.3g is at or above the keyword threshold %.3g", b1, thr)
		}
		return
	}
	thr := ix.cfg.Abstain.Threshold
	if r.threshold != nil {
		thr = *r.threshold
	}
	rk.Rule = RuleThreshold
	if c1 := float64(denseList[0].score); c1 < thr {
		j.abstain(RuleThreshold, skill.AbstainBelowThreshold, "best cosine %.3f is below the threshold %.3f", c1, thr)
	} else {
		j.serve(skill.VerdictConfident, "best cosine %.3f is at or above the threshold %.3f", c1, thr)
	}
}

// anyVisible reports whether any indexed skill is visible. It asks every
// skill, so it runs only when no candidate was found.
func (ix *Index) anyVisible(visible func(int32) bool) bool {
	for d := range ix.docs {
		if visible(int32(d)) {
			return true
		}
	}
	return false
}

// cutOff applies the relative and margin rules to the ranked candidates and
// keeps at most topK. The first candidate always stays.
func cutOff(ranked []skill.Candidate, topK int, scale float64, cfg AbstainConfig) []skill.Candidate {
	if len(ranked) == 0 {
		return nil
	}
	best := ranked[0].Fused
	out := []skill.Candidate{ranked[0]}
	for _, c := range ranked[1:] {
		if len(out) == topK {
			break
		}
		if cfg.Relative > 0 && best > 0 && c.Fused < cfg.Relative*best {
			break
		}
		if cfg.Margin > 0 && scale > 0 && (best-c.Fused)/scale > cfg.Margin {
			break
		}
		out = append(out, c)
	}
	return out
}
