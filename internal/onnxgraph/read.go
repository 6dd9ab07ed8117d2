package onnxgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Static is a static token-embedding model read back from ONNX bytes that
// StaticEmbedding.Marshal wrote: for each token id, Row gives the output row
// exactly as the graph computes it (with the attention mask at 1).
type Static struct {
	VocabSize, Dim int
	Encoding       Encoding
	// Table holds the float32 rows (Float32); Q and Scales the int8 rows
	// and their scales (Int8), whose output row is float32(q)·scale,
	// rounded to float32 as the graph's multiplication rounds it.
	Table  []float32
	Q      []int8
	Scales []float32
}

// ErrNotStatic is returned by ReadStatic for a model that is not a static
// embedding graph of this package.
var ErrNotStatic = errors.New("not a static embedding graph")

// AddRow adds token id's output row to v, value by value.
func (s *Static) AddRow(v []float32, id int) {
	if s.Encoding == Int8 {
		q := s.Q[id*s.Dim : (id+1)*s.Dim]
		scale := s.Scales[id]
		for k, x := range q {
			v[k] += float32(float32(x) * scale)
		}
		return
	}
	for k, x := range s.Table[id*s.Dim : (id+1)*s.Dim] {
		v[k] += x
	}
}

// Row returns token id's output row.
func (s *Static) Row(id int) []float32 {
	v := make([]float32, s.Dim)
	s.AddRow(v, id)
	return v
}

// ReadStatic parses ONNX bytes and returns the static embedding they hold.
// It succeeds only for the exact graph StaticEmbedding.Marshal writes (the
// metadata, every node with its inputs, outputs and attributes, the
// initializers' types and shapes), so evaluating Static gives what any ONNX
// runtime computes for the file; anything else is ErrNotStatic.
func ReadStatic(data []byte) (*Static, error) {
	graphBytes, meta, err := readModel(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotStatic, err)
	}
	if meta["mcpsag.graph"] != "static_embedding" || graphBytes == nil {
		return nil, ErrNotStatic
	}
	dim, err1 := strconv.Atoi(meta["mcpsag.dim"])
	vocab, err2 := strconv.Atoi(meta["mcpsag.vocab_size"])
	if err1 != nil || err2 != nil || dim <= 0 || vocab <= 0 || vocab > maxTensorBytes/dim {
		return nil, fmt.Errorf("%w: dimension %q, vocabulary %q", ErrNotStatic, meta["mcpsag.dim"], meta["mcpsag.vocab_size"])
	}
	s := &Static{VocabSize: vocab, Dim: dim}
	switch meta["mcpsag.encoding"] {
	case Float32.String():
		s.Encoding = Float32
	case Int8.String():
		s.Encoding = Int8
	default:
		return nil, fmt.Errorf("%w: encoding %q", ErrNotStatic, meta["mcpsag.encoding"])
	}
	g, err := readGraph(graphBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotStatic, err)
	}
	init, err := g.staticInitializers(dim, s.Encoding)
	if err != nil {
		return nil, err
	}
	if err := s.readTables(init); err != nil {
		return nil, err
	}
	return s, nil
}

// readModel returns the graph and the metadata of a ModelProto.
func readModel(data []byte) (graph []byte, meta map[string]string, err error) {
	meta = map[string]string{}
	err = fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == 7 && typ == protowire.BytesType:
			graph = v
		case num == 14 && typ == protowire.BytesType:
			var k, val string
			if err := fields(v, func(n protowire.Number, t protowire.Type, b []byte, _ uint64) error {
				if t == protowire.BytesType && n == 1 {
					k = string(b)
				} else if t == protowire.BytesType && n == 2 {
					val = string(b)
				}
				return nil
			}); err != nil {
				return err
			}
			meta[k] = val
		}
		return nil
	})
	return graph, meta, err
}

