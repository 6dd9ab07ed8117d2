// Package encodertest makes small random BERT encoders and computes their
// forward pass the plain way, in float64 with math.Erf and math.Exp, for
// the tests of the encoder graph (onnxgraph) and of its native evaluation
// (encoder) to check against.
package encodertest

import (
	"math"
	"math/rand/v2"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// Random returns an encoder of config c with weights drawn from seed:
// matrices and tables of a typical trained scale, biases small, layer
// norm scales near 1.
func Random(c onnxgraph.EncoderConfig, seed uint64) *onnxgraph.Encoder {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	values := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * scale)
		}
		return v
	}
	norm := func() onnxgraph.LayerNorm {
		s := values(c.Hidden, 0.1)
		for i := range s {
			s[i]++
		}
		return onnxgraph.LayerNorm{Scale: s, Bias: values(c.Hidden, 0.1)}
	}
	linear := func(out, in int) onnxgraph.Linear {
		return onnxgraph.Linear{Weight: values(out*in, 1/math.Sqrt(float64(in))), Bias: values(out, 0.05)}
	}
	e := &onnxgraph.Encoder{
		Config:             c,
		WordEmbeddings:     values(c.VocabSize*c.Hidden, 0.5),
		PositionEmbeddings: values(c.MaxPositions*c.Hidden, 0.2),
		TypeEmbeddings:     values(c.TypeVocab*c.Hidden, 0.2),
		EmbeddingNorm:      norm(),
	}
	for range c.Layers {
		e.Layers = append(e.Layers, onnxgraph.EncoderLayer{
			Query: linear(c.Hidden, c.Hidden), Key: linear(c.Hidden, c.Hidden), Value: linear(c.Hidden, c.Hidden),
			AttentionOutput: linear(c.Hidden, c.Hidden), AttentionNorm: norm(),
			Intermediate: linear(c.Intermediate, c.Hidden), Output: linear(c.Hidden, c.Intermediate),
			OutputNorm: norm(),
		})
	}
	return e
}

// Forward returns the last hidden state of one sequence, [len(ids)] rows
// of Hidden values, computed as the encoder graph defines it: masked
// positions (mask 0) add -10000 to the scores of every query. The ids must
// be in range.
func Forward(e *onnxgraph.Encoder, ids, types, mask []int) [][]float64 {
	c := e.Config
	n, h := len(ids), c.Hidden
	x := make([][]float64, n)
	for t := range n {
		x[t] = make([]float64, h)
		for j := range h {
			x[t][j] = float64(e.WordEmbeddings[ids[t]*h+j]) + float64(e.PositionEmbeddings[t*h+j]) + float64(e.TypeEmbeddings[types[t]*h+j])
		}
		x[t] = layerNorm(x[t], e.EmbeddingNorm, c.LayerNormEps)
	}
	for _, l := range e.Layers {
		x = layer(c, l, x, mask)
	}
	return x
}

func layer(c onnxgraph.EncoderConfig, l onnxgraph.EncoderLayer, x [][]float64, mask []int) [][]float64 {
	n, h, dh := len(x), c.Hidden, c.HeadDim()
	q, k, v := linear(x, l.Query), linear(x, l.Key), linear(x, l.Value)
	ctx := make([][]float64, n)
	for t := range ctx {
		ctx[t] = make([]float64, h)
	}
	scale := 1 / math.Sqrt(float64(dh))
	for head := range c.Heads {
		off := head * dh
		for i := range n {
			scores := make([]float64, n)
			top := math.Inf(-1)
			for j := range n {
				var s float64
				for d := range dh {
					s += q[i][off+d] * k[j][off+d]
				}
				scores[j] = s*scale + float64(1-mask[j])*-10000
				top = math.Max(top, scores[j])
			}
			var sum float64
			for j := range scores {
				scores[j] = math.Exp(scores[j] - top)
				sum += scores[j]
			}
			for j := range n {
				p := scores[j] / sum
				for d := range dh {
					ctx[i][off+d] += p * v[j][off+d]
				}
			}
		}
	}
	a := linear(ctx, l.AttentionOutput)
	for t := range a {
		for j := range a[t] {
			a[t][j] += x[t][j]
		}
		a[t] = layerNorm(a[t], l.AttentionNorm, c.LayerNormEps)
	}
	f := linear(a, l.Intermediate)
	for t := range f {
		for j, z := range f[t] {
			f[t][j] = z * 0.5 * (1 + math.Erf(z/math.Sqrt2))
		}
	}
	o := linear(f, l.Output)
	for t := range o {
		for j := range o[t] {
			o[t][j] += a[t][j]
		}
		o[t] = layerNorm(o[t], l.OutputNorm, c.LayerNormEps)
	}
	return o
}

// linear returns x·Wᵀ + b for each row of x.
func linear(x [][]float64, l onnxgraph.Linear) [][]float64 {
	out := len(l.Bias)
	y := make([][]float64, len(x))
	for t, row := range x {
		y[t] = make([]float64, out)
		for o := range out {
			s := float64(l.Bias[o])
			w := l.Weight[o*len(row) : (o+1)*len(row)]
			for i, xi := range row {
				s += xi * float64(w[i])
			}
			y[t][o] = s
		}
	}
	return y
}

func layerNorm(x []float64, p onnxgraph.LayerNorm, eps float32) []float64 {
	var mean, variance float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= float64(len(x))
	inv := 1 / math.Sqrt(variance+float64(eps))
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = (v-mean)*inv*float64(p.Scale[i]) + float64(p.Bias[i])
	}
	return y
}
