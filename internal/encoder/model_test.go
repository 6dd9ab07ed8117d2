package encoder

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// configs are encoder shapes for the forward pass tests: sizes around the
// tile and panel widths, and a head size that is not a power of two.
var configs = map[string]onnxgraph.EncoderConfig{
	"tiny":   {Layers: 1, Hidden: 8, Heads: 2, Intermediate: 12, VocabSize: 20, MaxPositions: 16, TypeVocab: 2, LayerNormEps: 1e-12},
	"ragged": {Layers: 2, Hidden: 40, Heads: 4, Intermediate: 72, VocabSize: 50, MaxPositions: 80, TypeVocab: 2, LayerNormEps: 1e-12},
	"wide":   {Layers: 2, Hidden: 128, Heads: 2, Intermediate: 320, VocabSize: 30, MaxPositions: 140, TypeVocab: 3, LayerNormEps: 1e-5},
}

// randomSequence returns a sequence of n tokens; masked puts zeros in its
// mask (never at the first position).
func randomSequence(r *rand.Rand, c onnxgraph.EncoderConfig, n int, masked bool) Sequence {
	s := Sequence{IDs: make([]int, n), TypeIDs: make([]int, n), Mask: make([]int, n)}
	for i := range n {
		s.IDs[i] = r.IntN(c.VocabSize)
		s.TypeIDs[i] = r.IntN(c.TypeVocab)
		s.Mask[i] = 1
		if masked && i > 0 && r.IntN(3) == 0 {
			s.Mask[i] = 0
		}
	}
	return s
}

// stored returns e as the encoder graph stores it, int8 rows with one scale
// each: the weights the native model computes with.
func stored(t testing.TB, e *onnxgraph.Encoder) *onnxgraph.Encoder {
	t.Helper()
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r, err := onnxgraph.ReadEncoder(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStoredIsStable checks that a model made from an encoder that
// ReadEncoder returned computes what one made from the encoder written.
func TestStoredIsStable(t *testing.T) {
	c := configs["ragged"]
	e := encodertest.Random(c, 17)
	a, err := New(e)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(stored(t, e))
	if err != nil {
		t.Fatal(err)
	}
	s := randomSequence(rand.New(rand.NewPCG(18, 19)), c, 30, true)
	x, _ := a.LastHiddenState([]Sequence{s}, 1)
	y, _ := b.LastHiddenState([]Sequence{s}, 1)
	for i := range x[0] {
		if math.Abs(float64(x[0][i]-y[0][i])) > 1e-5 {
			t.Fatalf("value %d: %v from the encoder written, %v from the one read", i, x[0][i], y[0][i])
		}
	}
}

// TestForwardMatchesReference checks the forward pass of every kernel set
// against the plain float64 one on random encoders (with the weights as
// the graph stores them), for sequences of one
// token, of lengths around the tile and panel sizes, masked and not, run
// as one batch.
func TestForwardMatchesReference(t *testing.T) {
	for name, c := range configs {
		e := encodertest.Random(c, 7)
		r := rand.New(rand.NewPCG(5, 6))
		var seqs []Sequence
		for _, n := range []int{1, 2, 5, 6, 7, 13, 64, 65, c.MaxPositions} {
			if n <= c.MaxPositions {
				seqs = append(seqs, randomSequence(r, c, n, n%2 == 1))
			}
		}
		want := make([][][]float64, len(seqs))
		st := stored(t, e)
		for i, s := range seqs {
			want[i] = encodertest.Forward(st, s.IDs, s.TypeIDs, s.Mask)
		}
		for _, ks := range kernelSets() {
			t.Run(name+"/"+ks.name, func(t *testing.T) {
				m, err := newWithKernels(e, ks)
				if err != nil {
					t.Fatal(err)
				}
				got, err := m.LastHiddenState(seqs, 2)
				if err != nil {
					t.Fatal(err)
				}
				for i := range seqs {
					for tok, row := range want[i] {
						for j, w := range row {
							if g := got[i][tok*c.Hidden+j]; math.Abs(float64(g)-w) > 2e-4 {
								t.Fatalf("sequence %d (%d tokens) token %d value %d: %v, want %v", i, len(seqs[i].IDs), tok, j, g, w)
							}
						}
					}
				}
			})
		}
	}
}

// TestLongSequence checks a sequence of 512 tokens, the most MiniLM takes.
func TestLongSequence(t *testing.T) {
	c := onnxgraph.EncoderConfig{Layers: 1, Hidden: 64, Heads: 2, Intermediate: 96, VocabSize: 100, MaxPositions: 512, TypeVocab: 2, LayerNormEps: 1e-12}
	e := encodertest.Random(c, 8)
	s := randomSequence(rand.New(rand.NewPCG(9, 10)), c, 512, true)
	want := encodertest.Forward(stored(t, e), s.IDs, s.TypeIDs, s.Mask)
	m, err := New(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.LastHiddenState([]Sequence{s}, 2)
	if err != nil {
		t.Fatal(err)
	}
	for tok, row := range want {
		for j, w := range row {
			if g := got[0][tok*c.Hidden+j]; math.Abs(float64(g)-w) > 2e-4 {
				t.Fatalf("token %d value %d: %v, want %v", tok, j, g, w)
			}
		}
	}
}

// TestSameResultAnyWay checks that the hidden states do not depend on the
// number of workers, on the batch a sequence runs in, or on padding it
// with masked positions, bit for bit.
func TestSameResultAnyWay(t *testing.T) {
	c := configs["ragged"]
	e := encodertest.Random(c, 11)
	m, err := New(e)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(12, 13))
	seqs := []Sequence{randomSequence(r, c, 9, false), randomSequence(r, c, 31, true), randomSequence(r, c, 1, false)}
	one, err := m.LastHiddenState(seqs, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{2, 3, 8} {
		got, err := m.LastHiddenState(seqs, workers)
		if err != nil {
			t.Fatal(err)
		}
		for i := range seqs {
			if !slices.Equal(got[i], one[i]) {
				t.Fatalf("%d workers: sequence %d differs from one worker's", workers, i)
			}
		}
	}
	for i, s := range seqs {
		alone, err := m.LastHiddenState([]Sequence{s}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0], one[i]) {
			t.Fatalf("sequence %d alone differs from in the batch", i)
		}
	}
	// A batch of more tokens than one pass takes runs in several passes,
	// with the same results.
	var big []Sequence
	for len(big)*c.MaxPositions <= passTokens {
		big = append(big, randomSequence(r, c, c.MaxPositions, len(big)%2 == 0))
	}
	all, err := m.LastHiddenState(big, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, len(big) - 1} {
		alone, err := m.LastHiddenState(big[i:i+1], 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0], all[i]) {
			t.Fatalf("sequence %d of a batch of %d tokens differs from alone", i, len(big)*c.MaxPositions)
		}
	}
	// Padding: two masked positions at the end change no other position.
	s := seqs[0]
	padded := Sequence{IDs: append(slices.Clone(s.IDs), 3, 4), TypeIDs: append(slices.Clone(s.TypeIDs), 0, 0), Mask: append(slices.Clone(s.Mask), 0, 0)}
	got, err := m.LastHiddenState([]Sequence{padded}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0][:len(one[0])], one[0]) {
		t.Fatal("padding with masked positions changed the others")
	}
}

