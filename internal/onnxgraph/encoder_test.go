package onnxgraph_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // registers the "go" backend
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/onnx-gomlx/onnx"

	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// smallEncoder is a two-layer encoder small enough to run in a test, with
// sizes that are not multiples of anything in particular.
var smallEncoder = onnxgraph.EncoderConfig{
	Layers: 2, Hidden: 12, Heads: 3, Intermediate: 20, VocabSize: 37, MaxPositions: 9, TypeVocab: 2, LayerNormEps: 1e-12,
}

// runEncoderGraph executes a marshalled encoder with onnx-gomlx, the engine
// under hugot's Go backend, and returns last_hidden_state.
func runEncoderGraph(t *testing.T, model []byte, ids, mask, types []int64, batch, seq int) []float32 {
	t.Helper()
	m, err := onnx.Parse(model)
	if err != nil {
		t.Fatalf("onnx.Parse: %v", err)
	}
	ctx := context.New().Reuse()
	if err := m.VariablesToContext(ctx); err != nil {
		t.Fatalf("VariablesToContext: %v", err)
	}
	// Ops one after another: the backend's parallel executor updates its
	// bookkeeping without a lock, which the race detector sees on this
	// graph's parallel branches.
	backend, err := backends.NewWithConfig("go:ops_sequential")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*graph.Node) []*graph.Node {
		return m.CallGraph(ctx, in[0].Graph(), map[string]*graph.Node{
			onnxgraph.InputIDs:      in[0],
			onnxgraph.AttentionMask: in[1],
			onnxgraph.TokenTypeIDs:  in[2],
		}, onnxgraph.LastHiddenState)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	out, err := exec.Exec(
		tensors.FromFlatDataAndDimensions(ids, batch, seq),
		tensors.FromFlatDataAndDimensions(mask, batch, seq),
		tensors.FromFlatDataAndDimensions(types, batch, seq))
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	got, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestEncoderGraphRuns checks that onnx-gomlx computes, for the graph
// Marshal writes, what the plain forward pass computes with the weights
// ReadEncoder returns: a batch of two sequences, the second one padded.
func TestEncoderGraphRuns(t *testing.T) {
	e := encodertest.Random(smallEncoder, 1)
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	read, err := onnxgraph.ReadEncoder(b)
	if err != nil {
		t.Fatal(err)
	}
	const seq = 7
	ids := []int64{2, 11, 36, 5, 0, 19, 3, 2, 8, 8, 3, 0, 0, 0}
	mask := []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0}
	types := []int64{0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}
	got := runEncoderGraph(t, b, ids, mask, types, 2, seq)
	if len(got) != 2*seq*smallEncoder.Hidden {
		t.Fatalf("got %d values, want %d", len(got), 2*seq*smallEncoder.Hidden)
	}
	for s := range 2 {
		ints := func(v []int64) []int {
			out := make([]int, seq)
			for i := range out {
				out[i] = int(v[s*seq+i])
			}
			return out
		}
		want := encodertest.Forward(read, ints(ids), ints(types), ints(mask))
		for tok := range seq {
			for j := range smallEncoder.Hidden {
				g := got[(s*seq+tok)*smallEncoder.Hidden+j]
				if math.Abs(float64(g)-want[tok][j]) > 2e-4 {
					t.Fatalf("sequence %d token %d value %d: graph %v, reference %v", s, tok, j, g, want[tok][j])
				}
			}
		}
	}
}

