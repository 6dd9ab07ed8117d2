package match

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

func TestNormalizeText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"pdf-forms", "pdf forms"},
		{"fill_form", "fill form"},
		{"fillForm", "fill Form"},
		{"PDFForm", "PDF Form"},
		{"getPM2.5Level", "get PM2.5 Level"},
		{"a\x00b\tc", "a b c"},
		{"bad \xff byte", "bad   byte"},
		{"naïve Ünïcode", "naïve Ünïcode"},
	}
	for _, tc := range tests {
		if got := normalizeText(tc.in); got != tc.want {
			t.Errorf("normalizeText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMinHeapKeepsBest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{0, 1, 5, 100} {
		var all []entry
		h := newHeap(nil, k)
		for i := range 1000 {
			e := entry{doc: int32(i), ord: int32(999 - i), score: float32(r.IntN(50))}
			all = append(all, e)
			h.offer(e)
		}
		sort.Slice(all, func(i, j int) bool { return worse(all[j], all[i]) })
		got := h.sorted()
		if want := all[:k]; !slices.Equal(got, want) {
			t.Errorf("k=%d: got %v, want %v", k, got[:min(3, len(got))], want[:min(3, len(want))])
		}
	}
}

func TestDot(t *testing.T) {
	for n := range 11 {
		a, b := make([]float32, n), make([]float32, n)
		want := float32(0)
		for i := range a {
			a[i], b[i] = float32(i+1), float32(2*i-3)
			want += a[i] * b[i]
		}
		if got := Dot(a, b); got != want {
			t.Errorf("n=%d: dot %v, want %v", n, got, want)
		}
	}
}

func TestRarity(t *testing.T) {
	if r := rarity(1, 1000); r != 1 {
		t.Errorf("rarity of a word one skill uses = %v, want 1", r)
	}
	if r := rarity(1000, 1000); r > 0.01 {
		t.Errorf("rarity of a word every skill uses = %v, want ~0", r)
	}
	if a, b := rarity(10, 1000), rarity(100, 1000); a <= b {
		t.Errorf("rarity not decreasing: %v <= %v", a, b)
	}
}

func TestParallelScanMatchesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	n, dim := 6000, 256 // over parallelMACs
	vecs := make([][]float32, n)
	for i := range vecs {
		if i%97 == 0 {
			continue // some skills have no vector
		}
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		vecs[i] = v
	}
	d, bad := newDense(vecs, n, false)
	if bad != 0 || d.count != n-(n+96)/97 {
		t.Fatalf("bad %d count %d", bad, d.count)
	}
	q, ok := d.query(vecs[1])
	if !ok {
		t.Fatal("query rejected")
	}
	got, want := make([]float32, n), make([]float32, n)
	d.exactScan(q, n, got)
	for i := range want {
		want[i] = -2
		if vecs[i] != nil {
			want[i] = Dot(q, d.row(int32(i)))
		}
	}
	if !slices.Equal(got, want) {
		t.Error("parallel scan differs from the serial one")
	}
	if math.Abs(float64(got[1])-1) > 1e-5 || got[0] != -2 {
		t.Errorf("self cosine %v, missing row %v", got[1], got[0])
	}
}

func TestAdaptiveShare(t *testing.T) {
	for _, tc := range []struct{ weight, coverage, want float64 }{
		{0.5, 0, 0.5}, {0.5, 1, 0}, {0.5, 0.8, 0.1}, {1, 0.25, 0.75}, {0.5, -1, 0.5}, {0.5, 2, 0},
	} {
		if got := adaptiveShare(tc.weight, tc.coverage); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("adaptiveShare(%v, %v) = %v, want %v", tc.weight, tc.coverage, got, tc.want)
		}
	}
}

func TestZScoreFusion(t *testing.T) {
	list := []entry{{0, 0, 3}, {1, 1, 2}, {2, 2, 1}}
	z := zScore(list, 3)
	if z(2) != 0 || z(3) <= 0 || z(1) >= 0 {
		t.Errorf("z-scores %v %v %v", z(3), z(2), z(1))
	}
	if z := zScore(nil, 10); z(5) != 0 {
		t.Error("empty list must give 0")
	}
	m := minMax(list, 3, false)
	if m(3) != 1 || m(1) != 0 || m(2) != 0.5 || m(10) != 1 {
		t.Errorf("min-max %v %v %v", m(3), m(2), m(1))
	}
	if m := minMax(list, 10, true); m(0) != 0 || m(1.5) != 0.5 {
		t.Errorf("a short BM25 list must have floor 0: %v", m(1.5))
	}
}

func TestDots8IsDot(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 3, 4, 5, 8, 31, 32, 33, 256, 259} {
		q := make([]float32, dim)
		for i := range q {
			q[i] = float32(r.NormFloat64())
		}
		var rows [8][]float32
		for k := range rows {
			rows[k] = make([]float32, dim)
			for i := range rows[k] {
				rows[k][i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
			}
		}
		var got [8]float32
		dots8(q, dup4(q, nil), &rows, &got)
		for k, row := range rows {
			if want := Dot(q, row); math.Float32bits(got[k]) != math.Float32bits(want) {
				t.Errorf("dim %d row %d: dots8 %v, dot %v", dim, k, got[k], want)
			}
		}
	}
}

func TestDotsInt8MatchesPortable(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const stride, n = 128, 37
	q := make([]int16, stride)
	for i := range q {
		q[i] = int16(r.IntN(32767) - 16383)
	}
	rows := make([]int8, n*stride)
	for i := range rows {
		rows[i] = int8(r.IntN(255) - 127)
	}
	got, want := make([]int32, n), make([]int32, n)
	dotsInt8(q, rows, stride, got)
	dotsInt8Go(q, rows, stride, want)
	if !slices.Equal(got, want) {
		t.Errorf("AVX2 %v, portable %v", got[:4], want[:4])
	}
}

func TestDotsU8MatchesPortable(t *testing.T) {
	if !haveVNNI {
		t.Skip("no AVX-512 VNNI")
	}
	r := rand.New(rand.NewPCG(9, 10))
	const stride, n = 256, 29
	q := make([]uint8, stride)
	for i := range q {
		q[i] = uint8(r.IntN(256))
	}
	rows := make([]int8, n*stride)
	for i := range rows {
		rows[i] = int8(r.IntN(255) - 127)
	}
	got, want := make([]int32, n), make([]int32, n)
	dotsU8(q, rows, stride, got)
	dotsU8Go(q, rows, stride, want)
	if !slices.Equal(got, want) {
		t.Errorf("AVX-512 %v, portable %v", got[:4], want[:4])
	}
}
