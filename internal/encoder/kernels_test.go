package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randomValues(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * scale)
	}
	return v
}

// TestGemm checks every kernel set's product against a float64 one, on
// shapes with ragged edges (sizes that are not multiples of the tile, the
// panel or the k block), with B packed from rows and from columns, and
// with the panels shared out as the workers share them.
func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{ // m, n, k
		{1, 1, 1}, {1, 64, 384}, {5, 17, 3}, {6, 16, 64}, {7, 65, 255}, {13, 130, 256}, {37, 63, 257},
		{12, 128, 600}, {2, 200, 1}, {64, 64, 64}, {100, 70, 513},
	}
	for _, ks := range kernelSets() {
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			for _, mode := range []string{"rows", "cols", "int8"} {
				t.Run(fmt.Sprintf("%s/%dx%dx%d/%s", ks.name, m, n, k, mode), func(t *testing.T) {
					lda, ldb := k+3, k+1
					if mode == "cols" {
						ldb = n + 2
					}
					a := randomValues(r, (m+mr-1)*lda, 1) // the kernels read whole blocks of rows
					b := randomValues(r, max(n*ldb, k*ldb), 1)
					var bp bPanels
					switch mode {
					case "rows":
						bp.f = make([]float32, packedSize(n, k))
						packRows(bp.f, b, n, k, ldb)
					case "cols":
						bp.f = make([]float32, packedSize(n, k))
						packCols(bp.f, b, n, k, ldb)
					case "int8":
						q := make([]int8, len(b))
						for i := range q {
							q[i] = int8(r.IntN(255) - 127)
						}
						bp.scales = make([]float32, panels(n)*panelWidth)
						for j := range n {
							bp.scales[j] = float32(r.Float64()) / 64
						}
						for col := range n {
							for p := range k {
								b[col*ldb+p] = float32(q[col*ldb+p]) * bp.scales[col]
							}
						}
						bp.q = make([]int8, packedSize(n, k))
						packRows(bp.q, q, n, k, ldb)
						bp.buf = make([]float32, kBlock*panelWidth)
					}
					c := randomValues(r, m*(n+5), 1)
					want := make([]float64, len(c))
					for i := range m {
						for j := range n + 5 {
							want[i*(n+5)+j] = float64(c[i*(n+5)+j])
							if j >= n {
								continue
							}
							for p := range k {
								bv := b[j*ldb+p]
								if mode == "cols" {
									bv = b[p*ldb+j]
								}
								want[i*(n+5)+j] += float64(a[i*lda+p]) * float64(bv)
							}
						}
					}
					tmp := make([]float32, mr*panelWidth)
					np := panels(n)
					ks.gemm(a, lda, m, k, &bp, n, c, n+5, 0, np/2, tmp)
					ks.gemm(a, lda, m, k, &bp, n, c, n+5, np/2, np, tmp)
					tol := 1e-5 * math.Sqrt(float64(k))
					for i, w := range want {
						if math.Abs(float64(c[i])-w) > tol*(1+math.Abs(w)) {
							t.Fatalf("C[%d][%d] = %v, want %v", i/(n+5), i%(n+5), c[i], w)
						}
					}
				})
			}
		}
	}
}

// TestDequant checks each kernel set's dequantisation of int8 panel rows:
// exactly float32(q)·scale.
func TestDequant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	q := make([]int8, 5*panelWidth)
	for i := range q {
		q[i] = int8(r.IntN(256) - 128)
	}
	scales := randomValues(r, panelWidth, 0.01)
	for _, ks := range kernelSets() {
		got := make([]float32, len(q))
		ks.dequant(got, q, scales)
		for i, x := range q {
			if want := float32(x) * scales[i%panelWidth]; got[i] != want {
				t.Fatalf("%s: value %d is %v, want %v", ks.name, i, got[i], want)
			}
		}
	}
}

// TestPackScaled checks that packScaled multiplies by its scale and pads
// the last panel with zeros.
func TestPackScaled(t *testing.T) {
	src := []float32{1, 2, 3, 4, 5, 6} // 2 rows of 2 values, 3 apart
	dst := make([]float32, packedSize(2, 2))
	for i := range dst {
		dst[i] = 9
	}
	packScaled(dst, src, 2, 2, 3, 0.5)
	want := map[int]float32{0: 0.5, 1: 2, panelWidth: 1, panelWidth + 1: 2.5}
	for i, v := range dst {
		if v != want[i] {
			t.Fatalf("packed[%d] = %v, want %v", i, v, want[i])
		}
	}
}

