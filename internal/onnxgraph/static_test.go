package onnxgraph_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knights-analytics/hugot"
	"github.com/knights-analytics/hugot/pipelines"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// testTokenizer is a minimal BERT-style tokenizer.json for the vocabulary
// [PAD] [UNK] [CLS] [SEP] alpha beta gamma (ids 0..6).
const testTokenizer = `{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [
    {"id": 0, "content": "[PAD]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "[UNK]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "[CLS]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 3, "content": "[SEP]", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "alpha": 4, "beta": 5, "gamma": 6}}
}`

// testTable has one row per token id; the [PAD] row is non-zero so that a
// missing mask would show.
var testTable = []float32{
	9, 9, 9, // [PAD]
	0.1, 0.1, 0.1, // [UNK]
	0, 0, 0.5, // [CLS]
	0, 0.5, 0, // [SEP]
	1, 0, 0, // alpha
	0.6, 0.8, 0, // beta
	-1, 2, 3, // gamma
}

func writeModel(t *testing.T, m *onnxgraph.StaticEmbedding) string {
	t.Helper()
	dir := t.TempDir()
	if err := m.WriteFile(filepath.Join(dir, "model.onnx")); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(testTokenizer), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wantMean returns the L2-normalised mean of the given table rows.
func wantMean(table []float32, dim int, ids ...int) []float32 {
	sum := make([]float64, dim)
	for _, id := range ids {
		for j := range dim {
			sum[j] += float64(table[id*dim+j])
		}
	}
	var norm float64
	for j := range sum {
		sum[j] /= float64(len(ids))
		norm += sum[j] * sum[j]
	}
	norm = math.Sqrt(norm)
	out := make([]float32, dim)
	for j := range sum {
		out[j] = float32(sum[j] / norm)
	}
	return out
}

func TestStaticEmbeddingHugot(t *testing.T) {
	tests := []struct {
		name     string
		encoding onnxgraph.Encoding
		tol      float64
	}{
		{"float32", onnxgraph.Float32, 1e-6},
		{"int8", onnxgraph.Int8, 1e-6}, // compared with the dequantised table
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &onnxgraph.StaticEmbedding{
				VocabSize: 7, Dim: 3, Table: testTable, Encoding: tt.encoding,
				ProducerName: "onnxgraph-test", DocString: "test model",
			}
			dir := writeModel(t, m)

			session, err := hugot.NewGoSession()
			if err != nil {
				t.Fatalf("NewGoSession: %v", err)
			}
			defer session.Destroy()
			p, err := hugot.NewPipeline(session, hugot.FeatureExtractionConfig{
				ModelPath: dir,
				Name:      "static",
				Options:   []hugot.FeatureExtractionOption{pipelines.WithNormalization()},
			})
			if err != nil {
				t.Fatalf("NewPipeline: %v", err)
			}
			if got := p.Output.Name; got != onnxgraph.LastHiddenState {
				t.Errorf("output name = %q, want %q", got, onnxgraph.LastHiddenState)
			}
			// Two inputs of different lengths, so the batch is padded.
			out, err := p.RunPipeline([]string{"alpha beta gamma", "Beta"})
			if err != nil {
				t.Fatalf("RunPipeline: %v", err)
			}
			table := m.Dequantized()
			want := [][]float32{
				wantMean(table, 3, 2, 4, 5, 6, 3), // [CLS] alpha beta gamma [SEP]
				wantMean(table, 3, 2, 5, 3),       // [CLS] beta [SEP]
			}
			if len(out.Embeddings) != len(want) {
				t.Fatalf("got %d embeddings, want %d", len(out.Embeddings), len(want))
			}
			for i := range want {
				for j := range want[i] {
					if d := math.Abs(float64(out.Embeddings[i][j] - want[i][j])); d > tt.tol {
						t.Errorf("embedding %d = %v, want %v", i, out.Embeddings[i], want[i])
						break
					}
				}
			}
		})
	}
}

