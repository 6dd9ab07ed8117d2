package main

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
)

// This file holds the little linear algebra the recipe needs: a sparse
// matrix, randomized truncated SVD and a symmetric eigensolver. Work is split
// across goroutines by output rows, so results never depend on scheduling.

// workers is the number of goroutines for parallel loops.
var workers = max(1, min(runtime.NumCPU(), 2))

// parallelRows runs fn over [0,n) in contiguous chunks, one per worker.
func parallelRows(n int, fn func(lo, hi int)) {
	if workers == 1 || n < 64 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// CSR is a sparse matrix in compressed sparse row form.
type CSR struct {
	Rows, Cols int
	Ptr        []int
	Col        []int32
	Val        []float32
}

// transpose returns the matrix transposed, with columns sorted in each row.
func (m *CSR) transpose() *CSR {
	t := &CSR{Rows: m.Cols, Cols: m.Rows, Ptr: make([]int, m.Cols+1), Col: make([]int32, len(m.Col)), Val: make([]float32, len(m.Val))}
	for _, c := range m.Col {
		t.Ptr[c+1]++
	}
	for i := range m.Cols {
		t.Ptr[i+1] += t.Ptr[i]
	}
	next := append([]int(nil), t.Ptr[:m.Cols]...)
	for r := range m.Rows {
		for k := m.Ptr[r]; k < m.Ptr[r+1]; k++ {
			c := m.Col[k]
			t.Col[next[c]] = int32(r)
			t.Val[next[c]] = m.Val[k]
			next[c]++
		}
	}
	return t
}

// mulDense returns m * d, where d is a row-major Cols x k matrix.
func (m *CSR) mulDense(d []float64, k int) []float64 {
	out := make([]float64, m.Rows*k)
	parallelRows(m.Rows, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := out[r*k : (r+1)*k]
			for p := m.Ptr[r]; p < m.Ptr[r+1]; p++ {
				v := float64(m.Val[p])
				row := d[int(m.Col[p])*k : int(m.Col[p])*k+k]
				for j, x := range row {
					o[j] += v * x
				}
			}
		}
	})
	return out
}

// gram returns aᵀa for a row-major n x k matrix a. The rows are summed in
// a fixed number of parts, whatever the CPU count, so the float result is
// the same on every machine.
func gram(a []float64, n, k int) []float64 {
	const nparts = 2
	parts := make([][]float64, nparts)
	chunk := (n + nparts - 1) / nparts
	var wg sync.WaitGroup
	for w := range nparts {
		lo, hi := w*chunk, min(n, (w+1)*chunk)
		parts[w] = make([]float64, k*k)
		wg.Add(1)
		go func(g []float64) {
			defer wg.Done()
			for r := lo; r < hi; r++ {
				row := a[r*k : (r+1)*k]
				for i, x := range row {
					if x == 0 {
						continue
					}
					gi := g[i*k : (i+1)*k]
					for j := i; j < k; j++ {
						gi[j] += x * row[j]
					}
				}
			}
		}(parts[w])
	}
	wg.Wait()
	g := make([]float64, k*k)
	for _, p := range parts { // fixed order: deterministic sums
		for i := range g {
			g[i] += p[i]
		}
	}
	for i := range k {
		for j := i + 1; j < k; j++ {
			g[j*k+i] = g[i*k+j]
		}
	}
	return g
}

// mulSmall returns a * b for row-major a (n x k) and b (k x m).
func mulSmall(a []float64, n, k int, b []float64, m int) []float64 {
	out := make([]float64, n*m)
	parallelRows(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			o := out[r*m : (r+1)*m]
			for i, x := range a[r*k : (r+1)*k] {
				if x == 0 {
					continue
				}
				for j, y := range b[i*m : (i+1)*m] {
					o[j] += x * y
				}
			}
		}
	})
	return out
}

