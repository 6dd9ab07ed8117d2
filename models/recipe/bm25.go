package main

import (
	"math"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
)

// BM25 is the reference keyword scorer of ../shared/eval/bm25_baseline.py:
// k1=1.2, b=0.75, camelCase split, lowercase, [a-z0-9]+ words, a short stop
// list, idf = ln(1 + (N - n + 0.5)/(n + 0.5)).
type BM25 struct {
	k1, b float64
	lens  []float64
	avg   float64
	idf   map[string]float64
	post  map[string][]posting
}

type posting struct {
	doc int
	tf  float64
}

var (
	bm25Camel = regexp.MustCompile(`([a-z])([A-Z])`)
	bm25Word  = regexp.MustCompile(`[a-z0-9]+`)
	bm25Stop  = stopSet("a an the of to in for on and or is are be with by from at as it this that you your me my i we our " +
		"can could would should please do does how what which who will using use")
)

func stopSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func bm25Tokens(s string) []string {
	s = bm25Camel.ReplaceAllString(s, "$1 $2")
	s = strings.ReplaceAll(strings.ToLower(s), "_", " ")
	var out []string
	for _, w := range bm25Word.FindAllString(s, -1) {
		if !bm25Stop[w] {
			out = append(out, w)
		}
	}
	return out
}

func newBM25(docs []string) *BM25 {
	m := &BM25{k1: 1.2, b: 0.75, idf: map[string]float64{}, post: map[string][]posting{}}
	df := map[string]int{}
	for i, d := range docs {
		tf := map[string]int{}
		toks := bm25Tokens(d)
		for _, t := range toks {
			tf[t]++
		}
		m.lens = append(m.lens, float64(len(toks)))
		m.avg += float64(len(toks))
		for _, t := range sortedKeys(tf) {
			df[t]++
			m.post[t] = append(m.post[t], posting{i, float64(tf[t])})
		}
	}
	m.avg /= float64(len(docs))
	if m.avg == 0 {
		m.avg = 1
	}
	n := float64(len(docs))
	for t, c := range df {
		m.idf[t] = math.Log(1 + (n-float64(c)+0.5)/(float64(c)+0.5))
	}
	return m
}

// Scores returns a score per document (0 where no query word occurs).
func (m *BM25) Scores(q string) []float64 {
	sc := make([]float64, len(m.lens))
	seen := map[string]bool{}
	for _, t := range bm25Tokens(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		idf, ok := m.idf[t]
		if !ok {
			continue
		}
		for _, p := range m.post[t] {
			sc[p.doc] += idf * p.tf * (m.k1 + 1) / (p.tf + m.k1*(1-m.b+m.b*m.lens[p.doc]/m.avg))
		}
	}
	return sc
}

// rankScores returns the indices of the top k scores, best first, ties by
// index; with positiveOnly, documents scoring 0 are left out (BM25 ranks
// only documents that share a word with the query).
func rankScores(sc []float64, k int, positiveOnly bool) []int {
	idx := make([]int, 0, len(sc))
	for i, s := range sc {
		if !positiveOnly || s > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return sc[idx[a]] > sc[idx[b]] })
	if len(idx) > k {
		idx = idx[:k]
	}
	return idx
}

// minMax rescales scores to [0,1] (all zeros when they are all equal).
func minMax(sc []float64) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sc {
		lo, hi = min(lo, s), max(hi, s)
	}
	out := make([]float64, len(sc))
	if hi > lo {
		for i, s := range sc {
			out[i] = (s - lo) / (hi - lo)
		}
	}
	return out
}

// hybridScores is the convex mix w*dense + (1-w)*bm25 of min-max normalised
// scores.
func hybridScores(dense, bm []float64, w float64) []float64 {
	d, b := minMax(dense), minMax(bm)
	out := make([]float64, len(d))
	for i := range d {
		out[i] = w*d[i] + (1-w)*b[i]
	}
	return out
}

// Metrics accumulates ranking metrics over queries.
type Metrics struct {
	N                          int
	NDCG10, Recall5, Hit1, MRR float64
	PerQuery                   []float64 // NDCG@10 of each query, for paired comparisons
}

func (m *Metrics) Add(ranked []int, relevant map[int]bool) {
	m.N++
	dcg, idcg := 0.0, 0.0
	found5 := 0
	rr := 0.0
	for i, d := range ranked {
		if i >= 10 {
			break
		}
		if relevant[d] {
			dcg += 1 / math.Log2(float64(i+2))
			if i < 5 {
				found5++
			}
			if rr == 0 {
				rr = 1 / float64(i+1)
			}
		}
	}
	for i := 0; i < min(len(relevant), 10); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	nd := 0.0
	if idcg > 0 {
		nd = dcg / idcg
	}
	m.NDCG10 += nd
	m.PerQuery = append(m.PerQuery, nd)
	m.Recall5 += float64(found5) / float64(len(relevant))
	if len(ranked) > 0 && relevant[ranked[0]] {
		m.Hit1++
	}
	m.MRR += rr
}

// Percent returns NDCG@10, Recall@5, Hit@1 and MRR@10 in percent.
func (m Metrics) Percent() (ndcg, r5, hit1, mrr float64) {
	if m.N == 0 {
		return
	}
	n := float64(m.N) / 100
	return m.NDCG10 / n, m.Recall5 / n, m.Hit1 / n, m.MRR / n
}

// pairedBootstrap returns the mean of a-b (per-query NDCG@10, in points)
// and a 95% interval from resampling queries with a fixed seed.
func pairedBootstrap(a, b []float64, resamples int) (mean, lo, hi float64) {
	n := len(a)
	diff := make([]float64, n)
	for i := range a {
		diff[i] = 100 * (a[i] - b[i])
		mean += diff[i] / float64(n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	means := make([]float64, resamples)
	for r := range means {
		s := 0.0
		for range n {
			s += diff[rng.IntN(n)]
		}
		means[r] = s / float64(n)
	}
	sort.Float64s(means)
	return mean, means[resamples*25/1000], means[resamples*975/1000]
}