// staticInitializers checks that g is the graph StaticEmbedding.Marshal
// writes for dim and enc (nodes, inputs, outputs) and returns its
// initializers by name.
func (g *readGraphProto) staticInitializers(dim int, enc Encoding) (map[string]tensor, error) {
	want := (&StaticEmbedding{VocabSize: 1, Dim: dim, Encoding: enc}).graphNodes()
	if len(g.nodes) != len(want) {
		return nil, fmt.Errorf("%w: %d nodes, want %d", ErrNotStatic, len(g.nodes), len(want))
	}
	for i, n := range want {
		if !sameNode(g.nodes[i], n) {
			return nil, fmt.Errorf("%w: node %d (%s) differs", ErrNotStatic, i, g.nodes[i].opType)
		}
	}
	if !slices.Equal(g.inputs, []string{InputIDs, AttentionMask}) || !slices.Equal(g.outputs, []string{LastHiddenState}) {
		return nil, fmt.Errorf("%w: inputs %v, outputs %v", ErrNotStatic, g.inputs, g.outputs)
	}
	init := map[string]tensor{}
	for _, t := range g.initializers {
		init[t.name] = t
	}
	if len(init) != len(g.initializers) {
		return nil, fmt.Errorf("%w: repeated initializer", ErrNotStatic)
	}
	return init, nil
}

// readTables reads s's table (float32) or quantised table and scales
// (int8) from the initializers, which must be those of s's size and
// nothing else.
func (s *Static) readTables(init map[string]tensor) error {
	vocab, dim := s.VocabSize, s.Dim
	check := func(name string, dataType int, dims []int64, size int) ([]byte, error) {
		t, ok := init[name]
		if !ok || t.dataType != dataType || !slices.Equal(t.dims, dims) || len(t.raw) != size {
			return nil, fmt.Errorf("%w: initializer %s", ErrNotStatic, name)
		}
		return t.raw, nil
	}
	switch s.Encoding {
	case Float32:
		if len(init) != 1 {
			return fmt.Errorf("%w: %d initializers", ErrNotStatic, len(init))
		}
		raw, err := check("embeddings", dataFloat, []int64{int64(vocab), int64(dim)}, 4*vocab*dim)
		if err != nil {
			return err
		}
		s.Table = make([]float32, vocab*dim)
		for i := range s.Table {
			s.Table[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case Int8:
		if len(init) != 2 {
			return fmt.Errorf("%w: %d initializers", ErrNotStatic, len(init))
		}
		q, err := check("embeddings_int8", dataInt8, []int64{int64(vocab), int64(dim)}, vocab*dim)
		if err != nil {
			return err
		}
		sc, err := check("embeddings_scale", dataFloat, []int64{int64(vocab), 1}, 4*vocab)
		if err != nil {
			return err
		}
		s.Q = make([]int8, len(q))
		for i, b := range q {
			s.Q[i] = int8(b)
		}
		s.Scales = make([]float32, vocab)
		for i := range s.Scales {
			s.Scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(sc[4*i:]))
		}
	}
	return nil
}

// sameNode compares a node read from a file with one this package writes.
func sameNode(a, b node) bool {
	if a.opType != b.opType || !slices.Equal(a.inputs, b.inputs) || !slices.Equal(a.outputs, b.outputs) || len(a.attrs) != len(b.attrs) {
		return false
	}
	for i, x := range a.attrs {
		y := b.attrs[i]
		if x.name != y.name || x.typ != y.typ || x.i != y.i || math.Float32bits(x.f) != math.Float32bits(y.f) ||
			!slices.Equal(x.ints, y.ints) || (x.t == nil) != (y.t == nil) {
			return false
		}
		if x.t != nil && (x.t.dataType != y.t.dataType || !slices.Equal(x.t.dims, y.t.dims) || string(x.t.raw) != string(y.t.raw)) {
			return false
		}
	}
	return true
}

// readGraphProto is what readGraph keeps of a GraphProto.
type readGraphProto struct {
	nodes           []node
	initializers    []tensor
	inputs, outputs []string
}

// readGraph parses the parts of a GraphProto the check needs.
func readGraph(data []byte) (*readGraphProto, error) {
	g := &readGraphProto{}
	err := fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			n, err := readNode(v)
			if err != nil {
				return err
			}
			g.nodes = append(g.nodes, n)
		case 5:
			t, err := readTensor(v)
			if err != nil {
				return err
			}
			g.initializers = append(g.initializers, t)
		case 11, 12:
			var name string
			if err := fields(v, func(n protowire.Number, t protowire.Type, b []byte, _ uint64) error {
				if n == 1 && t == protowire.BytesType {
					name = string(b)
				}
				return nil
			}); err != nil {
				return err
			}
			if num == 11 {
				g.inputs = append(g.inputs, name)
			} else {
				g.outputs = append(g.outputs, name)
			}
		}
		return nil
	})
	return g, err
}

