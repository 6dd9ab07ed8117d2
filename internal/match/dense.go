package match

import (
	"math"
	"runtime"
	"sync"
)

// dense holds the skill vectors as one row-major matrix of unit vectors and
// scores a task against all of them exactly. An exact scan is simple and fast
// enough up to about 100k skills (BenchmarkMatch); an approximate index would
// add recall loss and build time for no gain at catalog sizes.
type dense struct {
	dim  int
	vecs []float32 // n rows of dim; a zero row for a skill without a vector
	has  []bool
	// count is the number of skills with a vector.
	count int
}

// newDense copies the usable vectors into one matrix. A vector is usable
// when it has the dimension of the first usable one and a finite, nonzero
// norm; it is normalised to unit length. bad counts the unusable ones.
func newDense(vectors [][]float32, n int) (d *dense, bad int) {
	dim := 0
	for _, v := range vectors {
		if len(v) > 0 {
			if _, ok := unitNorm(v); ok {
				dim = len(v)
				break
			}
		}
	}
	if dim == 0 {
		for _, v := range vectors {
			if v != nil {
				bad++
			}
		}
		return nil, bad
	}
	d = &dense{dim: dim, vecs: make([]float32, n*dim), has: make([]bool, n)}
	for i := 0; i < n && i < len(vectors); i++ {
		v := vectors[i]
		if v == nil {
			continue
		}
		norm, ok := unitNorm(v)
		if len(v) != dim || !ok {
			bad++
			continue
		}
		row := d.vecs[i*dim : (i+1)*dim]
		for j, x := range v {
			row[j] = float32(float64(x) / norm)
		}
		d.has[i] = true
		d.count++
	}
	return d, bad
}

// unitNorm returns the L2 norm of v and whether it is finite and nonzero.
func unitNorm(v []float32) (float64, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := math.Sqrt(s)
	return n, n > 0 && !math.IsInf(n, 0) && !math.IsNaN(n)
}

// query normalises q into a new slice; ok is false when q cannot be used
// (wrong dimension, zero or not finite).
func (d *dense) query(q []float32) ([]float32, bool) {
	if len(q) != d.dim {
		return nil, false
	}
	norm, ok := unitNorm(q)
	if !ok {
		return nil, false
	}
	out := make([]float32, d.dim)
	for i, x := range q {
		out[i] = float32(float64(x) / norm)
	}
	return out, true
}

// parallelMACs is the work (multiply-adds) above which a scan is split
// across CPUs: below it, starting goroutines costs more than it saves.
const parallelMACs = 1 << 20

// scores writes the cosine of q (a unit vector) with every row into out;
// rows without a vector get -2, below any cosine. Large matrices are
// scanned in parallel, one contiguous block of rows per CPU.
func (d *dense) scores(q []float32, out []float32) {
	n := len(out)
	workers := min(runtime.GOMAXPROCS(0), n*d.dim/parallelMACs)
	if workers < 2 {
		d.scoreRows(q, out, 0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		wg.Go(func() { d.scoreRows(q, out, lo, hi) })
	}
	wg.Wait()
}

func (d *dense) scoreRows(q []float32, out []float32, lo, hi int) {
	dim := d.dim
	for i := lo; i < hi; i++ {
		if !d.has[i] {
			out[i] = -2
			continue
		}
		out[i] = dot(q, d.vecs[i*dim:(i+1)*dim:(i+1)*dim])
	}
}

// dot returns the dot product of a and b, which have the same length. Four
// independent accumulators let the CPU overlap the multiply-adds.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
