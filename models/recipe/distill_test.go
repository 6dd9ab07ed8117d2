package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// TestDistill: a static model distilled from a small encoder has a row per
// token of the requested width, zero rows for the special tokens, and rows
// weighted by the token's place in the vocabulary.
func TestDistill(t *testing.T) {
	c := onnxgraph.EncoderConfig{Layers: 1, Hidden: 16, Heads: 4, Intermediate: 24, VocabSize: 40, MaxPositions: 8, TypeVocab: 2, LayerNormEps: 1e-12}
	e := encodertest.Random(c, 5)
	src := t.TempDir()
	graph, err := e.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "model.onnx"), graph, 0o644); err != nil {
		t.Fatal(err)
	}
	tok := `{"added_tokens": [{"id": 0, "content": "[PAD]"}, {"id": 1, "content": "[UNK]"}, {"id": 2, "content": "[CLS]"}, {"id": 3, "content": "[SEP]"}]}`
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(tok), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "static")
	if err := runDistill([]string{"-encoder", src, "-out", out, "-dim", "8"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := onnxgraph.ReadStatic(b)
	if err != nil {
		t.Fatal(err)
	}
	if st.VocabSize != 40 || st.Dim != 8 {
		t.Fatalf("static model %d x %d, want 40 x 8", st.VocabSize, st.Dim)
	}
	norm := func(id int) float64 {
		var n float64
		for _, x := range st.Row(id) {
			n += float64(x) * float64(x)
		}
		return math.Sqrt(n)
	}
	for id := range 4 {
		if norm(id) != 0 {
			t.Errorf("special token %d has a row of norm %v, want zero", id, norm(id))
		}
	}
	for id := 4; id < 40; id++ {
		if norm(id) == 0 || math.IsNaN(norm(id)) {
			t.Errorf("token %d has a row of norm %v", id, norm(id))
		}
	}
	if _, err := os.Stat(filepath.Join(out, "tokenizer.json")); err != nil {
		t.Error(err)
	}
}
