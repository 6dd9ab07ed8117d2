package encoder

import (
	"golang.org/x/sys/cpu"
)

// The assembly kernels (gemm_amd64.s, mathf_amd64.s, norm_amd64.s,
// dequant_amd64.s; reduce_amd64.h holds the macros two of them share). The
// AVX-512 max, exp-and-sum and scale take any length (a mask covers the
// last values); the other vector functions take whole registers' worth of
// values, and the wrappers below do the rest in Go.

//go:noescape
func tile6x64AVX512(k int, a *float32, lda int, b, c *float32, ldc int)

//go:noescape
func tile6x16AVX2(k int, a *float32, lda int, b, c *float32, ldc int)

//go:noescape
func maxAVX512(x *float32, n int) float32

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func expSumAVX512(x *float32, n int, sub float32) float32

//go:noescape
func expSumAVX2(x *float32, n int, sub float32) float32

//go:noescape
func scaleAVX512(x *float32, n int, s float32)

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

//go:noescape
func geluAVX512(x *float32, n int)

//go:noescape
func dequantAVX512(dst *float32, q *int8, scales *float32, rows int)

//go:noescape
func dequantAVX2(dst *float32, q *int8, scales *float32, rows int)

//go:noescape
func normAVX512(x *float32, n int, scale, bias *float32, eps float32)

//go:noescape
func normAVX2(x *float32, n int, scale, bias *float32, eps float32)

//go:noescape
func geluAVX2(x *float32, n int)

// avx512Kernels needs AVX-512 F (the OS saving its registers included).
var avx512Kernels = kernels{
	name:  "avx512",
	width: 64,
	tile: func(k int, a []float32, lda int, b, c []float32, ldc int) {
		// The kernel reads 6 rows of k values of a, k rows of 64 values of
		// b, and 6 rows of 64 values of c.
		_, _, _ = a[(mr-1)*lda+k-1], b[panelWidth*(k-1)+63], c[(mr-1)*ldc+63]
		tile6x64AVX512(k, &a[0], lda, &b[0], &c[0], ldc)
	},
	max: func(x []float32) float32 {
		if len(x) == 0 {
			return maxGo(x)
		}
		return maxAVX512(&x[0], len(x))
	},
	expSum: func(x []float32, sub float32) float32 {
		if len(x) == 0 {
			return 0
		}
		return expSumAVX512(&x[0], len(x), sub)
	},
	scale: func(x []float32, s float32) {
		if len(x) > 0 {
			scaleAVX512(&x[0], len(x), s)
		}
	},
	gelu:      vectorGelu(16, geluAVX512),
	layerNorm: vectorNorm(16, normAVX512),
	dequant:   vectorDequant(dequantAVX512),
}

// avx2Kernels needs AVX2 and FMA.
var avx2Kernels = kernels{
	name:  "avx2",
	width: 16,
	tile: func(k int, a []float32, lda int, b, c []float32, ldc int) {
		_, _, _ = a[(mr-1)*lda+k-1], b[panelWidth*(k-1)+15], c[(mr-1)*ldc+15]
		tile6x16AVX2(k, &a[0], lda, &b[0], &c[0], ldc)
	},
	max:       vectorMax(8, maxAVX2),
	expSum:    vectorExpSum(8, expSumAVX2),
	scale:     vectorScale(8, scaleAVX2),
	gelu:      vectorGelu(8, geluAVX2),
	layerNorm: vectorNorm(8, normAVX2),
	dequant:   vectorDequant(dequantAVX2),
}

// kernelSets returns the kernel sets this CPU runs, fastest first.
func kernelSets() []kernels {
	var sets []kernels
	if cpu.X86.HasAVX512F {
		sets = append(sets, avx512Kernels)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		sets = append(sets, avx2Kernels)
	}
	return append(sets, portableKernels)
}

// bestKernels returns the fastest kernel set this CPU runs.
func bestKernels() kernels { return kernelSets()[0] }

func vectorMax(lanes int, f func(*float32, int) float32) func([]float32) float32 {
	return func(x []float32) float32 {
		n := len(x) / lanes * lanes
		m := maxGo(x[n:])
		if n > 0 {
			m = max(m, f(&x[0], n))
		}
		return m
	}
}

func vectorExpSum(lanes int, f func(*float32, int, float32) float32) func([]float32, float32) float32 {
	return func(x []float32, sub float32) float32 {
		n := len(x) / lanes * lanes
		s := expSumGo(x[n:], sub)
		if n > 0 {
			s += f(&x[0], n, sub)
		}
		return s
	}
}

func vectorScale(lanes int, f func(*float32, int, float32)) func([]float32, float32) {
	return func(x []float32, s float32) {
		n := len(x) / lanes * lanes
		scaleGo(x[n:], s)
		if n > 0 {
			f(&x[0], n, s)
		}
	}
}

func vectorGelu(lanes int, f func(*float32, int)) func([]float32) {
	return func(x []float32) {
		n := len(x) / lanes * lanes
		geluGo(x[n:])
		if n > 0 {
			f(&x[0], n)
		}
	}
}

func vectorNorm(lanes int, f func(*float32, int, *float32, *float32, float32)) func(x, scale, bias []float32, eps float32) {
	return func(x, scale, bias []float32, eps float32) {
		if len(x) == 0 || len(x)%lanes != 0 {
			layerNormGo(x, scale, bias, eps)
			return
		}
		_, _ = scale[len(x)-1], bias[len(x)-1]
		f(&x[0], len(x), &scale[0], &bias[0], eps)
	}
}

func vectorDequant(f func(*float32, *int8, *float32, int)) func(dst []float32, q []int8, scales []float32) {
	return func(dst []float32, q []int8, scales []float32) {
		rows := len(q) / panelWidth
		if rows == 0 {
			return
		}
		_, _ = dst[rows*panelWidth-1], scales[panelWidth-1]
		f(&dst[0], &q[0], &scales[0], rows)
	}
}
