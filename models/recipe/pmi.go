package main

import (
	"fmt"
	"math"
	"os"
	"slices"
)

// PMI word vectors: positive pointwise mutual information of tokens within a
// window, factorised by a truncated SVD, then "all-but-the-top"
// post-processing (centre, drop the dominant directions). Every token,
// pieces included, gets a distributional vector to start the contrastive
// stage from.
const (
	pmiWindow     = 5
	pmiCDS        = 0.75 // context distribution smoothing exponent
	pmiEigenPower = 0.5  // U Σ^p
	pmiDropTop    = 8    // dominant directions removed
)

// pmiVectors returns unit-length vectors (len(vocab) x dim, row-major) for
// the training texts; tokens never seen get zero rows.
func pmiVectors(c *Corpus, dim int, seed uint64) []float64 {
	v := len(c.Vocab)
	keys := cooccurrences(c)
	fmt.Fprintf(os.Stderr, "pmi: %d co-occurrences\n", len(keys))
	entries, rowSum, colSum := countCooccurrences(keys, v)
	m := ppmi(entries, rowSum, colSum)
	fmt.Fprintf(os.Stderr, "pmi: %d positive entries\n", len(m.Val))
	x := randomizedSVD(m, dim, 16, 2, pmiEigenPower, seed)
	normalizeRows(x, v, dim)
	w := make([]float64, v)
	for i := range w {
		w[i] = math.Sqrt(rowSum[i])
	}
	removeTopComponents(x, v, dim, w, pmiDropTop)
	normalizeRows(x, v, dim)
	return x
}

// cooccurrences returns the co-occurrences of tokens within pmiWindow in
// the training texts as sorted (row<<32 | col) keys: deterministic and far
// lighter than a map.
func cooccurrences(c *Corpus) []uint64 {
	used := make([]bool, len(c.Texts))
	for _, p := range c.Pairs {
		if !p.Val {
			used[p.A], used[p.B] = true, true
		}
	}
	var keys []uint64
	for i, ids := range c.IDs {
		if !used[i] {
			continue
		}
		for a, ta := range ids {
			for b := max(0, a-pmiWindow); b < min(len(ids), a+pmiWindow+1); b++ {
				if b != a {
					keys = append(keys, uint64(ta)<<32|uint64(ids[b]))
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// cooccurrence is how often token c occurs near token r.
type cooccurrence struct {
	r, c int32
	n    float64
}

// countCooccurrences counts the sorted keys of v tokens, with the sums of
// each row and column.
func countCooccurrences(keys []uint64, v int) (entries []cooccurrence, rowSum, colSum []float64) {
	rowSum, colSum = make([]float64, v), make([]float64, v)
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j] == keys[i] {
			j++
		}
		r, cc := int32(keys[i]>>32), int32(keys[i]&0xffffffff)
		n := float64(j - i)
		entries = append(entries, cooccurrence{r, cc, n})
		rowSum[r] += n
		colSum[cc] += n
		i = j
	}
	return entries, rowSum, colSum
}

// ppmi returns the positive PMI of the counts, the columns' distribution
// smoothed by pmiCDS, as a sparse matrix.
func ppmi(entries []cooccurrence, rowSum, colSum []float64) *CSR {
	v := len(rowSum)
	smoothed := make([]float64, v)
	smoothedTotal := 0.0
	for i := range v {
		smoothed[i] = math.Pow(colSum[i], pmiCDS)
		smoothedTotal += smoothed[i]
	}
	m := &CSR{Rows: v, Cols: v, Ptr: make([]int, v+1)}
	for _, e := range entries {
		pmi := math.Log(e.n * smoothedTotal / (rowSum[e.r] * smoothed[e.c]))
		if pmi <= 0 {
			continue
		}
		m.Ptr[e.r+1]++
		m.Col = append(m.Col, e.c)
		m.Val = append(m.Val, float32(pmi))
	}
	for i := range v {
		m.Ptr[i+1] += m.Ptr[i]
	}
	return m
}

func normalizeRows(x []float64, n, d int) {
	for r := range n {
		row := x[r*d : (r+1)*d]
		s := 0.0
		for _, a := range row {
			s += a * a
		}
		if s == 0 {
			continue
		}
		s = 1 / math.Sqrt(s)
		for j := range row {
			row[j] *= s
		}
	}
}
