package onnxgraph

import (
	"math"
	"strconv"
)

// This file is the one definition of the encoder graph: the nodes and the
// initializers' names, types and shapes for a config. Marshal writes them
// and ReadEncoder accepts exactly them.
//
// Every op used here loads in both onnx-gomlx (hugot's Go backend) and
// onnxruntime: Gather, Cast, Mul, Add, Sub, Div, Shape, Slice, Unsqueeze,
// Reshape (0 copies a dimension), Transpose, MatMul, Softmax, Erf and
// LayerNormalization (opset 17). Constants that shape the graph (axes,
// shapes) are Constant nodes rather than initializers, since onnx-gomlx
// needs them at graph build time and takes initializers for variables.

// tensorRole says how an initializer is made from the encoder's weights.
type tensorRole int

const (
	roleFloat     tensorRole = iota // float32 values as they are
	roleQuantized                   // int8 rows of a table or matrix
	roleScale                       // the float32 scale of each row, shaped [rows, 1]
)

// tensorSpec is one initializer: its name, type and shape, and the weight
// it holds (a key of Encoder.tensors).
type tensorSpec struct {
	name     string
	dataType int
	dims     []int64
	role     tensorRole
	source   string
}

// graphBuilder collects nodes and initializer specs.
type graphBuilder struct {
	nodes []node
	specs []tensorSpec
}

// op appends a node with one output named out and returns out.
func (g *graphBuilder) op(opType, out string, inputs []string, attrs ...attribute) string {
	g.nodes = append(g.nodes, node{opType: opType, name: out, inputs: inputs, outputs: []string{out}, attrs: attrs})
	return out
}

// constant appends a Constant node holding t and returns its output.
func (g *graphBuilder) constant(name string, t tensor) string {
	t.name = name + "_value"
	return g.op("Constant", name, nil, attribute{name: "value", t: &t})
}

func (g *graphBuilder) floatInit(name string, dims ...int) string {
	g.specs = append(g.specs, tensorSpec{name: name, dataType: dataFloat, dims: int64s(dims), role: roleFloat, source: name})
	return name
}

// quantized declares the int8 rows and the scales of the [rows, cols]
// weight source and returns the names of both initializers.
func (g *graphBuilder) quantized(source string, rows, cols int) (q, scale string) {
	q, scale = source+".q", source+".scale"
	g.specs = append(g.specs,
		tensorSpec{name: q, dataType: dataInt8, dims: int64s([]int{rows, cols}), role: roleQuantized, source: source},
		tensorSpec{name: scale, dataType: dataFloat, dims: int64s([]int{rows, 1}), role: roleScale, source: source})
	return q, scale
}

func castFloat() attribute { return attribute{name: "to", i: dataFloat} }

// lookup gathers the rows of the quantised table source for ids and
// dequantises them: Cast(Gather(q, ids)) · Gather(scale, ids).
func (g *graphBuilder) lookup(source string, rows, hidden int, ids string) string {
	q, scale := g.quantized(source, rows, hidden)
	axis0 := attribute{name: "axis", i: 0}
	rq := g.op("Gather", source+".rows_q", []string{q, ids}, axis0)
	rf := g.op("Cast", source+".rows_f", []string{rq}, castFloat())
	rs := g.op("Gather", source+".rows_scale", []string{scale, ids}, axis0)
	return g.op("Mul", source+".rows", []string{rf, rs})
}

// linear returns x·Wᵀ + b for the [out, in] weight source, dequantised in
// the graph (onnxruntime folds the dequantisation into a constant at load).
func (g *graphBuilder) linear(x, source string, out, in int) string {
	q, scale := g.quantized(source, out, in)
	wf := g.op("Cast", source+".f", []string{q}, castFloat())
	w := g.op("Mul", source+".w", []string{wf, scale})
	wt := g.op("Transpose", source+".wt", []string{w}, attribute{name: "perm", typ: attrInts, ints: []int64{1, 0}})
	b := g.floatInit(source+".bias", out)
	y := g.op("MatMul", source+".matmul", []string{x, wt})
	return g.op("Add", source+".out", []string{y, b})
}

// layerNorm normalises x over its last axis with source's scale and bias.
func (g *graphBuilder) layerNorm(x, source string, hidden int, eps float32) string {
	s := g.floatInit(source+".scale", hidden)
	b := g.floatInit(source+".bias", hidden)
	return g.op("LayerNormalization", source+".out", []string{x, s, b},
		attribute{name: "axis", i: -1}, attribute{name: "epsilon", typ: attrFloat, f: eps})
}

// encoderConsts are the outputs of the graph's Constant nodes.
type encoderConsts struct {
	zero, maskAxes, one, maskFill, heads, hidden, scoreScale, sqrt2, half string
}

