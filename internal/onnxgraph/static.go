package onnxgraph

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// Encoding selects how StaticEmbedding stores its table in the ONNX file.
type Encoding int

const (
	// Float32 stores the table as float32: 4 bytes per value, exact.
	Float32 Encoding = iota
	// Int8 stores each row as int8 values times one float32 scale per row
	// (symmetric quantisation, scale = max|row|/127): about a quarter of the
	// Float32 size, with a relative error per value of at most 1/254 of the
	// row's largest value. The graph gathers the int8 rows and scales first,
	// then dequantises only the looked-up rows.
	//
	// Float16 would be the obvious middle ground, but onnx-gomlx (hugot's
	// pure-Go backend) cannot load FLOAT16 tensors.
	Int8
)

func (e Encoding) String() string {
	switch e {
	case Float32:
		return "float32"
	case Int8:
		return "int8"
	}
	return "encoding(" + strconv.Itoa(int(e)) + ")"
}

// Graph input and output names, the Hugging Face feature-extraction ones.
const (
	InputIDs        = "input_ids"
	AttentionMask   = "attention_mask"
	LastHiddenState = "last_hidden_state"
)

// maxTensorBytes keeps one tensor below protobuf's 2 GiB message limit.
const maxTensorBytes = math.MaxInt32 - 1<<20

// StaticEmbedding is a static token-embedding model: for each token id, the output
// row is Table[id]. Inputs: input_ids and attention_mask (int64, [batch, sequence]);
// output: last_hidden_state (float32, [batch, sequence, Dim]). Mean pooling with the
// attention mask and L2 normalisation happen in the embedder, as for any
// sentence-transformer, so per-token weights can be baked into the rows.
//
// Rows at positions where attention_mask is 0 are zero. Token ids must be in
// [0, VocabSize); the tokenizer that goes with the model guarantees that.
type StaticEmbedding struct {
	VocabSize, Dim int
	Table          []float32 // row-major, VocabSize*Dim
	ProducerName   string
	DocString      string

	// ProducerVersion is recorded in the model, optional.
	ProducerVersion string
	// Encoding selects the table's storage; the zero value is Float32.
	Encoding Encoding
	// Metadata is written as the model's metadata_props, in key order as
	// given. Optional.
	Metadata [][2]string
}

// Marshal returns the model as ONNX protobuf bytes. It returns an error if
// the sizes do not match the table, the table holds NaN or infinite values,
// or the table is too large for one ONNX tensor.
func (m *StaticEmbedding) Marshal() ([]byte, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	g := graph{
		name: "static_embedding",
		inputs: []valueInfo{
			{name: InputIDs, elemType: dataInt64, shape: []dim{{param: "batch"}, {param: "sequence"}}},
			{name: AttentionMask, elemType: dataInt64, shape: []dim{{param: "batch"}, {param: "sequence"}}},
		},
		outputs: []valueInfo{
			{name: LastHiddenState, elemType: dataFloat, shape: []dim{{param: "batch"}, {param: "sequence"}, {value: int64(m.Dim)}}},
		},
	}
	g.nodes = m.graphNodes()
	dims := []int64{int64(m.VocabSize), int64(m.Dim)}
	switch m.Encoding {
	case Float32:
		g.initializers = append(g.initializers, tensor{name: "embeddings", dataType: dataFloat, dims: dims, raw: float32Bytes(m.Table)})
	case Int8:
		q, scales := quantizeRows(m.Table, m.VocabSize, m.Dim)
		g.initializers = append(g.initializers,
			tensor{name: "embeddings_int8", dataType: dataInt8, dims: dims, raw: q},
			// Scales are stored as [VocabSize, 1]: the gather then yields
			// [batch, sequence, 1] directly (onnx-gomlx cannot gather from a
			// rank-1 tensor with rank-2 indices).
			tensor{name: "embeddings_scale", dataType: dataFloat, dims: []int64{int64(m.VocabSize), 1}, raw: float32Bytes(scales)},
		)
	}
	md := append([][2]string{
		{"mcpsag.graph", "static_embedding"},
		{"mcpsag.dim", strconv.Itoa(m.Dim)},
		{"mcpsag.vocab_size", strconv.Itoa(m.VocabSize)},
		{"mcpsag.encoding", m.Encoding.String()},
	}, m.Metadata...)
	mp := model{
		producerName:    m.ProducerName,
		producerVersion: m.ProducerVersion,
		docString:       m.DocString,
		graph:           g,
		metadata:        md,
	}
	return mp.marshal(), nil
}

