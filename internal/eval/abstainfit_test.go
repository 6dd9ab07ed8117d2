package eval_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
)

// syntheticFit builds two sets' groups and tasks without any index: set A's
// own answerable tasks (150 with a relevant skill in the top three, 100 of
// them first, and 50 the ranking missed, whose best cosine is missed),
// set B's tasks foreign to A's catalog, and B's own tasks.
func syntheticFit(missed float64) ([]eval.TaskGroup, []eval.AbstentionTask) {
	groups := []eval.TaskGroup{
		{Name: "a", Source: "a", Catalog: "a", Own: true, Bound: eval.BoundHidden},
		{Name: "b>a", Source: "b", Catalog: "a", Bound: eval.BoundConfident},
		{Name: "b", Source: "b", Catalog: "b", Own: true, Bound: eval.BoundHidden},
	}
	r := rand.New(rand.NewPCG(1, 2))
	var tasks []eval.AbstentionTask
	add := func(g int, needs, top3, top1 bool, cos float64) {
		tasks = append(tasks, eval.AbstentionTask{Group: g, Text: fmt.Sprintf("t%d", len(tasks)), Needs: needs, Top3: top3, Top1: top1,
			Rule: match.RuleClassifier, Features: match.Features{DenseTop: cos}})
	}
	for i := range 150 {
		add(0, true, true, i < 100, 0.3+0.5*r.Float64())
	}
	for range 50 {
		add(0, true, false, false, missed)
	}
	for range 200 {
		add(1, false, false, false, 0.5*r.Float64())
	}
	for i := range 100 {
		add(2, true, true, i < 50, 0.35+0.5*r.Float64())
	}
	return groups, tasks
}

// TestFitTasksCutoffs checks the two cutoffs against their budgets and
// that the answerable tasks the ranking missed play no part in the fit.
func TestFitTasksCutoffs(t *testing.T) {
	groups, tasks := syntheticFit(0.05)
	opt := eval.FitOptions{Features: []string{match.FeatDenseTop}, Hidden: 0.04, NotConfident: 0.8}
	fit, err := eval.FitTasks(groups, tasks, opt)
	if err != nil {
		t.Fatal(err)
	}
	cls := fit.Classifier
	if cls.Weights[0] <= 0 || cls.Cutoff <= 0 || cls.Confident <= cls.Cutoff {
		t.Fatalf("classifier %+v: want a positive weight and 0 < cutoff < confident", cls)
	}
	a, foreign := fit.InSample[0], fit.InSample[1]
	if a.NeedSkill != 200 || foreign.NoSkill != 200 {
		t.Fatalf("rows %+v", fit.InSample)
	}
	// The budget counts every answerable task, the missed ones too.
	if a.Hidden > 8 || a.HiddenTop1 > 4 {
		t.Errorf("set a: %d hidden in the top 3, %d at the first candidate; budgets 8 and 4", a.Hidden, a.HiddenTop1)
	}
	if a.Hidden == 0 {
		t.Error("set a: the cutoff hides nothing although its budget allows 8: it is not the largest allowed")
	}
	if notConf := foreign.Abstained + foreign.NoSkillLow; notConf < 160 {
		t.Errorf("foreign tasks: %d of 200 under the confident cutoff, want at least 160", notConf)
	}
	if a.LowConfidence == 0 || a.LowConfidence == 200 {
		t.Errorf("set a: %d low-confidence answers; the band between the cutoffs should hold some", a.LowConfidence)
	}
	// Of the 150 tasks with a relevant skill in the top three, those
	// neither abstained on nor low-confidence are confident.
	if a.Top3 != 150 || a.Top3Confident <= 0 || a.Top3Confident > 150-a.Hidden {
		t.Errorf("set a: %d of %d top-3 tasks confident (%d hidden)", a.Top3Confident, a.Top3, a.Hidden)
	}

	// Missed tasks are neither positives nor negatives: moving their
	// features changes nothing.
	groups2, tasks2 := syntheticFit(0.95)
	fit2, err := eval.FitTasks(groups2, tasks2, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fit.Classifier, fit2.Classifier) {
		t.Errorf("the missed tasks' features moved the classifier:\n%+v\n%+v", fit.Classifier, fit2.Classifier)
	}

	// A larger budget never lowers the cutoff.
	opt.Hidden = 0.1
	wider, err := eval.FitTasks(groups, tasks, opt)
	if err != nil {
		t.Fatal(err)
	}
	if wider.Classifier.Cutoff < cls.Cutoff {
		t.Errorf("cutoff %.4f with budget 0.1, %.4f with 0.04", wider.Classifier.Cutoff, cls.Cutoff)
	}

	// Leaving set b out leaves set a's answerable tasks alone, with no
	// task that needs no skill to fit against: a note says so, and the
	// held-out rows keep their k-fold verdicts.
	if len(fit.Notes) == 0 || !reflect.DeepEqual(fit.LeaveSetOut[0], fit.CrossValidated[0]) {
		t.Errorf("notes %q; set a left out %+v, k-fold %+v", fit.Notes, fit.LeaveSetOut[0], fit.CrossValidated[0])
	}
}
