package match

import (
	"context"
	"fmt"
	"slices"
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

// entry is one document in a ranked list. ord is the document's place in
// catalog order; equal scores rank by it, so results do not depend on where
// an update put a document.
type entry struct {
	doc   int32
	ord   int32
	score float32
}

// scratch is one Rank call's working memory, reused through the Index's
// pool. Arrays indexed by document slot are all zero between calls.
type scratch struct {
	acc, cos   []float32
	cover      []float32 // the task's idf mass each document holds (sparse.score)
	vis        []uint8   // 0 not asked yet, 1 visible, 2 not visible
	visAsked   []int32
	cand       []int32 // document -> candidate index + 1
	touched    []int32
	everySlot  bool // any slot of acc and cover may be nonzero, not only the touched
	heap       []entry
	heap2      []entry
	heap3      []entry
	q16        []int16
	q8         []uint8
	dots       []int32
	q2         []float32
	rescore    []int32
	bins       []uint16  // dense.top: each slot's lower-bound bin
	part       []float32 // denseQuery: one part's cosines
	partBest   []float32 // denseQuery: the best part's cosines
	candidates []candidate
	pairs      []qpair
	// The maps of a task's analysis, kept empty between calls.
	termAt    map[int]int        // analyzeTask: a word's position -> its term
	termSeen  map[queryTerm]bool // analyzeTask: the terms kept
	pairsSeen map[[2]string]bool // taskPairs: the (analyzer, form) pairs looked up
}

func newScratch(n int) *scratch {
	return &scratch{acc: make([]float32, n), cover: make([]float32, n), cos: make([]float32, n), vis: make([]uint8, n), cand: make([]int32, n),
		termAt: map[int]int{}, termSeen: map[queryTerm]bool{}, pairsSeen: map[[2]string]bool{}}
}

// reset zeroes what a call left in the slot arrays.
func (sc *scratch) reset() {
	if sc.everySlot {
		clear(sc.acc)
		clear(sc.cover)
		sc.everySlot = false
	}
	for _, d := range sc.touched {
		sc.acc[d], sc.cover[d] = 0, 0
	}
	sc.touched = sc.touched[:0]
	for _, d := range sc.visAsked {
		sc.vis[d] = 0
	}
	sc.visAsked = sc.visAsked[:0]
	for i := range sc.candidates {
		sc.cand[sc.candidates[i].doc] = 0
		sc.candidates[i] = candidate{}
	}
	sc.candidates = sc.candidates[:0]
	clear(sc.termAt)
	clear(sc.termSeen)
	clear(sc.pairsSeen)
}

// Rank is Match with its evidence: the candidates before the cut-off rules,
// the abstention features and the rule that decided. Evaluations use it so
// they measure exactly what Match does.
func (ix *Index) Rank(ctx context.Context, req skill.MatchRequest, visible Visibility) (*Ranking, error) {
	return ix.rank(ctx, req, visible, nil)
}

// rank is Rank, asking view (when not nil) instead of visible whether the
// caller sees a skill.
func (ix *Index) rank(ctx context.Context, req skill.MatchRequest, visible Visibility, view *View) (*Ranking, error) {
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
		sc = newScratch(n)
	}
	defer func() {
		sc.reset()
		ix.scratch.Put(sc)
	}()
	isVisible := ix.visibility(sc, r.hidden, r.visible, view)
	pool := max(ix.cfg.Fusion.Pool, r.topK, RankDepth)

	res := skill.MatchResult{Generation: ix.generation, GenerationID: ix.generationID, Mode: r.mode}
	dq, err := ix.queryVectors(ctx, r, &res)
	if err != nil {
		return nil, err
	}
	useDense := dq.whole != nil
	mode := r.mode
	if !useDense {
		mode = skill.ModeKeyword
	}
	res.Mode = mode
	if mode == skill.ModeHybrid {
		res.Fusion = r.fusion
	}

	var denseList []entry
	if useDense {
		denseList = dq.top(ix.dense, pool, n, isVisible, ix.ord, sc)
	}
	bm25List, fired, qs, err := ix.keywords(ctx, r.task, sc, pool, isVisible)
	if err != nil {
		return nil, err
	}

	cands := ix.candidates(sc, dq, denseList, bm25List, fired, isVisible)
	scale := ix.fuse(mode, r.fusion, pool, cands, denseList, bm25List, qs.coverage())
	ix.sortCandidates(mode, r.fusion, cands)
	rk := ix.ranking(sc, cands, denseList, bm25List, qs, mode, max(r.topK, RankDepth))
	ix.decide(rk, &res, r, mode, cands, denseList, bm25List, isVisible)
	if !res.Abstained {
		res.Candidates = cutOff(rk.Ranked, r.topK, scale, ix.cfg.Abstain)
	}
	rk.Result = res
	return rk, nil
}

