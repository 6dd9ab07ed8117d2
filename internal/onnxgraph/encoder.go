package onnxgraph

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// TokenTypeIDs is the third input of an encoder graph, beside InputIDs and
// AttentionMask (int64, [batch, sequence]).
const TokenTypeIDs = "token_type_ids"

// The encoder graph's format, recorded in its metadata; ReadEncoder reads
// only this version.
const (
	encoderGraphName     = "bert_encoder"
	encoderFormatVersion = "1"
)

// EncoderConfig is the shape of a BERT encoder.
type EncoderConfig struct {
	Layers       int // transformer layers
	Hidden       int // hidden size, a multiple of Heads
	Heads        int // attention heads
	Intermediate int // feed-forward size
	VocabSize    int // rows of the word embedding table
	MaxPositions int // rows of the position embedding table: the longest sequence
	TypeVocab    int // rows of the token type embedding table
	// LayerNormEps is the epsilon of every layer normalisation.
	LayerNormEps float32
}

// HeadDim returns the size of one attention head.
func (c EncoderConfig) HeadDim() int { return c.Hidden / c.Heads }

// Validate checks that the sizes are positive, that Hidden splits into
// Heads and that every table fits one ONNX tensor.
func (c EncoderConfig) Validate() error {
	if c.Layers <= 0 || c.Hidden <= 0 || c.Heads <= 0 || c.Intermediate <= 0 || c.VocabSize <= 0 || c.MaxPositions <= 0 || c.TypeVocab <= 0 {
		return fmt.Errorf("encoder config %+v: every size must be positive", c)
	}
	if c.Hidden%c.Heads != 0 {
		return fmt.Errorf("encoder config: hidden size %d is not a multiple of %d heads", c.Hidden, c.Heads)
	}
	if !(c.LayerNormEps > 0) || math.IsInf(float64(c.LayerNormEps), 0) {
		return fmt.Errorf("encoder config: layer norm epsilon %v must be positive and finite", c.LayerNormEps)
	}
	for _, rows := range []int{c.VocabSize, c.MaxPositions, c.TypeVocab, c.Intermediate} {
		if rows > maxTensorBytes/4/max(c.Hidden, c.Intermediate) {
			return fmt.Errorf("encoder config: a %d-row table is too large for one ONNX tensor", rows)
		}
	}
	return nil
}

// Linear is a dense layer y = x·Wᵀ + b: Weight is row-major [out, in], one
// row per output, and Bias has one value per output.
type Linear struct {
	Weight []float32
	Bias   []float32
}

// LayerNorm holds a layer normalisation's scale (gamma) and bias (beta).
type LayerNorm struct {
	Scale []float32
	Bias  []float32
}

// EncoderLayer is one transformer layer of a BERT encoder (post-norm).
type EncoderLayer struct {
	Query, Key, Value Linear // [Hidden, Hidden] each
	AttentionOutput   Linear // [Hidden, Hidden]
	AttentionNorm     LayerNorm
	Intermediate      Linear // [Intermediate, Hidden], followed by GELU (erf)
	Output            Linear // [Hidden, Intermediate]
	OutputNorm        LayerNorm
}

// Encoder is a BERT-style transformer encoder, the graph behind models such
// as all-MiniLM-L6-v2: word, position and token type embeddings summed and
// normalised, then Layers post-norm transformer layers with GELU (erf).
// Inputs: input_ids, attention_mask and token_type_ids (int64, [batch,
// sequence]); output: last_hidden_state (float32, [batch, sequence,
// Hidden]). Pooling happens in the embedder.
//
// In the ONNX file every weight matrix and embedding table is stored as
// int8 with one float32 scale per row (symmetric, scale = max|row|/127) and
// dequantised in the graph; biases and normalisation parameters are
// float32. The attention mask adds (1 - mask)·-10000 to the scores, as BERT
// does; positions run from 0 to sequence-1.
type Encoder struct {
	Config EncoderConfig
	// Embedding tables, row-major [rows, Hidden].
	WordEmbeddings, PositionEmbeddings, TypeEmbeddings []float32
	EmbeddingNorm                                      LayerNorm
	Layers                                             []EncoderLayer

	ProducerName, ProducerVersion, DocString string
	// Metadata is written as the model's metadata_props after the format's
	// own keys, in the order given; ReadEncoder returns it sorted by key.
	// Optional.
	Metadata [][2]string
}

// Marshal returns the encoder as ONNX protobuf bytes: the same encoder
// gives the same bytes. It returns an error when a size does not match the
// config or a weight is NaN or infinite.
func (e *Encoder) Marshal() ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	c := e.Config
	nodes, specs := encoderGraph(c)
	values := e.tensors()
	g := graph{
		name:  encoderGraphName,
		nodes: nodes,
		inputs: []valueInfo{
			{name: InputIDs, elemType: dataInt64, shape: []dim{{param: "batch"}, {param: "sequence"}}},
			{name: AttentionMask, elemType: dataInt64, shape: []dim{{param: "batch"}, {param: "sequence"}}},
			{name: TokenTypeIDs, elemType: dataInt64, shape: []dim{{param: "batch"}, {param: "sequence"}}},
		},
		outputs: []valueInfo{
			{name: LastHiddenState, elemType: dataFloat, shape: []dim{{param: "batch"}, {param: "sequence"}, {value: int64(c.Hidden)}}},
		},
	}
	quantized := map[string][]float32{} // scales by table name
	for _, s := range specs {
		t := tensor{name: s.name, dataType: s.dataType, dims: s.dims}
		switch s.role {
		case roleQuantized:
			q, scales := quantizeRows(values[s.source], int(s.dims[0]), int(s.dims[1]))
			t.raw = q
			quantized[s.source] = scales
		case roleScale:
			t.raw = float32Bytes(quantized[s.source])
		case roleFloat:
			t.raw = float32Bytes(values[s.source])
		}
		g.initializers = append(g.initializers, t)
	}
	mp := model{
		producerName:    e.ProducerName,
		producerVersion: e.ProducerVersion,
		docString:       e.DocString,
		graph:           g,
		metadata:        append(encoderMetadata(c), e.Metadata...),
	}
	return mp.marshal(), nil
}

