package encoder

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// miniLM is the shape of all-MiniLM-L6-v2 (with a smaller vocabulary,
// which costs nothing at run time).
var miniLM = onnxgraph.EncoderConfig{Layers: 6, Hidden: 384, Heads: 12, Intermediate: 1536, VocabSize: 1000, MaxPositions: 512, TypeVocab: 2, LayerNormEps: 1e-12}

// BenchmarkForward runs random MiniLM-shaped encoders over one sequence of
// a query's and of a long text's length, and over a batch of 32
// document-length texts, with each kernel set and 1 and 2 workers.
func BenchmarkForward(b *testing.B) {
	e := encodertest.Random(miniLM, 1)
	r := rand.New(rand.NewPCG(1, 2))
	one := func(n int) []Sequence { return []Sequence{randomSequence(r, miniLM, n, false)} }
	var docs []Sequence
	for range 32 {
		docs = append(docs, randomSequence(r, miniLM, 40+r.IntN(40), false))
	}
	inputs := []struct {
		name string
		seqs []Sequence
	}{{"seq16", one(16)}, {"seq37", one(37)}, {"seq256", one(256)}, {"seq427", one(427)}, {"batch32", docs}}
	for _, ks := range kernelSets() {
		if ks.name == "go" {
			continue
		}
		m, err := newWithKernels(e, ks)
		if err != nil {
			b.Fatal(err)
		}
		for _, in := range inputs {
			for _, workers := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/workers=%d", ks.name, in.name, workers), func(b *testing.B) {
					cpu := processCPU()
					for b.Loop() {
						if _, err := m.Pool(in.seqs, Mean, workers); err != nil {
							b.Fatal(err)
						}
					}
					if cpu := processCPU() - cpu; cpu > 0 {
						b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
					}
				})
			}
		}
	}
}
