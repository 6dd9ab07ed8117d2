//go:build !amd64

package match

// haveInt8Scan is false: without a vector unit kernel the int8 pre-scan
// costs more than the exact scan it would spare.
var haveInt8Scan = false

func dotsInt8(q []int16, rows []int8, stride int, out []int32) { dotsInt8Go(q, rows, stride, out) }

var haveLanes = false

// dots8 sets out[r] to Dot(q, rows[r]).
func dots8(q, _ []float32, rows *[8][]float32, out *[8]float32) {
	for r, row := range rows {
		out[r] = Dot(q, row)
	}
}

var haveVNNI = false

func dotsU8(q []uint8, rows []int8, stride int, out []int32) { dotsU8Go(q, rows, stride, out) }
