package onnxgraph

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file encodes the subset of onnx.proto (ONNX IR version 8) that the
// writers in this package need. Field numbers come from onnx/onnx.proto3;
// every message below lists the fields it writes.

// ONNX tensor element types (TensorProto.DataType).
const (
	dataFloat = 1
	dataInt8  = 3
	dataInt64 = 7
)

// AttributeProto.AttributeType values.
const (
	attrFloat  = 1
	attrInt    = 2
	attrTensor = 4
	attrInts   = 7
)

const (
	irVersion = 8  // ONNX 1.10+; pairs with opset 17 below
	opset     = 17 // default ("ai.onnx") domain
)

// model is ModelProto: 1 ir_version, 2 producer_name, 3 producer_version,
// 6 doc_string, 7 graph, 8 opset_import, 14 metadata_props.
type model struct {
	producerName    string
	producerVersion string
	docString       string
	graph           graph
	metadata        [][2]string // ordered key/value pairs
}

func (m *model) marshal() []byte {
	var b []byte
	b = appendVarintField(b, 1, irVersion)
	b = appendStringField(b, 2, m.producerName)
	b = appendStringField(b, 3, m.producerVersion)
	b = appendStringField(b, 6, m.docString)
	b = appendMessageField(b, 7, m.graph.marshal())
	// OperatorSetIdProto: 1 domain (empty = ai.onnx), 2 version.
	b = appendMessageField(b, 8, appendVarintField(nil, 2, opset))
	for _, kv := range m.metadata {
		// StringStringEntryProto: 1 key, 2 value.
		e := appendStringField(nil, 1, kv[0])
		e = appendStringField(e, 2, kv[1])
		b = appendMessageField(b, 14, e)
	}
	return b
}

// graph is GraphProto: 1 node, 2 name, 5 initializer, 11 input, 12 output.
type graph struct {
	name         string
	nodes        []node
	initializers []tensor
	inputs       []valueInfo
	outputs      []valueInfo
}

func (g *graph) marshal() []byte {
	var b []byte
	for _, n := range g.nodes {
		b = appendMessageField(b, 1, n.marshal())
	}
	b = appendStringField(b, 2, g.name)
	for _, t := range g.initializers {
		b = appendMessageField(b, 5, t.marshal())
	}
	for _, v := range g.inputs {
		b = appendMessageField(b, 11, v.marshal())
	}
	for _, v := range g.outputs {
		b = appendMessageField(b, 12, v.marshal())
	}
	return b
}

// node is NodeProto: 1 input, 2 output, 3 name, 4 op_type, 5 attribute.
type node struct {
	opType  string
	name    string
	inputs  []string
	outputs []string
	attrs   []attribute
}

func (n *node) marshal() []byte {
	var b []byte
	b = appendRepeatedString(b, 1, n.inputs)
	b = appendRepeatedString(b, 2, n.outputs)
	b = appendStringField(b, 3, n.name)
	b = appendStringField(b, 4, n.opType)
	for _, a := range n.attrs {
		b = appendMessageField(b, 5, a.marshal())
	}
	return b
}

// attribute is AttributeProto: 1 name, 2 f, 3 i, 5 t, 8 ints, 20 type.
// INT, FLOAT, INTS and TENSOR attributes are written; typ says which (the
// zero value is INT).
type attribute struct {
	name string
	typ  int
	i    int64
	f    float32
	ints []int64
	t    *tensor // set for a TENSOR attribute
}

func (a *attribute) marshal() []byte {
	b := appendStringField(nil, 1, a.name)
	switch {
	case a.t != nil:
		b = appendMessageField(b, 5, a.t.marshal())
		return appendVarintField(b, 20, attrTensor)
	case a.typ == attrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
		return appendVarintField(b, 20, attrFloat)
	case a.typ == attrInts:
		var packed []byte
		for _, v := range a.ints {
			packed = protowire.AppendVarint(packed, uint64(v))
		}
		b = appendMessageField(b, 8, packed)
		return appendVarintField(b, 20, attrInts)
	}
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(a.i))
	return appendVarintField(b, 20, attrInt)
}

// tensor is TensorProto: 1 dims (packed), 2 data_type, 8 name, 9 raw_data.
// raw_data is little-endian, row-major, as ONNX requires.
type tensor struct {
	name     string
	dataType int
	dims     []int64
	raw      []byte
}

func (t *tensor) marshal() []byte {
	var dims []byte
	for _, d := range t.dims {
		dims = protowire.AppendVarint(dims, uint64(d))
	}
	var b []byte
	if len(t.dims) > 0 {
		b = appendMessageField(b, 1, dims)
	}
	b = appendVarintField(b, 2, uint64(t.dataType))
	b = appendStringField(b, 8, t.name)
	b = protowire.AppendTag(b, 9, protowire.BytesType)
	return protowire.AppendBytes(b, t.raw)
}

// dim is one TensorShapeProto.Dimension: a fixed size or a symbolic name.
type dim struct {
	value int64
	param string // symbolic dimension such as "batch"; wins over value
}

// valueInfo is ValueInfoProto (1 name, 2 type) holding a tensor type:
// TypeProto 1 tensor_type -> Tensor (1 elem_type, 2 shape) ->
// TensorShapeProto 1 dim -> Dimension (1 dim_value | 2 dim_param).
type valueInfo struct {
	name     string
	elemType int
	shape    []dim
}

func (v *valueInfo) marshal() []byte {
	var shape []byte
	for _, d := range v.shape {
		var db []byte
		if d.param != "" {
			db = appendStringField(nil, 2, d.param)
		} else {
			db = appendVarintField(nil, 1, uint64(d.value))
		}
		shape = appendMessageField(shape, 1, db)
	}
	tt := appendVarintField(nil, 1, uint64(v.elemType))
	tt = appendMessageField(tt, 2, shape)
	typ := appendMessageField(nil, 1, tt)

	b := appendStringField(nil, 1, v.name)
	return appendMessageField(b, 2, typ)
}

// appendVarintField appends a varint field, even when v is zero: ONNX
// readers treat a missing elem_type or data_type as UNDEFINED.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendStringField appends a string field, skipping empty strings as
// proto3 does.
func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendRepeatedString appends a repeated string field, empty strings
// included.
func appendRepeatedString(b []byte, num protowire.Number, ss []string) []byte {
	for _, s := range ss {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return b
}

func appendMessageField(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
