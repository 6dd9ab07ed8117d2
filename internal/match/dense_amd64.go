package match

import "golang.org/x/sys/cpu"

// haveInt8Scan is set when the CPU runs dotsInt8AVX2.
var haveInt8Scan = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotsInt8 sets out[i] to the dot product of q with row i of rows, each
// stride values long; stride is a multiple of 32 and len(q) >= stride.
func dotsInt8(q []float32, rows []int8, stride int, out []float32) {
	if len(out) == 0 {
		return
	}
	if !haveInt8Scan {
		dotsInt8Go(q, rows, stride, out)
		return
	}
	_ = q[stride-1]
	_ = rows[len(out)*stride-1]
	dotsInt8AVX2(&q[0], &rows[0], stride, len(out), &out[0])
}

//go:noescape
func dotsInt8AVX2(q *float32, rows *int8, stride, n int, out *float32)