// encoderGraph returns the nodes and initializer specs of the encoder
// graph for c.
func encoderGraph(c EncoderConfig) ([]node, []tensorSpec) {
	g := &graphBuilder{}
	k := encoderConsts{
		zero:       g.constant("const.zero", tensor{dataType: dataInt64, dims: []int64{1}, raw: int64Bytes(0)}),
		maskAxes:   g.constant("const.mask_axes", tensor{dataType: dataInt64, dims: []int64{2}, raw: int64Bytes(1, 2)}),
		one:        g.constant("const.one", floatConst(1)),
		maskFill:   g.constant("const.mask_fill", floatConst(-10000)),
		heads:      g.constant("const.heads_shape", tensor{dataType: dataInt64, dims: []int64{4}, raw: int64Bytes(0, 0, int64(c.Heads), int64(c.HeadDim()))}),
		hidden:     g.constant("const.hidden_shape", tensor{dataType: dataInt64, dims: []int64{3}, raw: int64Bytes(0, 0, int64(c.Hidden))}),
		scoreScale: g.constant("const.score_scale", floatConst(float32(1/math.Sqrt(float64(c.HeadDim()))))),
		sqrt2:      g.constant("const.sqrt2", floatConst(float32(math.Sqrt2))),
		half:       g.constant("const.half", floatConst(0.5)),
	}
	x := g.embeddings(c, k)

	// The additive mask, [batch, 1, 1, sequence]: 0 where attention_mask
	// is 1, -10000 where it is 0.
	mf := g.op("Cast", "mask.f", []string{AttentionMask}, castFloat())
	inv := g.op("Sub", "mask.inverse", []string{k.one, mf})
	fill := g.op("Mul", "mask.fill", []string{inv, k.maskFill})
	bias := g.op("Unsqueeze", "mask.bias", []string{fill, k.maskAxes})

	for i := range c.Layers {
		x = g.layer(c, k, i, x, bias)
	}
	g.op("Identity", LastHiddenState, []string{x})
	return g.nodes, g.specs
}

// embeddings returns the normalised sum of the word, position and token
// type embeddings, [batch, sequence, hidden].
func (g *graphBuilder) embeddings(c EncoderConfig, k encoderConsts) string {
	words := g.lookup("embeddings.word", c.VocabSize, c.Hidden, InputIDs)
	// Positions 0..sequence-1: the first rows of the position table.
	seq := g.op("Shape", "embeddings.sequence", []string{InputIDs},
		attribute{name: "end", i: 2}, attribute{name: "start", i: 1})
	pq, pscale := g.quantized("embeddings.position", c.MaxPositions, c.Hidden)
	prq := g.op("Slice", "embeddings.position.rows_q", []string{pq, k.zero, seq, k.zero})
	prf := g.op("Cast", "embeddings.position.rows_f", []string{prq}, castFloat())
	prs := g.op("Slice", "embeddings.position.rows_scale", []string{pscale, k.zero, seq, k.zero})
	pos := g.op("Mul", "embeddings.position.rows", []string{prf, prs})
	types := g.lookup("embeddings.token_type", c.TypeVocab, c.Hidden, TokenTypeIDs)

	sum := g.op("Add", "embeddings.sum_position", []string{words, pos})
	sum = g.op("Add", "embeddings.sum", []string{sum, types})
	return g.layerNorm(sum, "embeddings.norm", c.Hidden, c.LayerNormEps)
}

// layer returns transformer layer i applied to x with the additive mask
// bias.
func (g *graphBuilder) layer(c EncoderConfig, k encoderConsts, i int, x, bias string) string {
	n := func(s string) string { return layerName(i, s) }
	perm := func(p ...int64) attribute { return attribute{name: "perm", typ: attrInts, ints: p} }
	h, inter := c.Hidden, c.Intermediate

	q := g.linear(x, n("query"), h, h)
	key := g.linear(x, n("key"), h, h)
	v := g.linear(x, n("value"), h, h)
	// [batch, sequence, hidden] -> [batch, heads, sequence, head_dim]; keys
	// go to [batch, heads, head_dim, sequence] for the scores' product.
	qh := g.op("Transpose", n("query.heads"), []string{g.op("Reshape", n("query.split"), []string{q, k.heads})}, perm(0, 2, 1, 3))
	kh := g.op("Transpose", n("key.heads"), []string{g.op("Reshape", n("key.split"), []string{key, k.heads})}, perm(0, 2, 3, 1))
	vh := g.op("Transpose", n("value.heads"), []string{g.op("Reshape", n("value.split"), []string{v, k.heads})}, perm(0, 2, 1, 3))

	scores := g.op("MatMul", n("scores"), []string{qh, kh})
	scores = g.op("Mul", n("scores.scaled"), []string{scores, k.scoreScale})
	scores = g.op("Add", n("scores.masked"), []string{scores, bias})
	probs := g.op("Softmax", n("probs"), []string{scores}, attribute{name: "axis", i: -1})
	ctx := g.op("MatMul", n("context.heads"), []string{probs, vh})
	ctx = g.op("Transpose", n("context.merge"), []string{ctx}, perm(0, 2, 1, 3))
	ctx = g.op("Reshape", n("context"), []string{ctx, k.hidden})

	a := g.linear(ctx, n("attention_output"), h, h)
	a = g.op("Add", n("attention.residual"), []string{a, x})
	a = g.layerNorm(a, n("attention_norm"), h, c.LayerNormEps)

	// GELU with erf: x · 0.5 · (1 + erf(x / √2)).
	f := g.linear(a, n("intermediate"), inter, h)
	e := g.op("Erf", n("gelu.erf"), []string{g.op("Div", n("gelu.scaled"), []string{f, k.sqrt2})})
	e = g.op("Add", n("gelu.one_plus"), []string{e, k.one})
	f = g.op("Mul", n("gelu.product"), []string{f, e})
	f = g.op("Mul", n("gelu"), []string{f, k.half})

	o := g.linear(f, n("output"), h, inter)
	o = g.op("Add", n("output.residual"), []string{o, a})
	return g.layerNorm(o, n("output_norm"), h, c.LayerNormEps)
}

func floatConst(v float32) tensor {
	return tensor{dataType: dataFloat, dims: []int64{1}, raw: float32Bytes([]float32{v})}
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// describeSpec names a spec for error messages.
func describeSpec(s tensorSpec) string {
	return s.name + " " + strconv.Itoa(s.dataType) + " " + formatDims(s.dims)
}

func formatDims(d []int64) string {
	b := []byte{'['}
	for i, x := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(append(b, ']'))
}
