package eval_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/eval"
)

// offTopic are answerable queries of an imaginary set whose skills the
// routing tree does not have.
func offTopic() []eval.Query {
	texts := []string{
		"bake a sourdough bread with a crisp crust", "plan a wine tour in London", "find a hadith about patience",
		"recommend a workout routine for my abs", "what is the horoscope for Leo tomorrow", "book a table for two in Rome",
		"suggest a playlist for a road trip", "translate hello into Japanese", "knit a scarf for winter",
		"train my puppy to sit", "find cheap flights to Lisbon", "write a birthday poem for my aunt",
	}
	var qs []eval.Query
	for i, t := range texts {
		qs = append(qs, eval.Query{ID: fmt.Sprint("o", i), Query: t, Relevant: []string{"some-api"}})
	}
	return append(qs, eval.Query{ID: "none", Query: "what is the meaning of life", Relevant: []string{}})
}

func TestForeign(t *testing.T) {
	qs := offTopic()
	got := eval.Foreign(qs, 5, 7)
	if len(got) != 5 {
		t.Fatalf("%d tasks, want 5", len(got))
	}
	for _, q := range got {
		if q.NeedSkill() || !strings.HasPrefix(q.ID, "fo") {
			t.Errorf("task %+v: want an answerable query relabelled as needing none, id prefixed with f", q)
		}
	}
	if again := eval.Foreign(qs, 5, 7); !slices.EqualFunc(got, again, func(a, b eval.Query) bool { return a.ID == b.ID }) {
		t.Error("the same seed drew other tasks")
	}
	if all := eval.Foreign(qs, 100, 7); len(all) != 12 {
		t.Errorf("asking for more than there are gave %d tasks, want the 12 answerable ones", len(all))
	}
	if qs[0].Relevant[0] != "some-api" {
		t.Error("Foreign changed its input")
	}
}

// TestCrossCatalogAndFitAbstention runs off-topic tasks against the routing
// tree (tiny model) and fits an abstention classifier on the tree's own
// queries and those tasks.
func TestCrossCatalogAndFitAbstention(t *testing.T) {
	ctx := context.Background()
	cfg := goldenConfig()
	c, err := eval.Open(ctx, eval.Options{Skills: routingDir, ModelDir: tinyModelDir(t), Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	own, err := eval.LoadQueries(filepath.Join(routingDir, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := eval.CrossCatalog(ctx, c.Index, offTopic(), eval.CrossOptions{N: 10})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Tasks != 10 || cr.Abstained+len(cr.Served) != cr.Tasks || cr.Rate != 100*float64(cr.Abstained)/10 {
		t.Errorf("report does not add up: %d tasks, %d abstained, %d served, rate %.1f", cr.Tasks, cr.Abstained, len(cr.Served), cr.Rate)
	}
	for _, s := range cr.Served {
		if s.Skill == "" || s.Query == "" {
			t.Errorf("served task without its skill or text: %+v", s)
		}
	}
	var b strings.Builder
	if err := cr.WriteText(&b); err != nil || !strings.Contains(b.String(), "10 tasks") {
		t.Errorf("WriteText: %v\n%s", err, b.String())
	}
	if _, err := eval.CrossCatalog(ctx, c.Index, []eval.Query{{ID: "x", Query: "y"}}, eval.CrossOptions{}); err == nil {
		t.Error("a set without answerable queries gave no error")
	}

	groups := []eval.TaskGroup{
		{Name: "routing", Catalog: "routing", Own: true, Index: c.Index, Queries: own},
		{Name: "off-topic", Catalog: "routing", Index: c.Index, Queries: eval.Foreign(offTopic(), 12, 1)},
	}
	fit, err := eval.FitAbstention(ctx, groups, eval.FitOptions{MaxWrong: 0.1, Folds: 3})
	if err != nil {
		t.Fatal(err)
	}
	if fit.Classifier == nil || fit.Classifier.Cutoff < 0 || fit.Classifier.Cutoff > 1 {
		t.Fatalf("classifier %+v", fit.Classifier)
	}
	for _, figs := range [][]eval.GroupFigures{fit.CrossValidated, fit.LeaveCatalogOut, fit.InSample} {
		if len(figs) != 2 || figs[0].NeedSkill+figs[0].NoSkill != len(own) || figs[1].NoSkill != 12 {
			t.Errorf("figures do not cover the groups: %+v", figs)
		}
	}
	in := fit.InSample[0]
	if budget := in.NeedSkill / 10; in.Wrong > budget {
		t.Errorf("in-sample the cutoff abstains on %d answerable queries, over its budget of %d", in.Wrong, budget)
	}
	only := []eval.TaskGroup{{Name: "answerable", Index: c.Index, Own: true, Queries: eval.Foreign(offTopic(), 0, 1)}}
	if _, err := eval.FitAbstention(ctx, only, eval.FitOptions{}); err == nil {
		t.Error("fitting without tasks gave no error")
	}
}
