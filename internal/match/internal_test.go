package match

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/mcpsag/router/internal/skill"
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
		if got := dot(a, b); got != want {
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

func TestFitClassifierSeparates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var samples []Sample
	for range 400 {
		yes := r.IntN(2) == 0
		top := 0.3 + 0.1*r.NormFloat64()
		if yes {
			top += 0.3
		}
		samples = append(samples, Sample{Features: Features{DenseTop: top, Coverage: r.Float64()}, Positive: yes})
	}
	c, err := FitClassifier(skill.ModeHybrid, "m", []string{FeatDenseTop, FeatCoverage}, samples, FitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Weights[0] <= 1 || math.Abs(c.Weights[1]) > 0.5 {
		t.Errorf("weights %v: want a strong dense_top weight and a small coverage weight", c.Weights)
	}
	right := 0
	for _, s := range samples {
		if (c.Probability(s.Features) >= 0.5) == s.Positive {
			right++
		}
	}
	if right < 340 {
		t.Errorf("%d of 400 right, want at least 340", right)
	}
	if _, err := FitClassifier(skill.ModeHybrid, "m", []string{FeatDenseTop}, samples[:1], FitSettings{L2: 1}); err == nil {
		t.Error("one class accepted")
	}
	if _, err := FitClassifier(skill.ModeKeyword, "m", []string{FeatDenseTop}, samples, FitSettings{L2: 1}); err == nil {
		t.Error("a dense feature accepted for a keyword-only classifier")
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
			want[i] = dot(q, d.row(int32(i)))
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
			if want := dot(q, row); math.Float32bits(got[k]) != math.Float32bits(want) {
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

// TestFitClassifierSigns: a sign constraint holds a weight that would take
// the forbidden sign at zero, and a feature whose best weight has the
// allowed sign is not held back.
func TestFitClassifierSigns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var samples []Sample
	for range 600 {
		yes := r.IntN(2) == 0
		f := Features{DenseTop: 0.3 + 0.1*r.NormFloat64(), Coverage: 0.5 + 0.1*r.NormFloat64(), Boost: r.Float64()}
		if yes {
			f.DenseTop += 0.2
			f.Coverage -= 0.1 // the training catalogs' quirk: answerable tasks know fewer words
		}
		samples = append(samples, Sample{Features: f, Positive: yes})
	}
	names := []string{FeatDenseTop, FeatCoverage, FeatBoost}
	free, err := FitClassifier(skill.ModeHybrid, "m", names, samples, FitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	if free.Weights[1] >= -0.5 {
		t.Fatalf("unconstrained coverage weight %.3f: the test data should make it clearly negative", free.Weights[1])
	}
	signed, err := FitClassifier(skill.ModeHybrid, "m", names, samples,
		FitSettings{L2: 1, Signs: map[string]int{FeatDenseTop: 1, FeatCoverage: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if signed.Weights[1] != 0 || signed.Weights[0] <= 1 {
		t.Errorf("constrained weights %v: want coverage held at 0 and a strong dense_top weight", signed.Weights)
	}
	// A negative constraint on a feature that wants a negative weight
	// changes nothing.
	same, err := FitClassifier(skill.ModeHybrid, "m", names, samples, FitSettings{L2: 1, Signs: map[string]int{FeatCoverage: -1}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		if math.Abs(same.Weights[i]-free.Weights[i]) > 1e-9 {
			t.Errorf("weight %s: %.6f with an inactive constraint, %.6f without", names[i], same.Weights[i], free.Weights[i])
		}
	}
}

// TestFitClassifierWeights: a sample of weight 2 counts as two copies.
func TestFitClassifierWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var once, twice []Sample
	for range 200 {
		yes := r.IntN(3) == 0
		f := Features{DenseTop: 0.3 + 0.1*r.NormFloat64()}
		if yes {
			f.DenseTop += 0.15
		}
		heavy := r.IntN(2) == 0
		s := Sample{Features: f, Positive: yes}
		twice = append(twice, s)
		if heavy {
			twice = append(twice, s)
			s.Weight = 2
		}
		once = append(once, s)
	}
	a, err := FitClassifier(skill.ModeHybrid, "m", []string{FeatDenseTop}, once, FitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := FitClassifier(skill.ModeHybrid, "m", []string{FeatDenseTop}, twice, FitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{0.2, 0.4, 0.6} {
		f := Features{DenseTop: x}
		if pa, pb := a.Probability(f), b.Probability(f); math.Abs(pa-pb) > 1e-6 {
			t.Errorf("p(%.1f) = %.6f with weights, %.6f with copies", x, pa, pb)
		}
	}
	bad := append([]Sample(nil), once...)
	bad[0].Weight = -1
	if _, err := FitClassifier(skill.ModeHybrid, "m", []string{FeatDenseTop}, bad, FitSettings{L2: 1}); err == nil {
		t.Error("a negative sample weight was accepted")
	}
}
