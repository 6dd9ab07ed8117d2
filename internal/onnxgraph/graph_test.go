package onnxgraph_test

import (
	"math"
	"testing"

	"github.com/gomlx/gomlx/backends"
	_ "github.com/gomlx/gomlx/backends/simplego" // registers the "go" backend
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/onnx-gomlx/onnx"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// runGraph executes a marshalled model with onnx-gomlx, the engine under
// hugot's Go backend, and returns the raw last_hidden_state, padded rows
// included (hugot drops those before pooling).
func runGraph(t *testing.T, model []byte, ids, mask []int64, batch, seq int) []float32 {
	t.Helper()
	m, err := onnx.Parse(model)
	if err != nil {
		t.Fatalf("onnx.Parse: %v", err)
	}
	if got := m.InputsNames; len(got) != 2 || got[0] != onnxgraph.InputIDs || got[1] != onnxgraph.AttentionMask {
		t.Fatalf("inputs = %v", got)
	}
	if got := m.OutputsNames; len(got) != 1 || got[0] != onnxgraph.LastHiddenState {
		t.Fatalf("outputs = %v", got)
	}
	ctx := context.New().Reuse()
	if err := m.VariablesToContext(ctx); err != nil {
		t.Fatalf("VariablesToContext: %v", err)
	}
	backend, err := backends.NewWithConfig("go")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, in []*graph.Node) []*graph.Node {
		return m.CallGraph(ctx, in[0].Graph(), map[string]*graph.Node{
			onnxgraph.InputIDs:      in[0],
			onnxgraph.AttentionMask: in[1],
		}, onnxgraph.LastHiddenState)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	out, err := exec.Exec(
		tensors.FromFlatDataAndDimensions(ids, batch, seq),
		tensors.FromFlatDataAndDimensions(mask, batch, seq))
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	got, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestStaticEmbeddingGraph(t *testing.T) {
	for _, enc := range []onnxgraph.Encoding{onnxgraph.Float32, onnxgraph.Int8} {
		t.Run(enc.String(), func(t *testing.T) {
			m := &onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3, Table: testTable, Encoding: enc}
			b, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			// Row 0: [CLS] gamma [SEP]; row 1: [CLS] [SEP] then one padded
			// position holding id 0, whose table row is non-zero.
			ids := []int64{2, 6, 3, 2, 3, 0}
			mask := []int64{1, 1, 1, 1, 1, 0}
			got := runGraph(t, b, ids, mask, 2, 3)
			table := m.Dequantized()
			var want []float32
			for i, id := range ids {
				for j := range 3 {
					want = append(want, table[int(id)*3+j]*float32(mask[i]))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("got %d values, want %d", len(got), len(want))
			}
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-6 {
					t.Fatalf("last_hidden_state = %v, want %v", got, want)
				}
			}
		})
	}
}