// TestVectorKernels checks each kernel set's max, exp-and-sum, scale and
// GELU against float64 on every length up to 70 (whole registers and
// tails), with values as softmax and GELU meet them.
func TestVectorKernels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ks := range kernelSets() {
		t.Run(ks.name, func(t *testing.T) {
			for n := range 71 {
				x := randomValues(r, n, 4)
				if n > 3 {
					x[1], x[2] = -10000, 30 // a masked score, a large one
				}
				wantMax := math.Inf(-1)
				for _, v := range x {
					wantMax = math.Max(wantMax, float64(v))
				}
				if got := ks.max(x); float64(got) != wantMax {
					t.Fatalf("n=%d: max %v, want %v", n, got, wantMax)
				}

				e := append([]float32(nil), x...)
				sub := float32(wantMax)
				if n == 0 {
					sub = 0
				}
				sum := ks.expSum(e, sub)
				var wantSum float64
				for i, v := range x {
					d := float64(v - sub) // as the kernels subtract, in float32
					w := math.Exp(d)
					if d < expMin {
						w = 0
					}
					wantSum += w
					if math.Abs(float64(e[i])-w) > 2e-7*w {
						t.Fatalf("n=%d: exp(%v) = %v, want %v", n, d, e[i], w)
					}
				}
				if math.Abs(float64(sum)-wantSum) > 1e-6*wantSum {
					t.Fatalf("n=%d: sum %v, want %v", n, sum, wantSum)
				}

				s := append([]float32(nil), x...)
				ks.scale(s, 0.25)
				for i := range s {
					if s[i] != x[i]*0.25 {
						t.Fatalf("n=%d: scale %v, want %v", n, s[i], x[i]*0.25)
					}
				}

				g := append([]float32(nil), x...)
				ks.gelu(g)
				for i, v := range x {
					z := float64(v)
					w := z * 0.5 * (1 + math.Erf(z/math.Sqrt2))
					if math.Abs(float64(g[i])-w) > 3e-7*math.Max(1, math.Abs(z)) {
						t.Fatalf("n=%d: gelu(%v) = %v, want %v", n, v, g[i], w)
					}
				}
			}
		})
	}
}

// TestKernelSetsAgree checks that the kernel sets give the same GELU and
// exp values on a dense grid, within a few units in the last place.
func TestKernelSetsAgree(t *testing.T) {
	sets := kernelSets()
	var grid []float32
	for v := -12.0; v <= 12; v += 1.0 / 512 {
		grid = append(grid, float32(v))
	}
	ref := sets[len(sets)-1] // portable
	want := append([]float32(nil), grid...)
	ref.gelu(want)
	wantExp := append([]float32(nil), grid...)
	ref.expSum(wantExp, 12)
	for _, ks := range sets[:len(sets)-1] {
		got := append([]float32(nil), grid...)
		ks.gelu(got)
		gotExp := append([]float32(nil), grid...)
		ks.expSum(gotExp, 12)
		for i := range grid {
			if math.Abs(float64(got[i]-want[i])) > 2e-7*math.Max(1, math.Abs(float64(grid[i]))) {
				t.Fatalf("%s: gelu(%v) = %v, portable %v", ks.name, grid[i], got[i], want[i])
			}
			if math.Abs(float64(gotExp[i]-wantExp[i])) > 3e-7*float64(wantExp[i]) {
				t.Fatalf("%s: exp(%v) = %v, portable %v", ks.name, grid[i]-12, gotExp[i], wantExp[i])
			}
		}
	}
}

// TestErf checks the float32 erf and exp against math.Erf and math.Exp on
// a dense grid.
func TestErf(t *testing.T) {
	var worstErf, worstExp float64
	for v := -7.0; v <= 7; v += 1.0 / 4096 {
		got := float64(erff(float32(v)))
		worstErf = math.Max(worstErf, math.Abs(got-math.Erf(float64(float32(v)))))
	}
	for v := -80.0; v <= 80; v += 1.0 / 1024 {
		x := float64(float32(v))
		worstExp = math.Max(worstExp, math.Abs(float64(expf(float32(v)))-math.Exp(x))/math.Exp(x))
	}
	if worstErf > 2e-7 {
		t.Errorf("erf is %g from math.Erf at worst, want at most 2e-7", worstErf)
	}
	if worstExp > 2e-7 {
		t.Errorf("exp is %g from math.Exp at worst (relative), want at most 2e-7", worstExp)
	}
	if expf(-80.5) != 0 || expf(-1e4) != 0 {
		t.Errorf("exp below -80 = %v, %v; want 0", expf(-80.5), expf(-1e4))
	}
}

// TestLayerNorm checks each kernel set's layer normalisation against
// float64, on lengths that are and are not whole registers.
func TestLayerNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, ks := range kernelSets() {
		for _, n := range []int{1, 7, 8, 16, 40, 384, 1536} {
			x := randomValues(r, n, 3)
			for i := range x {
				x[i] += 5 // a mean far from 0
			}
			scale, bias := randomValues(r, n, 1), randomValues(r, n, 1)
			var mean, sq float64
			for _, v := range x {
				mean += float64(v)
			}
			mean /= float64(n)
			for _, v := range x {
				sq += (float64(v) - mean) * (float64(v) - mean)
			}
			inv := 1 / math.Sqrt(sq/float64(n)+1e-12)
			got := append([]float32(nil), x...)
			ks.layerNorm(got, scale, bias, 1e-12)
			for i, v := range x {
				want := (float64(v)-mean)*inv*float64(scale[i]) + float64(bias[i])
				if math.Abs(float64(got[i])-want) > 2e-5*(1+math.Abs(want)) {
					t.Fatalf("%s n=%d: value %d is %v, want %v", ks.name, n, i, got[i], want)
				}
			}
		}
	}
}
