package encoder

// kernels is one implementation of the inner loops: the GEMM micro-kernel
// and the vector functions of softmax and GELU. New picks the fastest set
// the CPU runs (kernels_amd64.go); the portable set runs everywhere and in
// the tests, which hold the sets to each other.
type kernels struct {
	name string
	// tile is the micro-kernel: C[mr×width] += A·B for k steps, where A
	// is mr rows of k values, lda apart, b points into a packed panel of B
	// (k rows of panelWidth values, of which the kernel reads width from
	// its start), and c is row-major with ldc.
	tile  func(k int, a []float32, lda int, b, c []float32, ldc int)
	width int // columns of C one tile call computes; divides panelWidth
	// Vector functions; each handles any length.
	max    func(x []float32) float32
	expSum func(x []float32, sub float32) float32
	scale  func(x []float32, s float32)
	gelu   func(x []float32)
	// layerNorm normalises x in place: (x-mean)/√(var+eps)·scale+bias.
	layerNorm func(x, scale, bias []float32, eps float32)
	// dequant sets dst[i] = float32(q[i])·scales[i%panelWidth], for whole
	// rows of a panel.
	dequant func(dst []float32, q []int8, scales []float32)
}

// The micro-kernels' shape: mr rows of A at a time, B packed in panels of
// panelWidth columns.
const (
	mr         = 6
	panelWidth = 64
)

// portable is the pure-Go kernel set.
var portableKernels = kernels{
	name:      "go",
	tile:      tileGo,
	width:     16,
	max:       maxGo,
	expSum:    expSumGo,
	scale:     scaleGo,
	gelu:      geluGo,
	layerNorm: layerNormGo,
	dequant:   dequantGo,
}

// dequantGo is the portable dequant.
func dequantGo(dst []float32, q []int8, scales []float32) {
	scales = scales[:panelWidth]
	for r := 0; r+panelWidth <= len(q); r += panelWidth {
		out := dst[r : r+panelWidth]
		for j, x := range q[r : r+panelWidth] {
			out[j] = float32(x) * scales[j]
		}
	}
}

// tileGo is the portable micro-kernel for a 6×16 tile.
func tileGo(k int, a []float32, lda int, b, c []float32, ldc int) {
	var acc [mr][16]float32
	for p := range k {
		bv := b[p*panelWidth : p*panelWidth+16 : p*panelWidth+16]
		for i := range mr {
			x := a[i*lda+p]
			row := &acc[i]
			for j, y := range bv {
				row[j] += x * y
			}
		}
	}
	for i := range mr {
		row := c[i*ldc : i*ldc+16 : i*ldc+16]
		for j := range row {
			row[j] += acc[i][j]
		}
	}
}
