package onnxgraph

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// ReadEncoder parses ONNX bytes and returns the encoder they hold, with its
// weights dequantised exactly as the graph dequantises them (each value
// float32(q)·scale, rounded to float32). It succeeds only for the exact
// graph Encoder.Marshal writes: the format's metadata and version, every
// node with its inputs, outputs and attributes, the graph's inputs and
// output, and every initializer's name, type and shape. For anything else
// it returns an error wrapping ErrNotEncoder, so that a caller can leave
// other models to an ONNX runtime.
func ReadEncoder(data []byte) (*Encoder, error) {
	graphBytes, meta, err := readModel(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEncoder, err)
	}
	if meta["mcpsag.graph"] != encoderGraphName || graphBytes == nil {
		return nil, ErrNotEncoder
	}
	if v := meta["mcpsag.format_version"]; v != encoderFormatVersion {
		return nil, fmt.Errorf("%w: format version %q, want %s", ErrNotEncoder, v, encoderFormatVersion)
	}
	c, err := configFromMetadata(meta)
	if err != nil {
		return nil, err
	}
	g, err := readGraph(graphBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotEncoder, err)
	}
	specs, err := checkEncoderGraph(g, c)
	if err != nil {
		return nil, err
	}
	e := &Encoder{Config: c, Layers: make([]EncoderLayer, c.Layers)}
	if err := e.readWeights(g, specs); err != nil {
		return nil, err
	}
	for k, v := range meta {
		if !isEncoderKey(k) {
			e.Metadata = append(e.Metadata, [2]string{k, v})
		}
	}
	slices.SortFunc(e.Metadata, func(a, b [2]string) int { return compareStrings(a[0], b[0]) })
	return e, nil
}

// checkEncoderGraph checks that g is the graph Encoder.Marshal writes for c
// (nodes, inputs, output, and every initializer's name, type, shape and
// size) and returns the initializers' specs.
func checkEncoderGraph(g *readGraphProto, c EncoderConfig) ([]tensorSpec, error) {
	nodes, specs := encoderGraph(c)
	if len(g.nodes) != len(nodes) {
		return nil, fmt.Errorf("%w: %d nodes, want %d", ErrNotEncoder, len(g.nodes), len(nodes))
	}
	for i, n := range nodes {
		if !sameNode(g.nodes[i], n) {
			return nil, fmt.Errorf("%w: node %d (%s %s) differs", ErrNotEncoder, i, g.nodes[i].opType, n.name)
		}
	}
	if !slices.Equal(g.inputs, []string{InputIDs, AttentionMask, TokenTypeIDs}) || !slices.Equal(g.outputs, []string{LastHiddenState}) {
		return nil, fmt.Errorf("%w: inputs %v, outputs %v", ErrNotEncoder, g.inputs, g.outputs)
	}
	if len(g.initializers) != len(specs) {
		return nil, fmt.Errorf("%w: %d initializers, want %d", ErrNotEncoder, len(g.initializers), len(specs))
	}
	for i, s := range specs {
		t := g.initializers[i]
		if t.name != s.name || t.dataType != s.dataType || !slices.Equal(t.dims, s.dims) || len(t.raw) != rawSize(s) {
			return nil, fmt.Errorf("%w: initializer %d is %s %d %s of %d bytes, want %s", ErrNotEncoder,
				i, t.name, t.dataType, formatDims(t.dims), len(t.raw), describeSpec(s))
		}
	}
	return specs, nil
}

// readWeights reads the initializers of g, checked against specs, into
// e's weights, dequantising the quantised ones.
func (e *Encoder) readWeights(g *readGraphProto, specs []tensorSpec) error {
	values := e.tensorSlots()
	for i := 0; i < len(specs); i++ {
		s, raw := specs[i], g.initializers[i].raw
		dst := values[s.source]
		switch s.role {
		case roleFloat:
			*dst = readFloats(raw)
		case roleQuantized: // the next spec is its scales
			*dst = dequantize(raw, readFloats(g.initializers[i+1].raw), int(s.dims[1]))
			i++
		}
		if err := finite(s.source, *dst); err != nil {
			return err
		}
	}
	return nil
}

// configFromMetadata reads the config that the encoder's metadata records.
func configFromMetadata(meta map[string]string) (EncoderConfig, error) {
	var c EncoderConfig
	ints := []struct {
		key string
		dst *int
	}{
		{"mcpsag.layers", &c.Layers}, {"mcpsag.hidden", &c.Hidden}, {"mcpsag.heads", &c.Heads},
		{"mcpsag.intermediate", &c.Intermediate}, {"mcpsag.vocab_size", &c.VocabSize},
		{"mcpsag.max_positions", &c.MaxPositions}, {"mcpsag.type_vocab_size", &c.TypeVocab},
	}
	for _, f := range ints {
		v, err := strconv.Atoi(meta[f.key])
		if err != nil {
			return c, fmt.Errorf("%w: metadata %s %q", ErrNotEncoder, f.key, meta[f.key])
		}
		*f.dst = v
	}
	eps, err := strconv.ParseFloat(meta["mcpsag.layer_norm_eps"], 32)
	if err != nil {
		return c, fmt.Errorf("%w: metadata mcpsag.layer_norm_eps %q", ErrNotEncoder, meta["mcpsag.layer_norm_eps"])
	}
	c.LayerNormEps = float32(eps)
	if meta["mcpsag.encoding"] != Int8.String() {
		return c, fmt.Errorf("%w: encoding %q", ErrNotEncoder, meta["mcpsag.encoding"])
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrNotEncoder, err)
	}
	return c, nil
}

// tensorSlots returns pointers to e's weights by the names encoderGraph
// gives them.
func (e *Encoder) tensorSlots() map[string]*[]float32 {
	v := map[string]*[]float32{
		"embeddings.word":       &e.WordEmbeddings,
		"embeddings.position":   &e.PositionEmbeddings,
		"embeddings.token_type": &e.TypeEmbeddings,
		"embeddings.norm.scale": &e.EmbeddingNorm.Scale,
		"embeddings.norm.bias":  &e.EmbeddingNorm.Bias,
	}
	for i := range e.Layers {
		for name, p := range e.Layers[i].params() {
			v[layerName(i, name)] = p
		}
	}
	return v
}

func isEncoderKey(k string) bool {
	for _, kv := range encoderMetadata(EncoderConfig{}) {
		if kv[0] == k {
			return true
		}
	}
	return false
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rawSize is the byte size of an initializer of spec s.
func rawSize(s tensorSpec) int {
	n := 1
	for _, d := range s.dims {
		n *= int(d)
	}
	if s.dataType == dataInt8 {
		return n
	}
	return 4 * n
}

func readFloats(raw []byte) []float32 {
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

// dequantize returns the int8 rows q (cols values each) times their
// scales, as the graph's Cast and Mul compute them.
func dequantize(q []byte, scales []float32, cols int) []float32 {
	v := make([]float32, len(q))
	for i, b := range q {
		v[i] = float32(int8(b)) * scales[i/cols]
	}
	return v
}

func finite(name string, v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: %s value %d is %v", ErrNotEncoder, name, i, x)
		}
	}
	return nil
}