func readNode(data []byte) (node, error) {
	var n node
	err := fields(data, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			n.inputs = append(n.inputs, string(v))
		case 2:
			n.outputs = append(n.outputs, string(v))
		case 4:
			n.opType = string(v)
		case 5:
			a, err := readAttribute(v)
			if err != nil {
				return err
			}
			n.attrs = append(n.attrs, a)
		}
		return nil
	})
	return n, err
}

// readAttribute parses an AttributeProto: its name, type, and an INT,
// FLOAT, INTS (packed or not) or TENSOR value.
func readAttribute(data []byte) (attribute, error) {
	var a attribute
	err := fields(data, func(an protowire.Number, at protowire.Type, av []byte, x uint64) error {
		switch {
		case an == 1 && at == protowire.BytesType:
			a.name = string(av)
		case an == 2 && at == protowire.Fixed32Type:
			a.f = math.Float32frombits(uint32(x))
		case an == 3 && at == protowire.VarintType:
			a.i = int64(x)
		case an == 5 && at == protowire.BytesType:
			t, err := readTensor(av)
			if err != nil {
				return err
			}
			a.t = &t
		case an == 8 && at == protowire.BytesType:
			var err error
			a.ints, err = appendPacked(a.ints, av)
			return err
		case an == 8 && at == protowire.VarintType:
			a.ints = append(a.ints, int64(x))
		case an == 20 && at == protowire.VarintType:
			a.typ = int(x)
		}
		return nil
	})
	if a.typ == attrInt || a.typ == attrTensor {
		a.typ = 0 // as this package writes them
	}
	return a, err
}

// appendPacked appends the packed varints of v to dst.
func appendPacked(dst []int64, v []byte) ([]int64, error) {
	for len(v) > 0 {
		x, n := protowire.ConsumeVarint(v)
		if n < 0 {
			return dst, protowire.ParseError(n)
		}
		dst = append(dst, int64(x))
		v = v[n:]
	}
	return dst, nil
}

func readTensor(data []byte) (tensor, error) {
	var t tensor
	err := fields(data, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType: // packed dims
			var err error
			t.dims, err = appendPacked(t.dims, v)
			return err
		case num == 1 && typ == protowire.VarintType:
			t.dims = append(t.dims, int64(x))
		case num == 2 && typ == protowire.VarintType:
			t.dataType = int(x)
		case num == 8 && typ == protowire.BytesType:
			t.name = string(v)
		case num == 9 && typ == protowire.BytesType:
			t.raw = v
		}
		return nil
	})
	return t, err
}

// fields calls f for every field of a protobuf message: bytes fields with
// their content, varint and fixed32 fields with their value.
func fields(data []byte, f func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error) error {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 {
			return protowire.ParseError(n)
		}
		data = data[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(data)
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(data)
		case protowire.Fixed32Type:
			var x32 uint32
			x32, n = protowire.ConsumeFixed32(data)
			x = uint64(x32)
		default:
			n = protowire.ConsumeFieldValue(num, typ, data)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		data = data[n:]
		if err := f(num, typ, v, x); err != nil {
			return err
		}
	}
	return nil
}