// symEigen returns the eigenvalues (descending) and eigenvectors (columns of
// the row-major k x k result) of the symmetric matrix a, by cyclic Jacobi.
func symEigen(a []float64, k int) ([]float64, []float64) {
	a = append([]float64(nil), a...)
	v := make([]float64, k*k)
	for i := range k {
		v[i*k+i] = 1
	}
	for sweep := 0; sweep < 60; sweep++ {
		off := 0.0
		for i := range k {
			for j := i + 1; j < k; j++ {
				off += a[i*k+j] * a[i*k+j]
			}
		}
		if off < 1e-22 {
			break
		}
		for p := 0; p < k; p++ {
			for q := p + 1; q < k; q++ {
				apq := a[p*k+q]
				if math.Abs(apq) < 1e-300 {
					continue
				}
				theta := (a[q*k+q] - a[p*k+p]) / (2 * apq)
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for r := range k {
					arp, arq := a[r*k+p], a[r*k+q]
					a[r*k+p] = c*arp - s*arq
					a[r*k+q] = s*arp + c*arq
				}
				for r := range k {
					apr, aqr := a[p*k+r], a[q*k+r]
					a[p*k+r] = c*apr - s*aqr
					a[q*k+r] = s*apr + c*aqr
				}
				for r := range k {
					vrp, vrq := v[r*k+p], v[r*k+q]
					v[r*k+p] = c*vrp - s*vrq
					v[r*k+q] = s*vrp + c*vrq
				}
			}
		}
	}
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return a[idx[i]*k+idx[i]] > a[idx[j]*k+idx[j]] })
	vals := make([]float64, k)
	vecs := make([]float64, k*k)
	for c, i := range idx {
		vals[c] = a[i*k+i]
		for r := range k {
			vecs[r*k+c] = v[r*k+i]
		}
	}
	return vals, vecs
}

// orthonormalize returns an orthonormal basis of the columns of the n x k
// matrix y (y E Λ^-1/2 from the eigendecomposition of yᵀy).
func orthonormalize(y []float64, n, k int) []float64 {
	vals, vecs := symEigen(gram(y, n, k), k)
	for c := range k {
		s := 0.0
		if vals[c] > 1e-12*vals[0] {
			s = 1 / math.Sqrt(vals[c])
		}
		for r := range k {
			vecs[r*k+c] *= s
		}
	}
	return mulSmall(y, n, k, vecs, k)
}

// randomizedSVD returns the top-rank left singular vectors of m scaled by
// the singular values raised to the power alpha (n x rank, row-major).
func randomizedSVD(m *CSR, rank, oversample, iters int, alpha float64, seed uint64) []float64 {
	k := rank + oversample
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	omega := make([]float64, m.Cols*k)
	for i := range omega {
		omega[i] = rng.NormFloat64()
	}
	mt := m.transpose()
	q := orthonormalize(m.mulDense(omega, k), m.Rows, k)
	for range iters {
		z := orthonormalize(mt.mulDense(q, k), m.Cols, k)
		q = orthonormalize(m.mulDense(z, k), m.Rows, k)
	}
	bt := mt.mulDense(q, k) // Mᵀ Q, Cols x k
	vals, vecs := symEigen(gram(bt, m.Cols, k), k)
	// U = Q * vecs; singular values are sqrt(vals).
	u := mulSmall(q, m.Rows, k, vecs, k)
	out := make([]float64, m.Rows*rank)
	for c := range rank {
		s := math.Pow(math.Sqrt(max(vals[c], 0)), alpha)
		for r := range m.Rows {
			out[r*rank+c] = u[r*k+c] * s
		}
	}
	return out
}

// removeTopComponents centres the rows of the n x d matrix x (weights w per
// row for the mean and covariance) and projects out the top dominant
// directions: the "all-but-the-top" post-processing of word vectors.
func removeTopComponents(x []float64, n, d int, w []float64, top int) {
	mean := make([]float64, d)
	tw := 0.0
	for r := range n {
		tw += w[r]
		for j := range d {
			mean[j] += w[r] * x[r*d+j]
		}
	}
	for j := range mean {
		mean[j] /= tw
	}
	c := make([]float64, n*d)
	for r := range n {
		sw := math.Sqrt(w[r])
		for j := range d {
			x[r*d+j] -= mean[j]
			c[r*d+j] = sw * x[r*d+j]
		}
	}
	_, vecs := symEigen(gram(c, n, d), d)
	for r := range n {
		row := x[r*d : (r+1)*d]
		for t := range top {
			dot := 0.0
			for j := range d {
				dot += row[j] * vecs[j*d+t]
			}
			for j := range d {
				row[j] -= dot * vecs[j*d+t]
			}
		}
	}
}