// TestEncoderRoundTrip checks that ReadEncoder returns the config, the
// metadata and weights within half a quantisation step of those written,
// and that Marshal is deterministic.
func TestEncoderRoundTrip(t *testing.T) {
	e := encodertest.Random(smallEncoder, 2)
	e.ProducerName = "test"
	e.Metadata = [][2]string{{"z.extra", "1"}, {"a.extra", "2"}}
	b, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := e.Marshal()
	if !bytes.Equal(b, again) {
		t.Fatal("Marshal gave different bytes for the same encoder")
	}
	r, err := onnxgraph.ReadEncoder(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.Config != e.Config {
		t.Fatalf("config %+v, want %+v", r.Config, e.Config)
	}
	if len(r.Metadata) != 2 || r.Metadata[0] != [2]string{"a.extra", "2"} || r.Metadata[1] != [2]string{"z.extra", "1"} {
		t.Fatalf("metadata %v", r.Metadata)
	}
	near := func(name string, got, want []float32, cols int, quantized bool) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
		}
		for row := 0; row < len(want)/cols; row++ {
			var top float64
			for _, v := range want[row*cols : (row+1)*cols] {
				top = math.Max(top, math.Abs(float64(v)))
			}
			tol := 0.0
			if quantized {
				tol = top/127/2 + 1e-7
			}
			for i := row * cols; i < (row+1)*cols; i++ {
				if math.Abs(float64(got[i]-want[i])) > tol {
					t.Fatalf("%s[%d] = %v, want %v within %v", name, i, got[i], want[i], tol)
				}
			}
		}
	}
	h := smallEncoder.Hidden
	near("word", r.WordEmbeddings, e.WordEmbeddings, h, true)
	near("position", r.PositionEmbeddings, e.PositionEmbeddings, h, true)
	near("type", r.TypeEmbeddings, e.TypeEmbeddings, h, true)
	near("embedding norm", r.EmbeddingNorm.Scale, e.EmbeddingNorm.Scale, h, false)
	for i, l := range e.Layers {
		rl := r.Layers[i]
		near("query", rl.Query.Weight, l.Query.Weight, h, true)
		near("query bias", rl.Query.Bias, l.Query.Bias, h, false)
		near("intermediate", rl.Intermediate.Weight, l.Intermediate.Weight, h, true)
		near("output", rl.Output.Weight, l.Output.Weight, smallEncoder.Intermediate, true)
		near("output norm", rl.OutputNorm.Bias, l.OutputNorm.Bias, h, false)
	}
}

// TestReadEncoderRefuses checks that ReadEncoder answers ErrNotEncoder for
// other models and for any change to the graph it writes.
func TestReadEncoderRefuses(t *testing.T) {
	e := encodertest.Random(smallEncoder, 3)
	good, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	static, err := (&onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3, Table: testTable}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("the graph holds no %q", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"static graph", static},
		{"empty", nil},
		{"garbage", []byte("not a protobuf at all")},
		{"cut short", good[:len(good)/2]},
		{"format version", replace("mcpsag.format_version\x12\x011", "mcpsag.format_version\x12\x012")},
		{"op changed", replace("Softmax", "Softmin")},
		{"input renamed", replace("layer.1.key.out", "layer.1.key.oux")},
		{"metadata size", replace("mcpsag.heads\x12\x013", "mcpsag.heads\x12\x014")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := onnxgraph.ReadEncoder(c.data)
			if r != nil || !errors.Is(err, onnxgraph.ErrNotEncoder) {
				t.Fatalf("ReadEncoder = %v, %v; want nil, ErrNotEncoder", r != nil, err)
			}
		})
	}
	if s, err := onnxgraph.ReadStatic(good); s != nil || !errors.Is(err, onnxgraph.ErrNotStatic) {
		t.Fatalf("ReadStatic of an encoder = %v, %v; want ErrNotStatic", s != nil, err)
	}
}

// TestEncoderMarshalRefuses checks Marshal's validation.
func TestEncoderMarshalRefuses(t *testing.T) {
	cases := map[string]func(e *onnxgraph.Encoder){
		"heads":      func(e *onnxgraph.Encoder) { e.Config.Heads = 5 },
		"layers":     func(e *onnxgraph.Encoder) { e.Layers = e.Layers[:1] },
		"table size": func(e *onnxgraph.Encoder) { e.WordEmbeddings = e.WordEmbeddings[1:] },
		"bias size":  func(e *onnxgraph.Encoder) { e.Layers[1].Output.Bias = nil },
		"nan":        func(e *onnxgraph.Encoder) { e.Layers[0].Key.Weight[3] = float32(math.NaN()) },
		"inf":        func(e *onnxgraph.Encoder) { e.EmbeddingNorm.Bias[0] = float32(math.Inf(1)) },
		"eps":        func(e *onnxgraph.Encoder) { e.Config.LayerNormEps = 0 },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			e := encodertest.Random(smallEncoder, 4)
			spoil(e)
			if _, err := e.Marshal(); err == nil {
				t.Fatal("Marshal succeeded")
			}
		})
	}
}
