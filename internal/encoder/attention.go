package encoder

import (
	"math"
	"sync/atomic"
)

// headScratch holds one worker's buffers for the attention of one head.
type headScratch struct {
	scores []float32 // [n, n], and mr-1 rows the kernels read
	bias   []float32 // [n]: the mask's additive bias
	k, v   []float32 // packed: the scaled keys, the values
	tile   []float32
}

// grow makes room for a sequence of n tokens and heads of dh values.
func (hs *headScratch) grow(n, dh int) {
	hs.scores = grow(hs.scores, (n+mr-1)*n)
	hs.bias = grow(hs.bias, n)
	hs.k = grow(hs.k, packedSize(n, dh))
	hs.v = grow(hs.v, packedSize(dh, n))
	hs.tile = grow(hs.tile, mr*panelWidth)
}

// attention writes the attention's output, before its projection, to
// s.ctx: for every sequence and head, softmax(q·kᵀ/√dh + bias)·v, where the
// bias is -10000 for the keys whose mask is 0. The (sequence, head) pairs
// are shared out among the workers as they come free.
func (m *Model) attention(s *scratch, seqs []Sequence, workers int) {
	c := m.cfg
	clear(s.ctx[:s.offsets[len(seqs)]*c.Hidden])
	units := len(seqs) * c.Heads
	var next atomic.Int64
	parallel(workers, workers, func(w, _, _ int) {
		hs := &s.heads[w]
		for u := int(next.Add(1) - 1); u < units; u = int(next.Add(1) - 1) {
			m.head(hs, s, seqs[u/c.Heads], s.offsets[u/c.Heads], u%c.Heads)
		}
	})
}

// head computes one head's attention for the sequence seq whose tokens
// start at base.
func (m *Model) head(hs *headScratch, s *scratch, seq Sequence, base, head int) {
	c := m.cfg
	h, dh, n := c.Hidden, c.HeadDim(), len(seq.IDs)
	ld := 3 * h
	rows := s.qkv[base*ld:]
	packScaled(hs.k, rows[h+head*dh:], n, dh, ld, float32(1/math.Sqrt(float64(dh))))

	scores := hs.scores[:n*n]
	masked := false
	for t := range n {
		hs.bias[t] = 0
		if seq.Mask != nil && seq.Mask[t] == 0 {
			hs.bias[t] = -10000
			masked = true
		}
	}
	if masked {
		for r := range n {
			copy(scores[r*n:(r+1)*n], hs.bias[:n])
		}
	} else {
		clear(scores)
	}
	m.ks.gemm(rows[head*dh:], ld, n, dh, &bPanels{f: hs.k}, n, scores, n, 0, panels(n), hs.tile)
	for r := range n {
		row := scores[r*n : (r+1)*n]
		top := m.ks.max(row)
		sum := m.ks.expSum(row, top)
		m.ks.scale(row, 1/sum)
	}

	packCols(hs.v, rows[2*h+head*dh:], dh, n, ld)
	m.ks.gemm(hs.scores, n, n, n, &bPanels{f: hs.v}, dh, s.ctx[base*h+head*dh:], h, 0, panels(dh), hs.tile)
}