func TestInt8CloseToFloat32(t *testing.T) {
	m := &onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3, Table: testTable, Encoding: onnxgraph.Int8}
	deq := m.Dequantized()
	for i, v := range testTable {
		row := testTable[i/3*3 : i/3*3+3]
		var maxAbs float64
		for _, x := range row {
			maxAbs = max(maxAbs, math.Abs(float64(x)))
		}
		if d := math.Abs(float64(deq[i] - v)); d > maxAbs/254+1e-7 {
			t.Errorf("value %d: dequantised %v, want %v within %v", i, deq[i], v, maxAbs/254)
		}
	}
}

func TestMarshalErrors(t *testing.T) {
	tests := []struct {
		name string
		m    onnxgraph.StaticEmbedding
		want string
	}{
		{"zero vocab", onnxgraph.StaticEmbedding{VocabSize: 0, Dim: 3}, "must be positive"},
		{"zero dim", onnxgraph.StaticEmbedding{VocabSize: 3, Dim: 0}, "must be positive"},
		{"short table", onnxgraph.StaticEmbedding{VocabSize: 2, Dim: 2, Table: []float32{1, 2, 3}}, "has 3 values"},
		{"nan", onnxgraph.StaticEmbedding{VocabSize: 1, Dim: 2, Table: []float32{1, float32(math.NaN())}}, "NaN"},
		{"inf", onnxgraph.StaticEmbedding{VocabSize: 1, Dim: 2, Table: []float32{float32(math.Inf(1)), 0}}, "+Inf"},
		{"encoding", onnxgraph.StaticEmbedding{VocabSize: 1, Dim: 1, Table: []float32{1}, Encoding: 9}, "unknown encoding"},
		{"too large", onnxgraph.StaticEmbedding{VocabSize: 1 << 30, Dim: 4}, "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.m.Marshal()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Marshal() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestMarshalDeterministic(t *testing.T) {
	m := &onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3, Table: testTable, ProducerName: "p",
		Metadata: [][2]string{{"k", "v"}}}
	a, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Error("two Marshal calls gave different bytes")
	}
}

func TestWriteFileLeavesNoTempFiles(t *testing.T) {
	dir := t.TempDir()
	m := &onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3, Table: testTable}
	if err := m.WriteFile(filepath.Join(dir, "model.onnx")); err != nil {
		t.Fatal(err)
	}
	bad := &onnxgraph.StaticEmbedding{VocabSize: 7, Dim: 3}
	if err := bad.WriteFile(filepath.Join(dir, "bad.onnx")); err == nil {
		t.Error("WriteFile of an invalid model succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "model.onnx" {
		t.Errorf("directory holds %v, want [model.onnx]", names)
	}
}

func TestReadStaticRoundTrip(t *testing.T) {
	table := []float32{0, 0, 0.5, -1, 2, 3.25, -0.125, 1e-3, 7, 8, -9, 10}
	for _, enc := range []onnxgraph.Encoding{onnxgraph.Float32, onnxgraph.Int8} {
		m := &onnxgraph.StaticEmbedding{VocabSize: 4, Dim: 3, Table: table, Encoding: enc, ProducerName: "test"}
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		s, err := onnxgraph.ReadStatic(data)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		want := m.Dequantized()
		for id := range 4 {
			got := s.Row(id)
			for k := range 3 {
				if math.Float32bits(got[k]) != math.Float32bits(want[id*3+k]) {
					t.Errorf("%s row %d: %v, want %v", enc, id, got, want[id*3:id*3+3])
				}
			}
		}
		// Any other graph is refused: a changed node, a cut file.
		bad := bytes.Replace(data, []byte("Unsqueeze"), []byte("Unsqueezx"), 1)
		if _, err := onnxgraph.ReadStatic(bad); !errors.Is(err, onnxgraph.ErrNotStatic) {
			t.Errorf("%s: a changed node read as static: %v", enc, err)
		}
		if _, err := onnxgraph.ReadStatic(data[:len(data)/2]); err == nil {
			t.Errorf("%s: half a file read as static", enc)
		}
	}
	if _, err := onnxgraph.ReadStatic([]byte("not onnx")); err == nil {
		t.Error("garbage read as static")
	}
}
