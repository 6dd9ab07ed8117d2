package match

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/mcpsag/router/internal/skill"
)

// RankDepth is the least number of candidates a Ranking keeps before the
// cut-off rules, so evaluations can score the top 10.
const RankDepth = 10

// Decision rules, as reported in Ranking.Rule.
const (
	RuleThreshold        = "threshold"         // the model's (or the request's) cosine threshold
	RuleKeywordThreshold = "keyword_threshold" // the BM25 threshold of keyword-only matching
	RuleClassifier       = "classifier"        // the calibrated classifier
	RuleExplicit         = "explicit"          // a full-strength trigger phrase or name mention
	RuleNoSkills         = "no_skills"
	RuleNoMatch          = "no_match"
	RuleKeywordless      = "keywordless" // no keyword, trigger or name evidence: the model's cosine threshold
)

// Ranking is the whole evidence behind one match.
type Ranking struct {
	// Result is what Match returns.
	Result skill.MatchResult
	// Ranked are the best visible candidates in fused order before the
	// abstention and cut-off rules: max(TopK, RankDepth) of them at most.
	Ranked []skill.Candidate
	// Features are the abstention features of the task.
	Features Features
	// Probability is the calibrated classifier's output, or -1 when no
	// classifier decided.
	Probability float64
	// Rule names the rule that made the abstention decision.
	Rule string
}

// Match ranks the skills visible says the caller sees (nil: see Visibility)
// for the task and decides whether any fits. Invalid requests get a
// *skill.Error with CodeInvalidArgument and the field at fault; when ctx ends
// it returns ctx.Err(). A failing embedder is not an error: the result is
// keyword-only and Degraded.
func (ix *Index) Match(ctx context.Context, req skill.MatchRequest, visible Visibility) (skill.MatchResult, error) {
	r, err := ix.Rank(ctx, req, visible)
	if err != nil {
		return skill.MatchResult{}, err
	}
	return r.Result, nil
}

// candidate is a skill under consideration, with its evidence.
type candidate struct {
	doc          int32
	cos          float64
	hasCos       bool
	bm25         float64
	drank, brank int
	fused        float64
	boost        float64
	fire         *firing
}

// entry is one document in a ranked list.
type entry struct {
	doc   int32
	score float32
}

type scratch struct {
	acc, cos, tf []float32
	cover        []float32 // idf mass of the task each skill holds
	touched      []int32
}

// Rank is Match with its evidence: the candidates before the cut-off rules,
// the abstention features and the rule that decided. Evaluations use it so
// they measure exactly what Match does.
func (ix *Index) Rank(ctx context.Context, req skill.MatchRequest, visible Visibility) (*Ranking, error) {
	r, err := resolve(req, visible, ix.cfg)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := len(ix.docs)
	sc, _ := ix.scratch.Get().(*scratch)
	if sc == nil || len(sc.acc) != n {
		sc = &scratch{acc: make([]float32, n), cos: make([]float32, n), tf: make([]float32, n), cover: make([]float32, n)}
	}
	defer func() {
		for _, d := range sc.touched {
			sc.acc[d], sc.cover[d] = 0, 0
		}
		sc.touched = sc.touched[:0]
		ix.scratch.Put(sc)
	}()

	res := skill.MatchResult{Generation: ix.generation, Mode: r.mode}
	useDense := false
	if r.mode != skill.ModeKeyword {
		if !ix.DenseAvailable() {
			res.Degraded = true
		} else if q, err := ix.embedder.EmbedQuery(ctx, r.raw); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			res.Degraded = true
		} else if uq, ok := ix.dense.query(q); !ok {
			res.Degraded = true
		} else {
			ix.dense.scores(uq, sc.cos)
			useDense = true
		}
	}
	mode := r.mode
	if !useDense {
		mode = skill.ModeKeyword
	}
	res.Mode = mode
	if mode == skill.ModeHybrid {
		res.Fusion = r.fusion
	}

	var qs queryStats
	sc.touched, qs, err = ix.sparse.score(ctx, r.task, sc.acc, sc.tf, sc.cover, sc.touched)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, skill.Errorf(skill.CodeInternal, "bm25: %v", err)
	}
	var fired map[int32]*firing
	if stem := ix.sparse.analyzers[AnalyzerStem]; stem != nil {
		fired = ix.phrases.fire(terms(stem, r.task), ix.cfg.Triggers)
	}

	// Visibility is asked lazily, only for skills that could rank.
	seen := map[int32]bool{}
	isVisible := func(d int32) bool {
		v, ok := seen[d]
		if !ok {
			v = (r.hidden || !ix.hidden[d]) && r.visible(ix.docs[d])
			seen[d] = v
		}
		return v
	}
	pool := max(ix.cfg.Fusion.Pool, r.topK, RankDepth)
	var denseList, bm25List []entry
	if useDense {
		denseList = isVisibleTop(pool, isVisible, func(k int) []entry { return topDense(sc.cos, ix.dense.has, k) })
	}
	bm25List = isVisibleTop(pool, isVisible, func(k int) []entry { return topSparse(sc.acc, sc.touched, k) })

	// Candidates: both lists and every isVisible skill a phrase fired for.
	byDoc := map[int32]*candidate{}
	get := func(d int32) *candidate {
		c := byDoc[d]
		if c == nil {
			c = &candidate{doc: d, bm25: float64(sc.acc[d])}
			if useDense && ix.dense.has[d] {
				c.cos, c.hasCos = float64(sc.cos[d]), true
			}
			byDoc[d] = c
		}
		return c
	}
	for i, e := range denseList {
		get(e.doc).drank = i + 1
	}
	for i, e := range bm25List {
		get(e.doc).brank = i + 1
	}
	for d, f := range fired {
		if isVisible(d) {
			get(d).fire = f
		}
	}
	cands := make([]*candidate, 0, len(byDoc))
	for _, c := range byDoc {
		if c.fire != nil {
			c.boost = c.fire.boost
		}
		cands = append(cands, c)
	}
	scale := ix.fuse(mode, r.fusion, pool, cands, denseList, bm25List, qs.coverage())
	ix.sortCandidates(mode, r.fusion, cands)

	rk := &Ranking{Probability: -1}
	rk.Features = features(denseList, bm25List, qs)
	ix.catalogFeatures(&rk.Features, sc, bm25List, qs)
	for _, c := range cands {
		rk.Features.Boost = max(rk.Features.Boost, c.boost)
	}
	depth := max(r.topK, RankDepth)
	for i, c := range cands {
		if i == depth {
			break
		}
		rk.Ranked = append(rk.Ranked, ix.explain(c, mode))
	}

	ix.decide(rk, &res, r, mode, cands, denseList, bm25List, isVisible)
	if !res.Abstained {
		res.Candidates = cutOff(rk.Ranked, r.topK, scale, ix.cfg.Abstain)
	}
	rk.Result = res
	return rk, nil
}

