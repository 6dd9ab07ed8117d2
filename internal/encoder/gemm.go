package encoder

// This file is the matrix product C += A·Bᵀ: packing B and the loops
// around the micro-kernel. B is packed in panels of panelWidth columns (one
// column per output), each k rows long, padded with zeros: a weight matrix
// once at load, attention's keys and values per head into scratch. A is
// read in place, mr rows at a time.

// kBlock bounds the k steps of one micro-kernel call, so that the panel
// slice it streams stays in the core's L1 and L2 caches.
const kBlock = 256

// panels returns the number of panels of n columns.
func panels(n int) int { return (n + panelWidth - 1) / panelWidth }

// packedSize returns the length of n columns of k values, packed.
func packedSize(n, k int) int { return panels(n) * panelWidth * k }

// packRows packs B from src holding one row of k values per output column
// (a weight matrix [n, k], or the keys of attention), rows ld apart, each
// value times s.
func packRows(dst, src []float32, n, k, ld int, s float32) {
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
			row := src[col*ld : col*ld+k]
			for p, v := range row {
				panel[p*panelWidth+c] = v * s
			}
		}
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

// gemm adds A·Bᵀ to C[m×n] (row-major, ldc) for the columns of panels
// [p0, p1): A is m rows of k values, lda apart, and its slice reaches
// mr-1 rows further (the kernels read whole blocks of rows; what those
// rows hold does not matter), b is B packed (n columns, k values). tmp
// holds at least mr·width values for the tiles that stick out of C.
func (ks *kernels) gemm(a []float32, lda, m, k int, b []float32, n int, c []float32, ldc int, p0, p1 int, tmp []float32) {
	w := ks.width
	for k0 := 0; k0 < k; k0 += kBlock {
		kc := min(kBlock, k-k0)
		for j := p0; j < p1; j++ {
			panel := b[j*panelWidth*k+k0*panelWidth:]
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
