package encoder

import (
	"errors"
	"fmt"
	"sync"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// ErrInput means a sequence given to the model is not one it can run: empty
// or longer than its positions, lengths that differ, an id, token type or
// mask value out of range.
var ErrInput = errors.New("invalid encoder input")

// Sequence is one text's tokens. TypeIDs and Mask are optional (nil means
// all 0 and all 1); when given, they are as long as IDs. Positions whose
// mask is 0 take no part in the attention of the others, as in BERT, but
// still get a hidden state.
type Sequence struct {
	IDs, TypeIDs, Mask []int
}

// Pooling selects how Pool turns a sequence's hidden states into one
// vector.
type Pooling int

const (
	// Mean averages the hidden states of the positions whose mask is 1.
	Mean Pooling = iota
	// CLS takes the hidden state of the first position.
	CLS
)

// Model is an encoder ready to run. Its matrices and embedding tables are
// held as the encoder graph stores them, int8 rows with one scale each
// (about 23 MB for MiniLM), the matrices packed for the kernels of the CPU
// it runs on; each value is used as the graph uses it, float32(q)·scale. It
// is safe for concurrent use; each call takes its work buffers from a pool.
type Model struct {
	cfg     onnxgraph.EncoderConfig
	ks      kernels
	word    table // [VocabSize, Hidden]
	pos     table // [MaxPositions, Hidden]
	types   table // [TypeVocab, Hidden]
	embNorm norm
	layers  []layer
	scratch sync.Pool // of *scratch
}

// layer is one transformer layer with its matrices packed.
type layer struct {
	qkv      packedLinear // query, key and value side by side: 3·Hidden outputs
	attnOut  packedLinear
	attnNorm norm
	inter    packedLinear
	out      packedLinear
	outNorm  norm
}

// table is an embedding table: int8 rows of cols values, one scale each.
type table struct {
	q      []int8
	scales []float32
	cols   int
}

func newTable(v []float32, rows, cols int) table {
	q, scales := onnxgraph.QuantizeRows(v, rows, cols)
	return table{q: q, scales: scales, cols: cols}
}

// add adds row id, dequantised, to dst.
func (t *table) add(dst []float32, id int) {
	s := t.scales[id]
	for j, x := range t.q[id*t.cols : (id+1)*t.cols] {
		dst[j] += float32(x) * s
	}
}

// packedLinear is a dense layer whose weight is packed for gemm: int8
// panels (packRows' layout) and one scale per output, padded to whole
// panels with zeros.
type packedLinear struct {
	n, k   int // outputs, inputs
	q      []int8
	scales []float32
	bias   []float32
}

type norm struct {
	scale, bias []float32
	eps         float32
}

// New returns the model for e, quantizing its matrices and tables as the
// encoder graph does (onnxgraph.QuantizeRows): the weights of an encoder
// that ReadEncoder returned come back as the graph stores them, scales to
// within a unit in the last place. It keeps the layer norms and biases of
// e, and picks the fastest kernels the CPU runs.
func New(e *onnxgraph.Encoder) (*Model, error) {
	return newWithKernels(e, bestKernels())
}

func newWithKernels(e *onnxgraph.Encoder, ks kernels) (*Model, error) {
	c := e.Config
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h := c.Hidden
	if len(e.Layers) != c.Layers || len(e.WordEmbeddings) != c.VocabSize*h ||
		len(e.PositionEmbeddings) != c.MaxPositions*h || len(e.TypeEmbeddings) != c.TypeVocab*h {
		return nil, fmt.Errorf("encoder: weights do not match the config %+v", c)
	}
	m := &Model{
		cfg: c, ks: ks,
		word:  newTable(e.WordEmbeddings, c.VocabSize, h),
		pos:   newTable(e.PositionEmbeddings, c.MaxPositions, h),
		types: newTable(e.TypeEmbeddings, c.TypeVocab, h),
	}
	var err error
	if m.embNorm, err = newNorm(e.EmbeddingNorm, c); err != nil {
		return nil, fmt.Errorf("encoder: embeddings: %w", err)
	}
	for i, l := range e.Layers {
		pl, err := packLayer(l, c)
		if err != nil {
			return nil, fmt.Errorf("encoder: layer %d: %w", i, err)
		}
		m.layers = append(m.layers, pl)
	}
	return m, nil
}

func newNorm(n onnxgraph.LayerNorm, c onnxgraph.EncoderConfig) (norm, error) {
	if len(n.Scale) != c.Hidden || len(n.Bias) != c.Hidden {
		return norm{}, fmt.Errorf("layer norm of %d and %d values, want %d", len(n.Scale), len(n.Bias), c.Hidden)
	}
	return norm{scale: n.Scale, bias: n.Bias, eps: c.LayerNormEps}, nil
}

// packLinears packs the dense layers ls, all of k inputs, side by side as
// one layer whose outputs are theirs in order.
func packLinears(k int, ls ...onnxgraph.Linear) (packedLinear, error) {
	var w, bias []float32
	for _, l := range ls {
		if len(l.Bias) == 0 || len(l.Weight) != len(l.Bias)*k {
			return packedLinear{}, fmt.Errorf("dense layer of %d weights and %d biases, want %d inputs each", len(l.Weight), len(l.Bias), k)
		}
		w = append(w, l.Weight...)
		bias = append(bias, l.Bias...)
	}
	n := len(bias)
	q, scales := onnxgraph.QuantizeRows(w, n, k)
	p := packedLinear{n: n, k: k, q: make([]int8, packedSize(n, k)), scales: make([]float32, panels(n)*panelWidth), bias: bias}
	packRows(p.q, q, n, k, k)
	copy(p.scales, scales)
	return p, nil
}

func packLayer(l onnxgraph.EncoderLayer, c onnxgraph.EncoderConfig) (layer, error) {
	var pl layer
	var err error
	h := c.Hidden
	steps := []struct {
		dst *packedLinear
		k   int
		ls  []onnxgraph.Linear
	}{
		{&pl.qkv, h, []onnxgraph.Linear{l.Query, l.Key, l.Value}},
		{&pl.attnOut, h, []onnxgraph.Linear{l.AttentionOutput}},
		{&pl.inter, h, []onnxgraph.Linear{l.Intermediate}},
		{&pl.out, c.Intermediate, []onnxgraph.Linear{l.Output}},
	}
	for _, s := range steps {
		if *s.dst, err = packLinears(s.k, s.ls...); err != nil {
			return pl, err
		}
	}
	if pl.qkv.n != 3*h || pl.attnOut.n != h || pl.inter.n != c.Intermediate || pl.out.n != h {
		return pl, fmt.Errorf("dense layers of %d, %d, %d and %d outputs do not match the config", pl.qkv.n, pl.attnOut.n, pl.inter.n, pl.out.n)
	}
	if pl.attnNorm, err = newNorm(l.AttentionNorm, c); err != nil {
		return pl, err
	}
	pl.outNorm, err = newNorm(l.OutputNorm, c)
	return pl, err
}

// Config returns the encoder's shape.
func (m *Model) Config() onnxgraph.EncoderConfig { return m.cfg }

// Kernels names the kernels the model runs: "avx512", "avx2" or "go".
func (m *Model) Kernels() string { return m.ks.name }

// passTokens bounds the tokens of one forward pass: a larger batch runs in
// several passes, which keeps the work buffers small (about 15 MB for
// MiniLM) and changes no result, while a pass of this size keeps the
// matrix kernels busy.
const passTokens = 2048

// LastHiddenState returns each sequence's hidden states, len(IDs) rows of
// Hidden values, computed on up to workers goroutines. The result does not
// depend on workers, nor on the other sequences of the batch.
func (m *Model) LastHiddenState(seqs []Sequence, workers int) ([][]float32, error) {
	out := make([][]float32, len(seqs))
	err := m.passes(seqs, workers, func(i int, _ Sequence, x []float32) {
		out[i] = append([]float32(nil), x...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Pool returns one vector per sequence, pooled from its hidden states as
// pooling says (the mean: their sum in position order divided by their
// count), computed on up to workers goroutines. The vectors are not
// normalised.
func (m *Model) Pool(seqs []Sequence, pooling Pooling, workers int) ([][]float32, error) {
	if pooling != Mean && pooling != CLS {
		return nil, fmt.Errorf("encoder: unknown pooling %d", pooling)
	}
	h := m.cfg.Hidden
	out := make([][]float32, len(seqs))
	err := m.passes(seqs, workers, func(i int, seq Sequence, x []float32) {
		v := make([]float32, h)
		out[i] = v
		if pooling == CLS {
			copy(v, x[:h])
			return
		}
		var n float32
		for t := range seq.IDs {
			if seq.Mask != nil && seq.Mask[t] == 0 {
				continue
			}
			for j, y := range x[t*h : (t+1)*h] {
				v[j] += y
			}
			n++
		}
		for j := range v {
			v[j] /= max(n, 1)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// passes checks seqs, runs them in forward passes of at most passTokens
// tokens (or one sequence), and calls each with every sequence's index
// and hidden states, which it must not keep.
func (m *Model) passes(seqs []Sequence, workers int, each func(i int, seq Sequence, x []float32)) error {
	if err := m.check(seqs); err != nil {
		return err
	}
	h := m.cfg.Hidden
	for lo := 0; lo < len(seqs); {
		hi, tokens := lo, 0
		for hi < len(seqs) && (hi == lo || tokens+len(seqs[hi].IDs) <= passTokens) {
			tokens += len(seqs[hi].IDs)
			hi++
		}
		s := m.forward(seqs[lo:hi], workers)
		for i := lo; i < hi; i++ {
			each(i, seqs[i], s.x[s.offsets[i-lo]*h:s.offsets[i-lo+1]*h])
		}
		m.scratch.Put(s)
		lo = hi
	}
	return nil
}

// check returns an error wrapping ErrInput for the first sequence the model
// cannot run.
func (m *Model) check(seqs []Sequence) error {
	c := m.cfg
	for i, s := range seqs {
		n := len(s.IDs)
		switch {
		case n == 0 || n > c.MaxPositions:
			return fmt.Errorf("%w: sequence %d has %d tokens, want 1 to %d", ErrInput, i, n, c.MaxPositions)
		case s.TypeIDs != nil && len(s.TypeIDs) != n, s.Mask != nil && len(s.Mask) != n:
			return fmt.Errorf("%w: sequence %d has %d ids, %d token types and %d mask values", ErrInput, i, n, len(s.TypeIDs), len(s.Mask))
		}
		for t, id := range s.IDs {
			if id < 0 || id >= c.VocabSize {
				return fmt.Errorf("%w: sequence %d token %d: id %d is outside [0, %d)", ErrInput, i, t, id, c.VocabSize)
			}
			if s.TypeIDs != nil && (s.TypeIDs[t] < 0 || s.TypeIDs[t] >= c.TypeVocab) {
				return fmt.Errorf("%w: sequence %d token %d: token type %d is outside [0, %d)", ErrInput, i, t, s.TypeIDs[t], c.TypeVocab)
			}
			if s.Mask != nil && s.Mask[t] != 0 && s.Mask[t] != 1 {
				return fmt.Errorf("%w: sequence %d token %d: mask value %d is not 0 or 1", ErrInput, i, t, s.Mask[t])
			}
		}
	}
	return nil
}