// WriteFile marshals the encoder and writes it to path atomically.
func (e *Encoder) WriteFile(path string) error {
	b, err := e.Marshal()
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// encoderMetadata returns the metadata that names the format and its
// shape; ReadEncoder reads the config back from it.
func encoderMetadata(c EncoderConfig) [][2]string {
	return [][2]string{
		{"mcpsag.graph", encoderGraphName},
		{"mcpsag.format_version", encoderFormatVersion},
		{"mcpsag.encoding", Int8.String()},
		{"mcpsag.layers", strconv.Itoa(c.Layers)},
		{"mcpsag.hidden", strconv.Itoa(c.Hidden)},
		{"mcpsag.heads", strconv.Itoa(c.Heads)},
		{"mcpsag.intermediate", strconv.Itoa(c.Intermediate)},
		{"mcpsag.vocab_size", strconv.Itoa(c.VocabSize)},
		{"mcpsag.max_positions", strconv.Itoa(c.MaxPositions)},
		{"mcpsag.type_vocab_size", strconv.Itoa(c.TypeVocab)},
		{"mcpsag.layer_norm_eps", strconv.FormatFloat(float64(c.LayerNormEps), 'g', -1, 32)},
	}
}

// tensors returns every weight of e by the name encoderGraph gives it.
func (e *Encoder) tensors() map[string][]float32 {
	v := map[string][]float32{
		"embeddings.word":       e.WordEmbeddings,
		"embeddings.position":   e.PositionEmbeddings,
		"embeddings.token_type": e.TypeEmbeddings,
		"embeddings.norm.scale": e.EmbeddingNorm.Scale,
		"embeddings.norm.bias":  e.EmbeddingNorm.Bias,
	}
	for i := range e.Layers {
		for name, p := range e.Layers[i].params() {
			v[layerName(i, name)] = *p
		}
	}
	return v
}

// params returns pointers to l's weights by their names within a layer.
func (l *EncoderLayer) params() map[string]*[]float32 {
	return map[string]*[]float32{
		"query":                 &l.Query.Weight,
		"query.bias":            &l.Query.Bias,
		"key":                   &l.Key.Weight,
		"key.bias":              &l.Key.Bias,
		"value":                 &l.Value.Weight,
		"value.bias":            &l.Value.Bias,
		"attention_output":      &l.AttentionOutput.Weight,
		"attention_output.bias": &l.AttentionOutput.Bias,
		"attention_norm.scale":  &l.AttentionNorm.Scale,
		"attention_norm.bias":   &l.AttentionNorm.Bias,
		"intermediate":          &l.Intermediate.Weight,
		"intermediate.bias":     &l.Intermediate.Bias,
		"output":                &l.Output.Weight,
		"output.bias":           &l.Output.Bias,
		"output_norm.scale":     &l.OutputNorm.Scale,
		"output_norm.bias":      &l.OutputNorm.Bias,
	}
}

func layerName(i int, name string) string { return "layer." + strconv.Itoa(i) + "." + name }

// validate checks e's sizes against its config and its values for NaN and
// infinities.
func (e *Encoder) validate() error {
	c := e.Config
	if err := c.Validate(); err != nil {
		return err
	}
	if len(e.Layers) != c.Layers {
		return fmt.Errorf("encoder: %d layers, config says %d", len(e.Layers), c.Layers)
	}
	_, specs := encoderGraph(c)
	values := e.tensors()
	for _, s := range specs {
		if s.role == roleScale {
			continue
		}
		want := 1
		for _, d := range s.dims {
			want *= int(d)
		}
		v := values[s.source]
		if len(v) != want {
			return fmt.Errorf("encoder: %s has %d values, want %d", s.source, len(v), want)
		}
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("encoder: %s value %d is %v", s.source, i, x)
			}
		}
	}
	return nil
}

// QuantizeRows returns a row-major [rows, cols] matrix or table as the
// encoder graph stores it: int8 values and one scale per row, each value
// standing for float32(q)·scale. Quantizing values that ReadEncoder
// returned gives back the stored values, and scales within a unit in the
// last place of the stored ones.
func QuantizeRows(v []float32, rows, cols int) ([]int8, []float32) {
	b, scales := quantizeRows(v, rows, cols)
	q := make([]int8, len(b))
	for i, x := range b {
		q[i] = int8(x)
	}
	return q, scales
}

// ErrNotEncoder is returned by ReadEncoder for a model that is not an
// encoder graph of this package.
var ErrNotEncoder = errors.New("not an encoder graph")