// keywords analyzes the task and returns the visible top pool by BM25, the
// triggers it fires and how it met the vocabulary.
func (ix *Index) keywords(ctx context.Context, text string, sc *scratch, pool int, isVisible func(int32) bool) ([]entry, map[int32]*firing, queryStats, error) {
	task := ix.sparse.analyzeTask(text, sc)
	var fired map[int32]*firing
	if len(task.stem) > 0 {
		fired = ix.phrases.fire(task.stem, ix.cfg.Triggers)
	}
	sres, err := ix.sparse.score(ctx, task, sc)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, queryStats{}, cerr
		}
		return nil, nil, queryStats{}, skill.Errorf(skill.CodeInternal, "bm25: %v", err)
	}
	bm25List := visibleTop(pool, isVisible, func(k int) []entry { return topSparse(sc, ix.ord, k) })
	return bm25List, fired, sres.stats, nil
}

// visibility returns whether the caller sees the skill in slot d, asked
// lazily (only for skills that could rank) and remembered in sc: hidden
// skills only with hidden, then view's answer (when view is not nil) or
// visible's.
func (ix *Index) visibility(sc *scratch, hidden bool, visible Visibility, view *View) func(int32) bool {
	return func(d int32) bool {
		switch sc.vis[d] {
		case 1:
			return true
		case 2:
			return false
		}
		s := ix.docs[d]
		v := s != nil && (hidden || !ix.hidden[d])
		switch {
		case v && view != nil:
			v = view.allows(d, s)
		case v:
			v = visible(s)
		}
		sc.vis[d] = 2
		if v {
			sc.vis[d] = 1
		}
		sc.visAsked = append(sc.visAsked, d)
		return v
	}
}

// queryVectors returns the unit vectors of the task and of its parts (see
// PartsConfig), with no vector when the request does not use embeddings or
// they are unavailable (res is then Degraded). It fails only when ctx
// ended.
func (ix *Index) queryVectors(ctx context.Context, r resolved, res *skill.MatchResult) (denseQuery, error) {
	if r.mode == skill.ModeKeyword {
		return denseQuery{}, nil
	}
	if !ix.DenseAvailable() {
		res.Degraded = true
		return denseQuery{}, nil
	}
	texts := append([]string{r.raw}, taskParts(r.raw, ix.cfg.Parts.Max)...)
	vecs, err := ix.embedder.EmbedQueries(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embedded %d of %d texts", len(vecs), len(texts))
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return denseQuery{}, cerr
		}
		res.Degraded = true
		return denseQuery{}, nil
	}
	q := denseQuery{weight: float32(ix.cfg.Parts.Weight)}
	for i, v := range vecs {
		u, ok := ix.dense.query(v)
		switch {
		case !ok && i == 0:
			res.Degraded = true
			return denseQuery{}, nil
		case !ok:
			continue // a part the model gave no usable vector adds nothing
		case i == 0:
			q.whole = u
		default:
			q.parts = append(q.parts, u)
		}
	}
	return q, nil
}

// candidate returns the candidate of slot d, added the first time.
func (sc *scratch) candidate(d int32) *candidate {
	if i := sc.cand[d]; i > 0 {
		return &sc.candidates[i-1]
	}
	c := candidate{doc: d, bm25: float64(sc.acc[d])}
	sc.candidates = append(sc.candidates, c)
	sc.cand[d] = int32(len(sc.candidates))
	return &sc.candidates[len(sc.candidates)-1]
}