// graphNodes returns the graph's nodes for m's encoding.
func (m *StaticEmbedding) graphNodes() []node {
	// The mask, shaped [batch, sequence, 1] as float, zeroes padded rows.
	// Unsqueeze takes its axes from a Constant node rather than an
	// initializer: onnx-gomlx must see the axes as a constant at graph build
	// time and treats initializers as variables.
	axes := tensor{name: "mask_axes_value", dataType: dataInt64, dims: []int64{1}, raw: int64Bytes(2)}
	nodes := []node{
		{opType: "Constant", name: "mask_axes", outputs: []string{"mask_axes"},
			attrs: []attribute{{name: "value", t: &axes}}},
		{opType: "Unsqueeze", name: "mask_unsqueeze", inputs: []string{AttentionMask, "mask_axes"}, outputs: []string{"mask3"}},
		{opType: "Cast", name: "mask_cast", inputs: []string{"mask3"}, outputs: []string{"mask3f"},
			attrs: []attribute{{name: "to", i: dataFloat}}},
	}
	switch m.Encoding {
	case Float32:
		nodes = append(nodes,
			node{opType: "Gather", name: "lookup", inputs: []string{"embeddings", InputIDs}, outputs: []string{"rows"},
				attrs: []attribute{{name: "axis", i: 0}}},
			node{opType: "Mul", name: "mask_rows", inputs: []string{"rows", "mask3f"}, outputs: []string{LastHiddenState}},
		)
	case Int8:
		nodes = append(nodes,
			node{opType: "Gather", name: "lookup", inputs: []string{"embeddings_int8", InputIDs}, outputs: []string{"rows_int8"},
				attrs: []attribute{{name: "axis", i: 0}}},
			node{opType: "Cast", name: "dequantize", inputs: []string{"rows_int8"}, outputs: []string{"rows_unscaled"},
				attrs: []attribute{{name: "to", i: dataFloat}}},
			node{opType: "Gather", name: "lookup_scale", inputs: []string{"embeddings_scale", InputIDs}, outputs: []string{"scales3"},
				attrs: []attribute{{name: "axis", i: 0}}},
			node{opType: "Mul", name: "mask_scales", inputs: []string{"scales3", "mask3f"}, outputs: []string{"row_factor"}},
			node{opType: "Mul", name: "scale_rows", inputs: []string{"rows_unscaled", "row_factor"}, outputs: []string{LastHiddenState}},
		)
	}
	return nodes
}

// WriteFile marshals the model and writes it to path atomically: it writes a
// temporary file in the same directory and renames it over path.
func (m *StaticEmbedding) WriteFile(path string) error {
	b, err := m.Marshal()
	if err != nil {
		return err
	}
	return writeAtomic(path, b)
}

// writeAtomic writes b to path through a temporary file in the same
// directory renamed over path.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".onnxgraph-*")
	if err != nil {
		return fmt.Errorf("write onnx model %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write onnx model %s: %w", path, err)
	}
	return nil
}

func (m *StaticEmbedding) validate() error {
	if m.VocabSize <= 0 || m.Dim <= 0 {
		return fmt.Errorf("static embedding: VocabSize %d and Dim %d must be positive", m.VocabSize, m.Dim)
	}
	if m.VocabSize > maxTensorBytes/m.Dim/4 {
		return fmt.Errorf("static embedding: table %dx%d is too large for one ONNX tensor", m.VocabSize, m.Dim)
	}
	if len(m.Table) != m.VocabSize*m.Dim {
		return fmt.Errorf("static embedding: table has %d values, want VocabSize*Dim = %d", len(m.Table), m.VocabSize*m.Dim)
	}
	if m.Encoding != Float32 && m.Encoding != Int8 {
		return fmt.Errorf("static embedding: unknown encoding %v", m.Encoding)
	}
	for i, v := range m.Table {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("static embedding: table value %d (row %d) is %v", i, i/m.Dim, v)
		}
	}
	return nil
}

// Dequantized returns the table as the model computes it: Table itself for
// Float32, and the dequantised rows for Int8. Tests and model builders use
// it to compute expected outputs.
func (m *StaticEmbedding) Dequantized() []float32 {
	if m.Encoding != Int8 {
		return m.Table
	}
	q, scales := quantizeRows(m.Table, m.VocabSize, m.Dim)
	out := make([]float32, len(q))
	for i, v := range q {
		out[i] = float32(int8(v)) * scales[i/m.Dim]
	}
	return out
}

// quantizeRows returns the table as int8 bytes and one scale per row, with
// scale = max|row|/127 (1 for an all-zero row, which stays zero).
func quantizeRows(table []float32, rows, dim int) ([]byte, []float32) {
	q := make([]byte, len(table))
	scales := make([]float32, rows)
	for r := range rows {
		row := table[r*dim : (r+1)*dim]
		var maxAbs float32
		for _, v := range row {
			maxAbs = max(maxAbs, float32(math.Abs(float64(v))))
		}
		scale := float32(1)
		if maxAbs > 0 {
			scale = maxAbs / 127
		}
		scales[r] = scale
		for i, v := range row {
			x := math.Round(float64(v / scale))
			x = max(-127, min(127, x))
			q[r*dim+i] = byte(int8(x))
		}
	}
	return q, scales
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func int64Bytes(v ...int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}
