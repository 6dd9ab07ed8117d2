package eval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// TestFitClassifierSeparates: a feature that separates the classes gets a
// strong weight, one that does not a small one; one class alone, or a
// dense feature for a keyword-only classifier, is refused.
func TestFitClassifierSeparates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var samples []sample
	for range 400 {
		yes := r.IntN(2) == 0
		top := 0.3 + 0.1*r.NormFloat64()
		if yes {
			top += 0.3
		}
		samples = append(samples, sample{Features: match.Features{DenseTop: top, Coverage: r.Float64()}, Positive: yes})
	}
	c, err := fitClassifier(skill.ModeHybrid, "m", []string{match.FeatDenseTop, match.FeatCoverage}, samples, fitSettings{L2: 1})
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
	if _, err := fitClassifier(skill.ModeHybrid, "m", []string{match.FeatDenseTop}, samples[:1], fitSettings{L2: 1}); err == nil {
		t.Error("one class accepted")
	}
	if _, err := fitClassifier(skill.ModeKeyword, "m", []string{match.FeatDenseTop}, samples, fitSettings{L2: 1}); err == nil {
		t.Error("a dense feature accepted for a keyword-only classifier")
	}
}

// TestFitClassifierSigns: a sign constraint holds a weight that would take
// the forbidden sign at zero, and a feature whose best weight has the
// allowed sign is not held back.
func TestFitClassifierSigns(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var samples []sample
	for range 600 {
		yes := r.IntN(2) == 0
		f := match.Features{DenseTop: 0.3 + 0.1*r.NormFloat64(), Coverage: 0.5 + 0.1*r.NormFloat64(), Boost: r.Float64()}
		if yes {
			f.DenseTop += 0.2
			f.Coverage -= 0.1 // the training catalogs' quirk: answerable tasks know fewer words
		}
		samples = append(samples, sample{Features: f, Positive: yes})
	}
	names := []string{match.FeatDenseTop, match.FeatCoverage, match.FeatBoost}
	free, err := fitClassifier(skill.ModeHybrid, "m", names, samples, fitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	if free.Weights[1] >= -0.5 {
		t.Fatalf("unconstrained coverage weight %.3f: the test data should make it clearly negative", free.Weights[1])
	}
	signed, err := fitClassifier(skill.ModeHybrid, "m", names, samples,
		fitSettings{L2: 1, Signs: map[string]int{match.FeatDenseTop: 1, match.FeatCoverage: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if signed.Weights[1] != 0 || signed.Weights[0] <= 1 {
		t.Errorf("constrained weights %v: want coverage held at 0 and a strong dense_top weight", signed.Weights)
	}
	// A negative constraint on a feature that wants a negative weight
	// changes nothing.
	same, err := fitClassifier(skill.ModeHybrid, "m", names, samples, fitSettings{L2: 1, Signs: map[string]int{match.FeatCoverage: -1}})
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
	var once, twice []sample
	for range 200 {
		yes := r.IntN(3) == 0
		f := match.Features{DenseTop: 0.3 + 0.1*r.NormFloat64()}
		if yes {
			f.DenseTop += 0.15
		}
		heavy := r.IntN(2) == 0
		s := sample{Features: f, Positive: yes}
		twice = append(twice, s)
		if heavy {
			twice = append(twice, s)
			s.Weight = 2
		}
		once = append(once, s)
	}
	a, err := fitClassifier(skill.ModeHybrid, "m", []string{match.FeatDenseTop}, once, fitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := fitClassifier(skill.ModeHybrid, "m", []string{match.FeatDenseTop}, twice, fitSettings{L2: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float64{0.2, 0.4, 0.6} {
		f := match.Features{DenseTop: x}
		if pa, pb := a.Probability(f), b.Probability(f); math.Abs(pa-pb) > 1e-6 {
			t.Errorf("p(%.1f) = %.6f with weights, %.6f with copies", x, pa, pb)
		}
	}
	bad := append([]sample(nil), once...)
	bad[0].Weight = -1
	if _, err := fitClassifier(skill.ModeHybrid, "m", []string{match.FeatDenseTop}, bad, fitSettings{L2: 1}); err == nil {
		t.Error("a negative sample weight was accepted")
	}
}
