package encoder

// This file is the matrix product C += A·Bᵀ: packing B and the loops
// around the micro-kernel. B is packed in panels of panelWidth columns (one
// column per output), each k rows long, padded with zeros: a weight matrix
// once at load, as int8 with one scale per column, and attention's keys and
// values per head into scratch, as float32. An int8 panel is dequantised a
// block of kBlock rows at a time into a buffer the micro-kernel then reads
// for every block of rows of A: memory carries a quarter of the bytes,
// which is what a product over a query's few tokens waits for. A is read
// in place, mr rows at a time.

// kBlock bounds the k steps of one micro-kernel call, so that the panel
// slice it streams stays in the core's L1 and L2 caches.
const kBlock = 256

// panels returns the number of panels of n columns.
func panels(n int) int { return (n + panelWidth - 1) / panelWidth }

// packedSize returns the length of n columns of k values, packed.
func packedSize(n, k int) int { return panels(n) * panelWidth * k }

// packRows packs B from src holding one row of k values per output column
// (a weight matrix [n, k]), rows ld apart.
func packRows[T float32 | int8](dst, src []T, n, k, ld int) {
	for j := range panels(n) {
		panel := dst[j*panelWidth*k : (j+1)*panelWidth*k]
		for c := range panelWidth {
			col := j*panelWidth + c
			if col >= n {
				for p := range k {
					panel[p*panelWidth+c] = 0
				}
				continue
			}
			for p, v := range src[col*ld : col*ld+k] {
				panel[p*panelWidth+c] = v
			}
		}
	}
}

// packScaled is packRows for float32 with each value times s (the keys of
// attention, times 1/√dh). s is positive, so the padding stays +0.
func packScaled(dst, src []float32, n, k, ld int, s float32) {
	packRows(dst, src, n, k, ld)
	packed := dst[:packedSize(n, k)]
	for i, v := range packed {
		packed[i] = v * s
	}
}

// packCols packs B from src holding one row of n values per k step (the
// values of attention), rows ld apart.
func packCols(dst, src []float32, n, k, ld int) {
	for j := range panels(n) {
		panel := dst[j*panelWidth*k : (j+1)*panelWidth*k]
		c0 := j * panelWidth
		w := min(panelWidth, n-c0)
		for p := range k {
			out := panel[p*panelWidth : (p+1)*panelWidth]
			copy(out, src[p*ld+c0:p*ld+c0+w])
			clear(out[w:])
		}
	}
}

// bPanels is the packed B of a product: float32 panels, or int8 panels
// with a scale per column and a buffer of kBlock·panelWidth values to
// dequantise them into.
type bPanels struct {
	f      []float32
	q      []int8
	scales []float32
	buf    []float32
}

// block returns rows [k0, k0+kc) of panel j of a B of k rows, as float32.
func (b *bPanels) block(ks *kernels, j, k, k0, kc int) []float32 {
	off := j*panelWidth*k + k0*panelWidth
	if b.q == nil {
		return b.f[off:]
	}
	out := b.buf[:kc*panelWidth]
	ks.dequant(out, b.q[off:off+kc*panelWidth], b.scales[j*panelWidth:(j+1)*panelWidth])
	return out
}

// gemm adds A·Bᵀ to C[m×n] (row-major, ldc) for the columns of panels
// [p0, p1): A is m rows of k values, lda apart, and its slice reaches
// mr-1 rows further (the kernels read whole blocks of rows; what those
// rows hold does not matter), b is B packed (n columns, k values). tmp
// holds at least mr·width values for the tiles that stick out of C.
func (ks *kernels) gemm(a []float32, lda, m, k int, b *bPanels, n int, c []float32, ldc int, p0, p1 int, tmp []float32) {
	w := ks.width
	for k0 := 0; k0 < k; k0 += kBlock {
		kc := min(kBlock, k-k0)
		for j := p0; j < p1; j++ {
			panel := b.block(ks, j, k, k0, kc)
			for blk := 0; blk*mr < m; blk++ {
				ab := a[blk*mr*lda+k0:]
				rows := min(mr, m-blk*mr)
				for s := 0; s < panelWidth; s += w {
					col := j*panelWidth + s
					cols := min(w, n-col)
					if cols <= 0 {
						break
					}
					if rows == mr && cols == w {
						ks.tile(kc, ab, lda, panel[s:], c[blk*mr*ldc+col:], ldc)
						continue
					}
					t := tmp[:mr*w]
					clear(t)
					ks.tile(kc, ab, lda, panel[s:], t, w)
					for i := range rows {
						dst := c[(blk*mr+i)*ldc+col : (blk*mr+i)*ldc+col+cols]
						for x := range dst {
							dst[x] += t[i*w+x]
						}
					}
				}
			}
		}
	}
}