// candidates gathers the skills of both lists and every visible skill a
// phrase fired for, with their ranks, cosines (those outside the dense
// list scored exactly, eight rows at a time, when uq is set) and boosts.
func (ix *Index) candidates(sc *scratch, dq denseQuery, denseList, bm25List []entry, fired map[int32]*firing, isVisible func(int32) bool) []*candidate {
	for i, e := range denseList {
		c := sc.candidate(e.doc)
		c.drank = i + 1
		c.cos, c.hasCos = float64(e.score), true
	}
	for i, e := range bm25List {
		sc.candidate(e.doc).brank = i + 1
	}
	for d, f := range fired {
		if isVisible(d) {
			sc.candidate(d).fire = f
		}
	}
	if dq.whole != nil {
		need := sc.rescore[:0]
		for i := range sc.candidates {
			if c := &sc.candidates[i]; !c.hasCos && ix.dense.has(c.doc) {
				need = append(need, c.doc)
			}
		}
		sc.rescore = need
		dq.exact(ix.dense, need, sc, func(d int32, s float32) {
			c := &sc.candidates[sc.cand[d]-1]
			c.cos, c.hasCos = float64(s), true
		})
	}
	cands := make([]*candidate, len(sc.candidates))
	for i := range sc.candidates {
		c := &sc.candidates[i]
		if c.fire != nil {
			c.boost = c.fire.boost
		}
		cands[i] = c
	}
	return cands
}

// ranking is the evidence of a match: the abstention features and the
// first depth candidates, explained.
func (ix *Index) ranking(sc *scratch, cands []*candidate, denseList, bm25List []entry, qs queryStats, mode skill.MatchMode, depth int) *Ranking {
	rk := &Ranking{Probability: -1}
	rk.Features = features(denseList, bm25List, qs)
	ix.catalogFeatures(&rk.Features, sc, bm25List, qs)
	for _, c := range cands {
		rk.Features.Boost = max(rk.Features.Boost, c.boost)
	}
	for i, c := range cands {
		if i == depth {
			break
		}
		rk.Ranked = append(rk.Ranked, ix.explain(c, mode))
	}
	return rk
}

// visibleTop returns the best k visible entries. pick(k') returns the best
// k' entries regardless of visibility; when too many of them are not visible
// it is asked again for more.
func visibleTop(k int, isVisible func(int32) bool, pick func(int) []entry) []entry {
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

// topSparse returns the k best documents by BM25 score, best first: of the
// touched ones, or of every slot with a score when sc.everySlot is set.
func topSparse(sc *scratch, ord []int32, k int) []entry {
	if k <= 0 {
		return nil
	}
	h := newHeap(sc.heap3[:0], k)
	// Until the heap is full, every scored document goes in; after, only
	// one scoring at least the heap's worst (an equal score may still rank
	// before it by ord). That worst is kept in a local: most documents fail
	// one test against it, a branch the processor predicts, where a test
	// for a score first would be mispredicted about once in three slots.
	if sc.everySlot {
		acc := sc.acc
		d := 0
		for ; d < len(acc) && !h.full(); d++ {
			if s := acc[d]; s != 0 {
				h.offer(entry{doc: int32(d), ord: ord[d], score: s})
			}
		}
		if d < len(acc) {
			worst := h.s[0].score
			for ; d < len(acc); d++ {
				if s := acc[d]; s >= worst && s != 0 {
					h.offer(entry{doc: int32(d), ord: ord[d], score: s})
					worst = h.s[0].score
				}
			}
		}
	} else {
		touched := sc.touched
		i := 0
		for ; i < len(touched) && !h.full(); i++ {
			d := touched[i]
			h.offer(entry{doc: d, ord: ord[d], score: sc.acc[d]})
		}
		if i < len(touched) {
			worst := h.s[0].score
			for _, d := range touched[i:] {
				if s := sc.acc[d]; s >= worst {
					h.offer(entry{doc: d, ord: ord[d], score: s})
					worst = h.s[0].score
				}
			}
		}
	}
	sc.heap3 = h.s
	return h.sorted()
}

// heap keeps the k best entries offered; its root is the worst of them.
// Equal scores prefer the lower ord, so results are deterministic.
type heap struct {
	s []entry
	k int
}

func newHeap(buf []entry, k int) heap { return heap{s: buf[:0], k: k} }

func (h *heap) full() bool { return len(h.s) >= h.k }

func worse(a, b entry) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.ord > b.ord
}

func (h *heap) offer(e entry) {
	s := h.s
	if len(s) < h.k {
		s = append(s, e)
		for i := len(s) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(s[i], s[p]) {
				break
			}
			s[i], s[p] = s[p], s[i]
			i = p
		}
		h.s = s
		return
	}
	if h.k == 0 || !worse(s[0], e) {
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

// sorted sorts the entries best first, in place, and returns them.
func (h heap) sorted() []entry {
	out := h.s
	slices.SortFunc(out, func(a, b entry) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
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
