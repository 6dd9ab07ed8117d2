package eval_test

import (
	"context"
	"fmt"
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
	c, own := openRouting(t)
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
		{Name: "routing", Source: "routing", Catalog: "routing", Own: true, Bound: eval.BoundHidden, Index: c.Index, Queries: own},
		{Name: "off-topic", Source: "elsewhere", Catalog: "routing", Bound: eval.BoundConfident, Index: c.Index,
			Queries: eval.Foreign(offTopic(), 12, 1)},
	}
	tasks, err := eval.CollectTasks(ctx, groups)
	if err != nil {
		t.Fatal(err)
	}
	fit, err := eval.FitTasks(groups, tasks, eval.FitOptions{Hidden: 0.1, Folds: 3})
	if err != nil {
		t.Fatal(err)
	}
	cls := fit.Classifier
	if cls == nil || cls.Cutoff < 0 || cls.Confident < cls.Cutoff || cls.Confident > 1 {
		t.Fatalf("classifier %+v", cls)
	}
	for _, figs := range [][]eval.GroupFigures{fit.CrossValidated, fit.LeaveSetOut, fit.InSample} {
		if len(figs) != 2 || figs[0].NeedSkill+figs[0].NoSkill != len(own) || figs[1].NoSkill != 12 {
			t.Errorf("figures do not cover the groups: %+v", figs)
		}
	}
	// Holding out either set leaves nothing to fit on, which the notes
	// say.
	if len(fit.Notes) == 0 {
		t.Error("no note for held-out figures that could not be computed")
	}
	in := fit.InSample[0]
	if budget := in.NeedSkill / 10; in.Hidden > budget {
		t.Errorf("in-sample the cutoff hides %d answerable queries, over its budget of %d", in.Hidden, budget)
	}
	explicit := 0
	for _, tk := range tasks {
		if tk.Group == 1 && tk.Forced && !tk.Abstain {
			explicit++
		}
	}
	if off := fit.InSample[1]; off.Abstained+off.NoSkillLow < (3*(off.NoSkill-explicit)+3)/4 {
		t.Errorf("off-topic: %d abstained and %d low-confidence of %d (%d explicit), want at least 3 in 4 of the others under the confident cutoff",
			off.Abstained, off.NoSkillLow, off.NoSkill, explicit)
	}
	only := []eval.TaskGroup{{Name: "answerable", Index: c.Index, Own: true, Queries: eval.Foreign(offTopic(), 0, 1)}}
	if _, err := eval.FitAbstention(ctx, only, eval.FitOptions{}); err == nil {
		t.Error("fitting without tasks gave no error")
	}
}

// TestSubCatalogs draws sub-catalogs of the routing tree: each group's
// index holds the drawn skills only, a query is answerable exactly when
// one of its relevant skills was drawn, and the draws repeat with the
// seed.
func TestSubCatalogs(t *testing.T) {
	ctx := context.Background()
	c, qs := openRouting(t)
	opt := eval.SubCatalogOptions{Name: "routing", Catalog: "routing", Own: true, Sizes: []int{4, 8, 1000},
		Answerable: 12, NoSkill: 6, MinDraws: 2, MaxDraws: 20, Seed: 3}
	gs, err := c.SubCatalogs(ctx, qs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) < 4 {
		t.Fatalf("%d groups, want at least two draws of each of sizes 4 and 8 (1000 is over the catalog)", len(gs))
	}
	answer := map[int]int{}
	for _, g := range gs {
		if g.Size != 4 && g.Size != 8 || g.Name != fmt.Sprintf("routing@%d", g.Size) || !g.Own || g.Catalog != "routing" {
			t.Errorf("group %s size %d own %v catalog %s", g.Name, g.Size, g.Own, g.Catalog)
		}
		if g.Index.Len() != g.Size {
			t.Errorf("%s: index of %d skills", g.Name, g.Index.Len())
		}
		drawn := map[string]bool{}
		for _, s := range g.Index.Skills() {
			drawn[s.Name] = true
		}
		for _, q := range g.Queries {
			for _, r := range q.Relevant {
				if !drawn[r] {
					t.Errorf("%s: query %s keeps relevant skill %s that was not drawn", g.Name, q.ID, r)
				}
			}
			if q.NeedSkill() {
				answer[g.Size]++
			}
		}
	}
	for _, size := range []int{4, 8} {
		if answer[size] == 0 {
			t.Errorf("size %d: no answerable task", size)
		}
	}
	again, err := c.SubCatalogs(ctx, qs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(gs) || again[0].Queries[0].ID != gs[0].Queries[0].ID || again[0].Index.Skills()[0].Name != gs[0].Index.Skills()[0].Name {
		t.Error("the same seed drew other sub-catalogs")
	}

	// Fit over the whole catalog and the draws.
	animals := []eval.Query{{ID: "a1", Query: "zebra giraffe hippopotamus", Relevant: []string{}},
		{ID: "a2", Query: "okapi wombat platypus", Relevant: []string{}}}
	groups := append([]eval.TaskGroup{
		{Name: "routing", Source: "routing", Catalog: "routing", Own: true, Bound: eval.BoundHidden, Index: c.Index, Queries: qs},
		{Name: "off-topic", Source: "elsewhere", Catalog: "routing", Bound: eval.BoundConfident, Index: c.Index, Queries: eval.Foreign(offTopic(), 12, 1)},
		{Name: "animals", Source: "zoo", Catalog: "routing", Index: c.Index, Queries: animals},
	}, gs...)
	tasks, err := eval.CollectTasks(ctx, groups)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if groups[tk.Group].Name == "animals" && (tk.Features.NoKeyword != 1 || tk.Forced) {
			t.Fatalf("task %q: no_keyword %v, forced %v; want a keywordless task the classifier would judge", tk.Text, tk.Features.NoKeyword, tk.Forced)
		}
	}
	fo := eval.FitOptions{Hidden: 0.1, Folds: 3, Keywordless: 1.01,
		Features: []string{"dense_top", "cover_best", "boost", "bm25_ratio"}, Signs: map[string]int{"dense_top": 1, "cover_best": 1}}
	fit, err := eval.FitTasks(groups, tasks, fo)
	if err != nil {
		t.Fatal(err)
	}
	if len(fit.LeaveSetOut) != 5 || fit.LeaveSetOut[3].Group != "routing@4" {
		t.Fatalf("leave-one-set-out rows %+v, want routing, off-topic, animals, routing@4, routing@8", fit.LeaveSetOut)
	}
	if w := fit.Classifier.Weights; w[0] < 0 || w[1] < 0 {
		t.Errorf("weights %v break the sign constraints", w)
	}
	// Tasks no skill shares a word with follow the keywordless threshold
	// in every figure, whatever the classifier says: abstained on under a
	// threshold above every cosine, served under one below.
	for _, thr := range []float64{1.01, 1e-9} {
		fo.Keywordless = thr
		fit, err := eval.FitTasks(groups, tasks, fo)
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if thr < 1 {
			want = 0
		}
		for _, figs := range [][]eval.GroupFigures{fit.CrossValidated, fit.LeaveSetOut, fit.InSample} {
			if a := figs[2]; a.Abstained != want {
				t.Errorf("keywordless threshold %g: animals %d of 2 abstained on, want %d", thr, a.Abstained, want)
			}
		}
	}
}
