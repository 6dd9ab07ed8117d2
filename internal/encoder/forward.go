package encoder

// scratch holds the work buffers of one forward pass. The tokens of all
// sequences are stacked, so that the dense layers run once over the batch
// with no padding; attention runs per sequence. Every buffer that is the A
// of a product has mr-1 rows more than the tokens, which the kernels read.
type scratch struct {
	offsets []int         // sequence i holds tokens [offsets[i], offsets[i+1])
	x       []float32     // [tokens, Hidden]: the layer input, then its output
	qkv     []float32     // [tokens, 3·Hidden]
	ctx     []float32     // [tokens, Hidden]: attention's output
	attn    []float32     // [tokens, Hidden]: after attention and its norm
	inter   []float32     // [tokens, Intermediate]
	tiles   [][]float32   // one per worker: mr·panelWidth values
	blocks  [][]float32   // one per worker: a dequantised block of a panel
	heads   []headScratch // one per worker
}

// grow returns s with room for n values.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// forward runs the encoder over seqs, which check accepted, and returns
// the scratch holding the result in x; the caller puts it back in the
// pool.
func (m *Model) forward(seqs []Sequence, workers int) *scratch {
	workers = max(1, workers)
	c := m.cfg
	s, _ := m.scratch.Get().(*scratch)
	if s == nil {
		s = &scratch{}
	}
	s.offsets = append(s.offsets[:0], 0)
	longest := 0
	for _, q := range seqs {
		s.offsets = append(s.offsets, s.offsets[len(s.offsets)-1]+len(q.IDs))
		longest = max(longest, len(q.IDs))
	}
	tokens := s.offsets[len(seqs)]
	h, rows := c.Hidden, tokens+mr-1
	s.x = grow(s.x, rows*h)
	s.qkv = grow(s.qkv, rows*3*h)
	s.ctx = grow(s.ctx, rows*h)
	s.attn = grow(s.attn, rows*h)
	s.inter = grow(s.inter, rows*c.Intermediate)
	for len(s.tiles) < workers {
		s.tiles = append(s.tiles, make([]float32, mr*panelWidth))
		s.blocks = append(s.blocks, make([]float32, kBlock*panelWidth))
	}
	for len(s.heads) < workers {
		s.heads = append(s.heads, headScratch{})
	}
	for w := range workers {
		s.heads[w].grow(longest, c.HeadDim())
	}

	m.embed(s, seqs, workers)
	for i := range m.layers {
		m.layer(&m.layers[i], s, seqs, workers)
	}
	return s
}

// embed writes the normalised sum of the word, position and token type
// embeddings of every token to s.x.
func (m *Model) embed(s *scratch, seqs []Sequence, workers int) {
	h := m.cfg.Hidden
	for i, q := range seqs {
		base := s.offsets[i]
		for t, id := range q.IDs {
			typ := 0
			if q.TypeIDs != nil {
				typ = q.TypeIDs[t]
			}
			// As the graph adds them: the word and position rows, then the
			// token type row.
			row := s.x[(base+t)*h : (base+t+1)*h]
			clear(row)
			m.word.add(row, id)
			m.pos.add(row, t)
			m.types.add(row, typ)
		}
	}
	m.layerNorm(s.x, m.embNorm, s.offsets[len(seqs)], workers)
}

// layer runs one transformer layer over s.x, leaving its output there.
func (m *Model) layer(l *layer, s *scratch, seqs []Sequence, workers int) {
	tokens := s.offsets[len(seqs)]
	// Query, key and value in one product.
	m.dense(s, &l.qkv, s.x, tokens, s.qkv, nil, workers, false)
	m.attention(s, seqs, workers)
	// The attention's output projection, plus the residual, normalised.
	m.dense(s, &l.attnOut, s.ctx, tokens, s.attn, s.x, workers, false)
	m.layerNorm(s.attn, l.attnNorm, tokens, workers)
	// The feed-forward block, plus the residual, normalised.
	m.dense(s, &l.inter, s.attn, tokens, s.inter, nil, workers, true)
	m.dense(s, &l.out, s.inter, tokens, s.x, s.attn, workers, false)
	m.layerNorm(s.x, l.outNorm, tokens, workers)
}

// dense writes in·Wᵀ + b (+ residual when not nil) to out, [tokens, l.n],
// then GELU over it when gelu is set. The output's panels are shared out
// among the workers.
func (m *Model) dense(s *scratch, l *packedLinear, in []float32, tokens int, out, residual []float32, workers int, gelu bool) {
	k, n := l.k, l.n
	parallel(workers, panels(n), func(w, p0, p1 int) {
		c0, c1 := p0*panelWidth, min(p1*panelWidth, n)
		for t := range tokens {
			row := out[t*n+c0 : t*n+c1]
			copy(row, l.bias[c0:c1])
			if residual != nil {
				for j, r := range residual[t*n+c0 : t*n+c1] {
					row[j] += r
				}
			}
		}
		b := bPanels{q: l.q, scales: l.scales, buf: s.blocks[w]}
		m.ks.gemm(in, k, tokens, k, &b, n, out, n, p0, p1, s.tiles[w])
		if gelu {
			for t := range tokens {
				m.ks.gelu(out[t*n+c0 : t*n+c1])
			}
		}
	})
}

// layerNorm normalises each of the tokens rows of x in place.
func (m *Model) layerNorm(x []float32, p norm, tokens, workers int) {
	h := m.cfg.Hidden
	parallel(workers, tokens, func(_, lo, hi int) {
		for t := lo; t < hi; t++ {
			m.ks.layerNorm(x[t*h:(t+1)*h], p.scale, p.bias, p.eps)
		}
	})
}
