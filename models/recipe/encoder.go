package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// The encoder command converts a BERT encoder in the Hugging Face layout
// (model.safetensors of a BertModel, config.json, tokenizer.json) into a
// model folder the router evaluates natively: model.onnx in the encoder
// graph format of internal/onnxgraph, and the tokenizer and config copied
// byte for byte.

func runEncoder(args []string) error {
	fs := flag.NewFlagSet("encoder", flag.ExitOnError)
	src := fs.String("src", "", "folder with model.safetensors, config.json and tokenizer.json (required)")
	out := fs.String("out", "", "model folder to write (required)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./models/recipe encoder -src DIR -out DIR\n\n"+
			"Converts a BERT encoder (Hugging Face BertModel weights in model.safetensors, F32, F16 or BF16)\n"+
			"into model.onnx with int8 weights, and copies tokenizer.json and config.json.\n\n")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if *src == "" || *out == "" {
		fs.Usage()
		return errors.New("-src and -out are required")
	}
	sums, err := convertEncoder(*src, *out)
	if err != nil {
		return err
	}
	for _, s := range sums {
		fmt.Printf("%s  %s\n", s[1], filepath.Join(*out, s[0]))
	}
	return nil
}

// convertEncoder writes the model folder out from the BERT encoder in src
// and returns each file written with its sha256, in order. The same inputs
// give the same bytes.
func convertEncoder(src, out string) ([][2]string, error) {
	cfgBytes, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		return nil, err
	}
	cfg, err := bertConfig(cfgBytes)
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	weights, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	st, err := parseSafetensors(weights)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src, "model.safetensors"), err)
	}
	enc, err := bertEncoder(st, cfg)
	if err != nil {
		return nil, err
	}
	model, err := enc.Marshal()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var sums [][2]string
	for _, f := range []struct {
		name string
		data []byte
	}{{"model.onnx", model}, {"tokenizer.json", tok}, {"config.json", cfgBytes}} {
		if err := os.WriteFile(filepath.Join(out, f.name), f.data, 0o644); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(f.data)
		sums = append(sums, [2]string{f.name, hex.EncodeToString(sum[:])})
	}
	return sums, nil
}

// bertConfig reads the encoder's shape from a BERT config.json, refusing
// what the encoder graph does not compute.
func bertConfig(b []byte) (onnxgraph.EncoderConfig, error) {
	var v struct {
		ModelType    string  `json:"model_type"`
		HiddenAct    string  `json:"hidden_act"`
		PositionType string  `json:"position_embedding_type"`
		Layers       int     `json:"num_hidden_layers"`
		Hidden       int     `json:"hidden_size"`
		Heads        int     `json:"num_attention_heads"`
		Intermediate int     `json:"intermediate_size"`
		Vocab        int     `json:"vocab_size"`
		MaxPositions int     `json:"max_position_embeddings"`
		TypeVocab    int     `json:"type_vocab_size"`
		Eps          float64 `json:"layer_norm_eps"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return onnxgraph.EncoderConfig{}, fmt.Errorf("config.json: %w", err)
	}
	switch {
	case v.ModelType != "bert":
		return onnxgraph.EncoderConfig{}, fmt.Errorf("config.json: model_type %q, want bert", v.ModelType)
	case v.HiddenAct != "gelu":
		return onnxgraph.EncoderConfig{}, fmt.Errorf("config.json: hidden_act %q, want gelu (erf)", v.HiddenAct)
	case v.PositionType != "" && v.PositionType != "absolute":
		return onnxgraph.EncoderConfig{}, fmt.Errorf("config.json: position_embedding_type %q, want absolute", v.PositionType)
	}
	c := onnxgraph.EncoderConfig{
		Layers: v.Layers, Hidden: v.Hidden, Heads: v.Heads, Intermediate: v.Intermediate,
		VocabSize: v.Vocab, MaxPositions: v.MaxPositions, TypeVocab: v.TypeVocab, LayerNormEps: float32(v.Eps),
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config.json: %w", err)
	}
	return c, nil
}

// bertEncoder reads the weights of a Hugging Face BertModel, with or
// without the "bert." prefix of a model with a task head.
func bertEncoder(st *safetensors, c onnxgraph.EncoderConfig) (*onnxgraph.Encoder, error) {
	prefix := ""
	if !st.has("embeddings.word_embeddings.weight") && st.has("bert.embeddings.word_embeddings.weight") {
		prefix = "bert."
	}
	r := tensorReader{st: st, prefix: prefix}
	h := c.Hidden
	e := &onnxgraph.Encoder{
		Config:             c,
		WordEmbeddings:     r.read("embeddings.word_embeddings.weight", c.VocabSize, h),
		PositionEmbeddings: r.read("embeddings.position_embeddings.weight", c.MaxPositions, h),
		TypeEmbeddings:     r.read("embeddings.token_type_embeddings.weight", c.TypeVocab, h),
		EmbeddingNorm:      r.norm("embeddings.LayerNorm", h),
		ProducerName:       "mcpsag-recipe",
		ProducerVersion:    "1",
		DocString:          "BERT encoder converted from Hugging Face BertModel weights by models/recipe encoder",
	}
	for i := range c.Layers {
		p := "encoder.layer." + strconv.Itoa(i) + "."
		e.Layers = append(e.Layers, onnxgraph.EncoderLayer{
			Query:           r.linear(p+"attention.self.query", h, h),
			Key:             r.linear(p+"attention.self.key", h, h),
			Value:           r.linear(p+"attention.self.value", h, h),
			AttentionOutput: r.linear(p+"attention.output.dense", h, h),
			AttentionNorm:   r.norm(p+"attention.output.LayerNorm", h),
			Intermediate:    r.linear(p+"intermediate.dense", c.Intermediate, h),
			Output:          r.linear(p+"output.dense", h, c.Intermediate),
			OutputNorm:      r.norm(p+"output.LayerNorm", h),
		})
	}
	if r.err != nil {
		return nil, r.err
	}
	return e, nil
}

// tensorReader reads named tensors, keeping the first error.
type tensorReader struct {
	st     *safetensors
	prefix string
	err    error
}

func (r *tensorReader) read(name string, shape ...int) []float32 {
	if r.err != nil {
		return nil
	}
	v, err := r.st.float32s(r.prefix+name, shape...)
	r.err = err
	return v
}

func (r *tensorReader) linear(name string, out, in int) onnxgraph.Linear {
	return onnxgraph.Linear{Weight: r.read(name+".weight", out, in), Bias: r.read(name+".bias", out)}
}

func (r *tensorReader) norm(name string, h int) onnxgraph.LayerNorm {
	return onnxgraph.LayerNorm{Scale: r.read(name+".weight", h), Bias: r.read(name+".bias", h)}
}
