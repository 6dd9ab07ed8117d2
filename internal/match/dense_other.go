//go:build !amd64

package match

// haveInt8Scan is false: without a vector unit kernel the int8 pre-scan
// costs more than the exact scan it would spare.
var haveInt8Scan = false

func dotsInt8(q []float32, rows []int8, stride int, out []float32) { dotsInt8Go(q, rows, stride, out) }
