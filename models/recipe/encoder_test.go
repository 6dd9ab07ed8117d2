package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// stEntry is one tensor to write into a test safetensors file.
type stEntry struct {
	name, dtype string
	shape       []int
	data        []byte
}

// writeSafetensors returns a safetensors file holding entries, in order.
func writeSafetensors(t testing.TB, entries []stEntry) []byte {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, e := range entries {
		header[e.name] = map[string]any{"dtype": e.dtype, "shape": e.shape, "data_offsets": []int{len(data), len(data) + len(e.data)}}
		data = append(data, e.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// TestSafetensors reads F32, F16 and BF16 tensors and refuses what it
// cannot read, naming the problem.
func TestSafetensors(t *testing.T) {
	f16 := []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c} // 1, -2, 2^-24, +Inf
	bf16 := []byte{0x80, 0x3f, 0x49, 0x40}                        // 1, 3.140625
	file := writeSafetensors(t, []stEntry{
		{"w", "F32", []int{2, 2}, f32Bytes([]float32{1, 2, 3, 4})},
		{"h", "F16", []int{4}, f16},
		{"b", "BF16", []int{2}, bf16},
		{"ids", "I64", []int{1}, make([]byte, 8)},
	})
	st, err := parseSafetensors(file)
	if err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name  string
		shape []int
		want  []float32
	}{
		{"w", []int{2, 2}, []float32{1, 2, 3, 4}},
		{"h", []int{4}, []float32{1, -2, 1.0 / (1 << 24), float32(math.Inf(1))}},
		{"b", []int{2}, []float32{1, 3.140625}},
	}
	for _, r := range reads {
		got, err := st.float32s(r.name, r.shape...)
		if err != nil || !slices.Equal(got, r.want) {
			t.Fatalf("%s = %v, %v; want %v", r.name, got, err, r.want)
		}
	}
	for _, bad := range []struct {
		name  string
		shape []int
		want  string
	}{{"ids", []int{1}, "I64"}, {"w", []int{4}, "shape"}, {"missing", nil, "no tensor"}} {
		if _, err := st.float32s(bad.name, bad.shape...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("reading %s: %v, want an error naming %q", bad.name, err, bad.want)
		}
	}

	broken := map[string][]byte{
		"short":          file[:5],
		"header too big": append(binary.LittleEndian.AppendUint64(nil, 1<<40), file[8:]...),
		"header json":    append(binary.LittleEndian.AppendUint64(nil, 3), []byte("{x}")...),
		"cut data":       file[:len(file)-1],
		"unknown dtype":  writeSafetensors(t, []stEntry{{"x", "F4", []int{1}, []byte{0}}}),
		"size mismatch":  writeSafetensors(t, []stEntry{{"x", "F32", []int{3}, make([]byte, 8)}}),
		"negative shape": writeSafetensors(t, []stEntry{{"x", "F32", []int{-1}, nil}}),
	}
	for name, b := range broken {
		if _, err := parseSafetensors(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// FuzzSafetensors parses arbitrary bytes: an error or tensors that read
// without a panic.
func FuzzSafetensors(f *testing.F) {
	f.Add(writeSafetensors(f, []stEntry{{"w", "F32", []int{1, 2}, f32Bytes([]float32{1, 2})}, {"h", "F16", []int{1}, []byte{0, 0x3c}}}))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseSafetensors(b)
		if err != nil {
			return
		}
		for name, tensor := range st.tensors {
			st.float32s(name, tensor.Shape...)
		}
	})
}

// bertFiles writes a Hugging Face style folder for e: model.safetensors
// with the BertModel tensor names (after prefix), config.json and a
// tokenizer.json stand-in.
func bertFiles(t *testing.T, e *onnxgraph.Encoder, prefix string) string {
	t.Helper()
	c := e.Config
	entries := []stEntry{
		{"embeddings.position_ids", "I64", []int{1, 1}, make([]byte, 8)},
		{"embeddings.word_embeddings.weight", "F32", []int{c.VocabSize, c.Hidden}, f32Bytes(e.WordEmbeddings)},
		{"embeddings.position_embeddings.weight", "F32", []int{c.MaxPositions, c.Hidden}, f32Bytes(e.PositionEmbeddings)},
		{"embeddings.token_type_embeddings.weight", "F32", []int{c.TypeVocab, c.Hidden}, f32Bytes(e.TypeEmbeddings)},
		{"embeddings.LayerNorm.weight", "F32", []int{c.Hidden}, f32Bytes(e.EmbeddingNorm.Scale)},
		{"embeddings.LayerNorm.bias", "F32", []int{c.Hidden}, f32Bytes(e.EmbeddingNorm.Bias)},
	}
	for i, l := range e.Layers {
		p := "encoder.layer." + strconv.Itoa(i) + "."
		for _, x := range []struct {
			name string
			l    onnxgraph.Linear
			out  int
		}{{"attention.self.query", l.Query, c.Hidden}, {"attention.self.key", l.Key, c.Hidden}, {"attention.self.value", l.Value, c.Hidden},
			{"attention.output.dense", l.AttentionOutput, c.Hidden}, {"intermediate.dense", l.Intermediate, c.Intermediate}, {"output.dense", l.Output, c.Hidden}} {
			entries = append(entries,
				stEntry{p + x.name + ".weight", "F32", []int{x.out, len(x.l.Weight) / x.out}, f32Bytes(x.l.Weight)},
				stEntry{p + x.name + ".bias", "F32", []int{x.out}, f32Bytes(x.l.Bias)})
		}
		for _, x := range []struct {
			name string
			n    onnxgraph.LayerNorm
		}{{"attention.output.LayerNorm", l.AttentionNorm}, {"output.LayerNorm", l.OutputNorm}} {
			entries = append(entries,
				stEntry{p + x.name + ".weight", "F32", []int{c.Hidden}, f32Bytes(x.n.Scale)},
				stEntry{p + x.name + ".bias", "F32", []int{c.Hidden}, f32Bytes(x.n.Bias)})
		}
	}
	for i := range entries {
		entries[i].name = prefix + entries[i].name
	}
	dir := t.TempDir()
	cfg := map[string]any{
		"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute",
		"num_hidden_layers": c.Layers, "hidden_size": c.Hidden, "num_attention_heads": c.Heads, "intermediate_size": c.Intermediate,
		"vocab_size": c.VocabSize, "max_position_embeddings": c.MaxPositions, "type_vocab_size": c.TypeVocab, "layer_norm_eps": c.LayerNormEps,
	}
	cb, _ := json.MarshalIndent(cfg, "", "  ")
	for name, b := range map[string][]byte{
		"model.safetensors": writeSafetensors(t, entries),
		"config.json":       cb,
		"tokenizer.json":    []byte(`{"stand-in": true}`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestConvertEncoder converts a small random BERT, with and without the
// "bert." prefix, and checks the model folder: the graph reads back to
// the weights within half a quantisation step, the other files are copies,
// and a second conversion gives the same bytes.
func TestConvertEncoder(t *testing.T) {
	c := onnxgraph.EncoderConfig{Layers: 2, Hidden: 16, Heads: 4, Intermediate: 24, VocabSize: 30, MaxPositions: 12, TypeVocab: 2, LayerNormEps: 1e-12}
	e := encodertest.Random(c, 21)
	for _, prefix := range []string{"", "bert."} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			src := bertFiles(t, e, prefix)
			out := filepath.Join(t.TempDir(), "model")
			sums, err := convertEncoder(src, out)
			if err != nil {
				t.Fatal(err)
			}
			again, err := convertEncoder(src, filepath.Join(t.TempDir(), "again"))
			if err != nil || !slices.Equal(sums, again) {
				t.Fatalf("second conversion: %v, %v; want %v", again, err, sums)
			}
			for _, f := range []string{"tokenizer.json", "config.json"} {
				a, _ := os.ReadFile(filepath.Join(src, f))
				b, _ := os.ReadFile(filepath.Join(out, f))
				if !bytes.Equal(a, b) {
					t.Fatalf("%s is not a copy", f)
				}
			}
			data, err := os.ReadFile(filepath.Join(out, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := onnxgraph.ReadEncoder(data)
			if err != nil {
				t.Fatal(err)
			}
			if r.Config != c {
				t.Fatalf("config %+v, want %+v", r.Config, c)
			}
			for i, w := range e.Layers[1].Intermediate.Weight {
				if math.Abs(float64(r.Layers[1].Intermediate.Weight[i]-w)) > 0.02 {
					t.Fatalf("intermediate weight %d: %v, want %v", i, r.Layers[1].Intermediate.Weight[i], w)
				}
			}
			if !slices.Equal(r.Layers[0].OutputNorm.Scale, e.Layers[0].OutputNorm.Scale) {
				t.Fatal("layer norm scale changed")
			}
		})
	}
}

// TestConvertRefuses checks that the converter refuses what the encoder
// graph does not compute.
func TestConvertRefuses(t *testing.T) {
	for name, cfg := range map[string]string{
		"not bert":   `{"model_type": "roberta", "hidden_act": "gelu"}`,
		"activation": `{"model_type": "bert", "hidden_act": "relu"}`,
		"positions":  `{"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "relative_key"}`,
		"sizes":      `{"model_type": "bert", "hidden_act": "gelu", "hidden_size": 10, "num_attention_heads": 3}`,
	} {
		if _, err := bertConfig([]byte(cfg)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
