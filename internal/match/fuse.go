package match

import (
	"math"
	"slices"
	"sort"

	"github.com/mcpsag/router/internal/skill"
)

// fuse sets each candidate's fused score and returns the scale of fused
// scores (the best score a candidate could get), in which boosts and the
// margin rule are measured. coverage is the share of the task's terms
// that the index holds (queryStats.coverage); the adaptive rule reads it.
func (ix *Index) fuse(mode skill.MatchMode, rule skill.Fusion, pool int, cands []*candidate, denseList, bm25List []entry, coverage float64) float64 {
	fc := ix.cfg.Fusion
	switch {
	case mode == skill.ModeKeyword:
		scale := 1.0
		if len(bm25List) > 0 && bm25List[0].score > 0 {
			scale = float64(bm25List[0].score)
		}
		for _, c := range cands {
			c.fused = c.bm25 + c.boost*scale
		}
		return scale
	case mode == skill.ModeDense || rule == skill.FusionTiebreak:
		for _, c := range cands {
			c.fused = c.cos + c.boost
		}
		return 1
	case rule == skill.FusionRRF:
		k, w := fc.RRFK, fc.RRFDenseWeight
		scale := 2 / (k + 1)
		for _, c := range cands {
			var f float64
			if c.drank > 0 {
				f += 2 * w / (k + float64(c.drank))
			}
			if c.brank > 0 {
				f += 2 * (1 - w) / (k + float64(c.brank))
			}
			c.fused = f + c.boost*scale
		}
		return scale
	default: // convex and adaptive
		w := fc.ConvexWeight
		if rule == skill.FusionAdaptive {
			w = adaptiveShare(fc.AdaptiveWeight, coverage)
		}
		dn := minMax(denseList, pool, false)
		bn := minMax(bm25List, pool, true)
		if fc.Normalize == NormalizeZScore {
			dn = zScore(denseList, pool)
			bn = zScore(bm25List, pool)
		}
		for _, c := range cands {
			var f float64
			if c.hasCos {
				f += w * dn(c.cos)
			}
			f += (1 - w) * bn(c.bm25)
			c.fused = f + c.boost
		}
		return 1
	}
}

// adaptiveShare is the adaptive rule's dense share: weight for a task none of
// whose terms the index holds, falling linearly to 0 for a task whose terms
// all occur in some indexed field. Keyword evidence is then weak exactly
// where the dense ranking has to stand in for it.
func adaptiveShare(weight, coverage float64) float64 {
	return weight * (1 - math.Max(0, math.Min(1, coverage)))
}

// minMax returns a function that maps a score to [0, 1] between the worst
// and the best score of the list. A BM25 list that is shorter than the pool
// holds every matching skill, so its floor is 0 (no match).
func minMax(list []entry, pool int, zeroFloor bool) func(float64) float64 {
	if len(list) == 0 {
		return func(float64) float64 { return 0 }
	}
	hi := float64(list[0].score)
	lo := float64(list[len(list)-1].score)
	if zeroFloor && len(list) < pool {
		lo = 0
	}
	if hi <= lo {
		return func(v float64) float64 {
			if v >= hi {
				return 1
			}
			return 0
		}
	}
	return func(v float64) float64 {
		return math.Max(0, math.Min(1, (v-lo)/(hi-lo)))
	}
}

// zScore returns a function that standardises a score against the list,
// padded with zeros up to the pool size (skills missing from a short BM25
// list scored 0).
func zScore(list []entry, pool int) func(float64) float64 {
	n := max(pool, len(list))
	var sum, sq float64
	for _, e := range list {
		sum += float64(e.score)
	}
	mean := sum / float64(n)
	for _, e := range list {
		d := float64(e.score) - mean
		sq += d * d
	}
	sq += float64(n-len(list)) * mean * mean
	sd := math.Sqrt(sq / float64(n))
	if sd == 0 {
		return func(float64) float64 { return 0 }
	}
	return func(v float64) float64 { return (v - mean) / sd }
}

// sortCandidates orders candidates by fused score. Under the tiebreak rule,
// runs of candidates whose cosines differ by less than the epsilon are
// ordered by BM25 instead. Remaining ties go by BM25, cosine, name, then
// catalog order.
func (ix *Index) sortCandidates(mode skill.MatchMode, rule skill.Fusion, cands []*candidate) {
	less := func(a, b *candidate) bool {
		if a.fused != b.fused {
			return a.fused > b.fused
		}
		if a.bm25 != b.bm25 {
			return a.bm25 > b.bm25
		}
		if a.cos != b.cos {
			return a.cos > b.cos
		}
		if na, nb := ix.docs[a.doc].Name, ix.docs[b.doc].Name; na != nb {
			return na < nb
		}
		return ix.ord[a.doc] < ix.ord[b.doc]
	}
	slices.SortFunc(cands, func(a, b *candidate) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	if mode != skill.ModeHybrid || rule != skill.FusionTiebreak {
		return
	}
	eps := ix.cfg.Fusion.TiebreakEpsilon
	for i := 0; i < len(cands); {
		j := i + 1
		for j < len(cands) && cands[j-1].fused-cands[j].fused < eps {
			j++
		}
		group := cands[i:j]
		sort.SliceStable(group, func(a, b int) bool {
			if group[a].bm25 != group[b].bm25 {
				return group[a].bm25 > group[b].bm25
			}
			return less(group[a], group[b])
		})
		i = j
	}
}