// TestPool checks mean and CLS pooling against the hidden states.
func TestPool(t *testing.T) {
	c := configs["tiny"]
	m, err := New(encodertest.Random(c, 14))
	if err != nil {
		t.Fatal(err)
	}
	s := Sequence{IDs: []int{2, 7, 9, 3}, Mask: []int{1, 1, 0, 1}}
	hidden, err := m.LastHiddenState([]Sequence{s}, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Hidden
	for _, tc := range []struct {
		pooling Pooling
		rows    []int
	}{{Mean, []int{0, 1, 3}}, {CLS, []int{0}}} {
		got, err := m.Pool([]Sequence{s}, tc.pooling, 2)
		if err != nil {
			t.Fatal(err)
		}
		for j := range h {
			var want float32
			for _, row := range tc.rows {
				want += hidden[0][row*h+j]
			}
			want /= float32(len(tc.rows))
			if got[0][j] != want {
				t.Fatalf("pooling %d value %d: %v, want %v", tc.pooling, j, got[0][j], want)
			}
		}
	}
	if _, err := m.Pool([]Sequence{s}, Pooling(7), 1); err == nil {
		t.Fatal("unknown pooling accepted")
	}
}

// TestBadInput checks that every kind of input the model cannot run is an
// ErrInput error, not a panic.
func TestBadInput(t *testing.T) {
	c := configs["tiny"]
	m, err := New(encodertest.Random(c, 15))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]Sequence{
		"empty":          {},
		"too long":       {IDs: make([]int, c.MaxPositions+1)},
		"negative id":    {IDs: []int{1, -1}},
		"id past vocab":  {IDs: []int{c.VocabSize}},
		"token type":     {IDs: []int{1, 2}, TypeIDs: []int{0, 2}},
		"mask value":     {IDs: []int{1, 2}, Mask: []int{1, 2}},
		"mask length":    {IDs: []int{1, 2}, Mask: []int{1}},
		"type ids short": {IDs: []int{1, 2}, TypeIDs: []int{1}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := m.LastHiddenState([]Sequence{{IDs: []int{1}}, s}, 2); !errors.Is(err, ErrInput) {
				t.Fatalf("error %v, want ErrInput", err)
			}
		})
	}
}

// FuzzForward runs arbitrary inputs through a small encoder: an input
// the model cannot run is an ErrInput error, any other gives finite
// hidden states.
func FuzzForward(f *testing.F) {
	c := configs["tiny"]
	m, err := New(encodertest.Random(c, 16))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{1, 2, 3}, []byte{0, 0, 1}, []byte{1, 1, 0})
	f.Add([]byte{200}, []byte{}, []byte{})
	f.Add(make([]byte, 17), []byte{}, []byte{9})
	f.Fuzz(func(t *testing.T, ids, types, mask []byte) {
		s := Sequence{IDs: make([]int, len(ids))}
		for i, b := range ids {
			s.IDs[i] = int(int8(b))
		}
		if len(types) > 0 {
			s.TypeIDs = make([]int, len(types))
			for i, b := range types {
				s.TypeIDs[i] = int(b % 4)
			}
		}
		if len(mask) > 0 {
			s.Mask = make([]int, len(mask))
			for i, b := range mask {
				s.Mask[i] = int(b % 3)
			}
		}
		valid := m.check([]Sequence{s}) == nil
		got, err := m.LastHiddenState([]Sequence{s}, 2)
		if valid != (err == nil) || (err != nil && !errors.Is(err, ErrInput)) {
			t.Fatalf("valid %v, error %v", valid, err)
		}
		for _, v := range slices.Concat(got...) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatal(fmt.Sprint("hidden state value ", v))
			}
		}
	})
}
