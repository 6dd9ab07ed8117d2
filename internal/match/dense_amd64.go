package match

import "golang.org/x/sys/cpu"

// haveInt8Scan is set when the CPU runs dotsInt8AVX2.
var haveInt8Scan = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// haveVNNI is set when the CPU runs dotsU8AVX512 (AVX-512 with VNNI).
var haveVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

// dotsU8 sets out[i] to the dot product of q (unsigned bytes) with row i
// of rows; stride is a multiple of 64 and len(q) >= stride. It needs
// haveVNNI.
func dotsU8(q []uint8, rows []int8, stride int, out []int32) {
	if len(out) == 0 {
		return
	}
	_ = q[stride-1]
	_ = rows[len(out)*stride-1]
	dotsU8AVX512(&q[0], &rows[0], stride, len(out), &out[0])
}

//go:noescape
func dotsU8AVX512(q *uint8, rows *int8, stride, n int, out *int32)

// dotsInt8 sets out[i] to the dot product of q with row i of rows, each
// stride values long; stride is a multiple of 64 and len(q) >= stride.
func dotsInt8(q []int16, rows []int8, stride int, out []int32) {
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
func dotsInt8AVX2(q *int16, rows *int8, stride, n int, out *int32)

// haveLanes is set when the CPU runs dotLanes8AVX.
var haveLanes = cpu.X86.HasAVX

// dots8 sets out[r] to Dot(q, rows[r]) for eight rows of len(q) values, bit
// for bit; q2 is q with each group of four values written twice (dup4).
func dots8(q, q2 []float32, rows *[8][]float32, out *[8]float32) {
	dim := len(q)
	dim4 := dim &^ 3
	if !haveLanes || dim4 == 0 {
		for r, row := range rows {
			out[r] = Dot(q, row)
		}
		return
	}
	var ptrs [8]*float32
	for r, row := range rows {
		_ = row[dim-1]
		ptrs[r] = &row[0]
	}
	var lanes [32]float32
	dotLanes8AVX(&q2[0], &ptrs, dim4, &lanes)
	for r := range rows {
		// Register r/2 holds rows 2(r/2) and 2(r/2)+1, four lanes each.
		l := lanes[(r/2)*8+(r%2)*4:]
		s0, s1, s2, s3 := l[0], l[1], l[2], l[3]
		row := rows[r]
		for i := dim4; i < dim; i++ {
			s0 += q[i] * row[i]
		}
		out[r] = (s0 + s1) + (s2 + s3)
	}
}

//go:noescape
func dotLanes8AVX(q2 *float32, rows *[8]*float32, dim4 int, lanes *[32]float32)
