package eval

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestReadQueries(t *testing.T) {
	good := `{"id":"a","query":"fill a form","relevant":["pdf"]}

{"id":"b","query":"what is love","relevant":[]}
`
	qs, err := ReadQueries(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || !qs[0].NeedSkill() || qs[1].NeedSkill() {
		t.Errorf("got %+v", qs)
	}
	tests := []struct{ in, want string }{
		{`{"id":"a","query":"x"}` + "\n" + `not json`, "line 2"},
		{`{"id":"a","query":"x"}` + "\n" + `{"id":"a","query":"y"}`, `id "a" repeats line 1`},
		{`{"query":"x"}`, "needs an id"},
		{`{"id":"a","query":"  "}`, "needs an id and a query"},
		{``, "no queries"},
	}
	for _, tc := range tests {
		if _, err := ReadQueries(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadQueries(%q): error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
	if Digest(qs) == Digest(qs[:1]) || Digest(qs) != Digest(append([]Query(nil), qs...)) {
		t.Error("Digest does not identify the query set by content")
	}
}

func TestQueryRanking(t *testing.T) {
	tests := []struct {
		ranked, relevant []string
		want             Ranking
	}{
		{[]string{"a", "b", "c"}, []string{"a"}, Ranking{Hit1: 1, R3: 1, R5: 1, MRR10: 1, NDCG10: 1}},
		{[]string{"x", "a"}, []string{"a"}, Ranking{R3: 1, R5: 1, MRR10: 0.5, NDCG10: 1 / math.Log2(3)}},
		{[]string{"a", "x", "x", "x", "b"}, []string{"a", "b"}, Ranking{Hit1: 1, R3: 0.5, R5: 1, MRR10: 1,
			NDCG10: (1 + 1/math.Log2(6)) / (1 + 1/math.Log2(3))}},
		{nil, []string{"a"}, Ranking{}},
	}
	for _, tc := range tests {
		got := queryRanking(tc.ranked, tc.relevant)
		if math.Abs(got.NDCG10-tc.want.NDCG10) > 1e-12 || got.Hit1 != tc.want.Hit1 || got.R3 != tc.want.R3 ||
			got.R5 != tc.want.R5 || got.MRR10 != tc.want.MRR10 {
			t.Errorf("queryRanking(%v, %v) = %+v, want %+v", tc.ranked, tc.relevant, got, tc.want)
		}
	}
}

func TestAbstentionAndAUROC(t *testing.T) {
	a := abstention([]bool{true, true, false, false}, []bool{true, false, true, false})
	if a.Abstained != 2 || a.Correct != 1 || a.Precision != 50 || a.Recall != 50 || a.WrongOnAnswerable != 1 {
		t.Errorf("abstention %+v", a)
	}
	if a := abstention([]bool{false}, []bool{false}); a.Precision != -1 || a.Recall != -1 {
		t.Errorf("undefined figures: %+v", a)
	}
	if v := auroc([]float64{1, 2, 3, 4}, []bool{false, false, true, true}); v != 1 {
		t.Errorf("auroc of a perfect split = %v", v)
	}
	if v := auroc([]float64{1, 1}, []bool{false, true}); v != 0.5 {
		t.Errorf("auroc of a tie = %v", v)
	}
	l := latency([]time.Duration{5, 1, 3, 2, 4})
	if l.P50 != 3 || l.P99 != 5 || l.Mean != 3 {
		t.Errorf("latency %+v", l)
	}
}

func TestBestCutoff(t *testing.T) {
	scores := []float64{0.1, 0.2, 0.3, 0.8, 0.9}
	noSkill := []bool{true, true, false, false, false}
	cut, f := bestCutoff(scores, noSkill, allIndexes(5), 1)
	if cut <= 0.2 || cut >= 0.3 || f != 1 {
		t.Errorf("cutoff %v F %v, want between 0.2 and 0.3 with F 1", cut, f)
	}
	folds := stratifiedFolds([]bool{true, true, false, false, false, false}, 2)
	for _, fold := range folds {
		pos := 0
		for _, i := range fold {
			if i < 2 {
				pos++
			}
		}
		if pos != 1 || len(fold) != 3 {
			t.Errorf("fold %v is not stratified", fold)
		}
	}
}

// TestUndefinedFiguresHaveNoUnit checks that a percentage that is undefined
// reads "n/a", never "n/a%".
func TestUndefinedFiguresHaveNoUnit(t *testing.T) {
	var b strings.Builder
	rep := &Report{Abstention: Abstention{Precision: -1, Recall: 50}}
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	cal := &Calibration{ThresholdCurve: []CurvePoint{{Precision: -1, Recall: 25}}, ThresholdCV: Abstention{Precision: -1, Recall: -1}}
	if err := cal.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "n/a%") || !strings.Contains(out, "precision n/a, recall 50.0%") || !strings.Contains(out, "25.0%") {
		t.Errorf("undefined figures printed wrong:\n%s", out)
	}
}