// isVisibleTop returns the best k isVisible entries. pick(k') returns the best k'
// entries regardless of visibility; when too many of them are inisVisible it
// is asked again for more.
func isVisibleTop(k int, isVisible func(int32) bool, pick func(int) []entry) []entry {
	want := k
	for {
		es := pick(want)
		out := make([]entry, 0, min(k, len(es)))
		for _, e := range es {
			if isVisible(e.doc) {
				out = append(out, e)
				if len(out) == k {
					return out
				}
			}
		}
		if len(es) < want {
			return out
		}
		want *= 4
	}
}

// topDense returns the k best documents by cosine, best first.
func topDense(cos []float32, has []bool, k int) []entry {
	h := make(minHeap, 0, k)
	for i, s := range cos {
		if !has[i] {
			continue
		}
		h.offer(entry{doc: int32(i), score: s}, k)
	}
	return h.sorted()
}

// topSparse returns the k best touched documents by BM25 score, best first.
func topSparse(acc []float32, touched []int32, k int) []entry {
	h := make(minHeap, 0, min(k, len(touched)))
	for _, d := range touched {
		h.offer(entry{doc: d, score: acc[d]}, k)
	}
	return h.sorted()
}

// minHeap keeps the k best entries seen; its root is the worst of them.
// Equal scores prefer the lower document number, so results are
// deterministic.
type minHeap []entry

func worse(a, b entry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.doc > b.doc
}

func (h *minHeap) offer(e entry, k int) {
	s := *h
	if len(s) < k {
		s = append(s, e)
		for i := len(s) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(s[i], s[p]) {
				break
			}
			s[i], s[p] = s[p], s[i]
			i = p
		}
		*h = s
		return
	}
	if k == 0 || !worse(s[0], e) {
		return
	}
	s[0] = e
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(s) && worse(s[l], s[m]) {
			m = l
		}
		if l+1 < len(s) && worse(s[l+1], s[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
}

func (h minHeap) sorted() []entry {
	out := []entry(h)
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out
}

// explain turns a candidate into its public form with a one-line reason.
func (ix *Index) explain(c *candidate, mode skill.MatchMode) skill.Candidate {
	out := skill.Candidate{
		Skill:        ix.docs[c.doc],
		Cosine:       c.cos,
		BM25:         c.bm25,
		Fused:        c.fused,
		DenseRank:    c.drank,
		BM25Rank:     c.brank,
		TriggerBoost: c.boost,
	}
	var parts []string
	if mode != skill.ModeKeyword {
		if c.drank > 0 {
			parts = append(parts, fmt.Sprintf("dense #%d (cosine %.3f)", c.drank, c.cos))
		} else if c.hasCos {
			parts = append(parts, fmt.Sprintf("cosine %.3f", c.cos))
		}
	}
	if c.brank > 0 {
		parts = append(parts, fmt.Sprintf("bm25 #%d (%.2f)", c.brank, c.bm25))
	} else if mode == skill.ModeKeyword || c.bm25 == 0 {
		parts = append(parts, "no keyword match")
	}
	if f := c.fire; f != nil {
		out.TriggersFired = append([]string(nil), f.triggers...)
		out.NameMentioned = f.name
		for _, t := range f.triggers {
			parts = append(parts, fmt.Sprintf("trigger %q", t))
		}
		if f.name {
			parts = append(parts, "names the skill")
		}
		if c.boost > 0 {
			parts = append(parts, fmt.Sprintf("boost +%.3f", c.boost))
		}
	}
	out.Reason = strings.Join(parts, "; ")
	return out
}
