package main

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestStepGradient checks the gradient step accumulates against the
// derivative of the loss it returns, taken by central differences.
func TestStepGradient(t *testing.T) {
	const v, d, b, temp = 12, 6, 4, 0.5
	r := rand.New(rand.NewPCG(1, 2))
	table := make([]float32, v*d)
	for i := range table {
		table[i] = float32(r.NormFloat64())
	}
	texts := make([][]int32, 2*b)
	for i := range texts {
		for range 1 + r.IntN(3) {
			texts[i] = append(texts[i], int32(r.IntN(v)))
		}
	}
	loss := func() float64 {
		return step(table, make([]float32, v*d), make([]bool, v), texts, b, d, temp)
	}
	grad, touched := make([]float32, v*d), make([]bool, v)
	step(table, grad, touched, texts, b, d, temp)
	const h = 1e-2
	for i := range table {
		if !touched[i/d] {
			if grad[i] != 0 {
				t.Fatalf("row %d is not touched but has gradient %v", i/d, grad[i])
			}
			continue
		}
		x := table[i]
		table[i] = x + h
		up := loss()
		table[i] = x - h
		down := loss()
		table[i] = x
		want := (up - down) / (2 * h)
		if got := float64(grad[i]); math.Abs(got-want) > 1e-2*max(1, math.Abs(want)) {
			t.Errorf("table[%d]: gradient %.5f, central difference %.5f", i, got, want)
		}
	}
}
