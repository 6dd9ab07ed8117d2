package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// TaskGroup is a set of labelled tasks matched against one catalog: a dev
// set's own queries against its skills (or against a sub-catalog drawn from
// them, SubCatalogs), or foreign tasks (Foreign) against a catalog that
// cannot serve them.
type TaskGroup struct {
	// Name labels the group in the figures, e.g. "metatool",
	// "metatool@30" or "metatool>corpora". Groups with the same name (the
	// draws of one sub-catalog size, say) share one row of figures and
	// one cutoff budget.
	Name string `json:"name"`
	// Catalog names the catalog Index was built from (for a sub-catalog,
	// the catalog it was drawn from); the leave-one-catalog-out figure
	// holds out every group of one catalog at a time.
	Catalog string `json:"catalog"`
	// Size is the size class of a sub-catalog (the number of skills drawn),
	// 0 for a whole catalog; the leave-one-size-out figure holds out one
	// class at a time.
	Size int `json:"size,omitempty"`
	// Own is true for a set's own queries against its own skills (or a
	// sub-catalog of them), false for foreign tasks.
	Own     bool         `json:"own,omitempty"`
	Index   *match.Index `json:"-"`
	Queries []Query      `json:"-"`
	// Test marks a group that is only evaluated, never fitted on.
	Test bool `json:"test,omitempty"`
	// Weight is the fitting weight of each of the group's tasks; 0 means 1.
	Weight float64 `json:"weight,omitempty"`
	// MaxWrong overrides FitOptions.MaxWrong for the group's name: the
	// share of its answerable training tasks the cutoff may abstain on; a
	// negative value leaves the cutoff unconstrained by this group.
	MaxWrong float64 `json:"max_wrong,omitempty"`
}

// FitOptions configure FitAbstention.
type FitOptions struct {
	// Features default to match.HybridFeatures.
	Features []string
	// Signs constrain the sign of named features' weights (see
	// match.FitSettings); match.EvidenceSigns are the shipped ones.
	Signs map[string]int
	// MaxWrong is the share of the training tasks that need a skill, in
	// each group name that has them, that the cutoff may abstain on
	// (default 0.03).
	MaxWrong float64
	// Folds is k of the cross-validation (default 5).
	Folds int
	// L2 is the classifier's weight penalty (default 1).
	L2 float64
	// Model is the embedding model's fingerprint the classifier is tied
	// to.
	Model string
	// Balance weighs the training tasks so that, in every size class
	// (whole catalogs, and each sub-catalog size), the tasks that need a
	// skill and those that need none weigh the same in total, and every
	// class weighs the same: the share of answerable tasks, which the
	// groups' make-up fixes, then says nothing about a catalog's size.
	// Group weights multiply in.
	Balance bool
	// Keywordless is the cosine threshold that decides, instead of the
	// classifier, every task no skill shares a word with and that fires no
	// trigger or name (served at or above it), as the router does with the
	// model's threshold (match.RuleKeywordless); 0 leaves such tasks to the
	// classifier.
	Keywordless float64
}

// GroupFigures are the abstention figures of one task group.
type GroupFigures struct {
	Group string `json:"group"`
	// NeedSkill tasks and how many of them were wrongly abstained on;
	// Named those whose relevant skill was named or fired a trigger, and
	// how many of them were abstained on.
	NeedSkill  int `json:"need_skill"`
	Wrong      int `json:"wrong"`
	Named      int `json:"named"`
	NamedWrong int `json:"named_wrong"`
	// NoSkill tasks and how many were (rightly) abstained on.
	NoSkill   int `json:"no_skill"`
	Abstained int `json:"abstained"`
}

// WrongRate is the share of the tasks that need a skill abstained on, in
// percent, -1 without such tasks.
func (g GroupFigures) WrongRate() float64 { return rate(g.Wrong, g.NeedSkill) }

// AbstainRate is the share of the tasks that need no skill abstained on,
// in percent, -1 without such tasks.
func (g GroupFigures) AbstainRate() float64 { return rate(g.Abstained, g.NoSkill) }

func rate(a, n int) float64 {
	if n == 0 {
		return -1
	}
	return 100 * float64(a) / float64(n)
}

// AbstentionFit is a classifier fitted on several catalogs and how well it
// does. Each figure list has one entry per group name, in order of first
// appearance.
type AbstentionFit struct {
	Classifier *match.Classifier `json:"classifier"`
	// CrossValidated: k folds over task texts (a text in a test fold is
	// never fitted on, whatever its group); LeaveCatalogOut: each
	// catalog's groups are judged by classifiers fitted without any group
	// of that catalog (and without the test fold's texts);
	// LeaveSizeOut: the same for each sub-catalog size class, whole
	// catalogs being one class; InSample: the final classifier on every
	// group.
	CrossValidated  []GroupFigures `json:"cross_validated"`
	LeaveCatalogOut []GroupFigures `json:"leave_catalog_out"`
	LeaveSizeOut    []GroupFigures `json:"leave_size_out"`
	InSample        []GroupFigures `json:"in_sample"`
	// Notes say where a held-out figure could not be computed.
	Notes []string `json:"notes,omitempty"`
}

// AbstentionTask is one task's evidence, as FitTasks reads it.
type AbstentionTask struct {
	// Group indexes the groups the task was collected from.
	Group    int            `json:"group"`
	Text     string         `json:"text"`
	Features match.Features `json:"features"`
	Needs    bool           `json:"needs,omitempty"`
	// Rule is the rule that decided the match; Forced is true when it
	// decided before the classifier (explicit, no match, no skills),
	// Abstain is then its decision.
	Rule    string `json:"rule"`
	Forced  bool   `json:"forced,omitempty"`
	Abstain bool   `json:"abstain,omitempty"`
	// Named is true when a relevant skill was named or fired a trigger.
	Named bool `json:"named,omitempty"`
}

// FitAbstention collects the tasks of every group (CollectTasks) and fits
// one catalog-agnostic abstention classifier over them (FitTasks).
func FitAbstention(ctx context.Context, groups []TaskGroup, opt FitOptions) (*AbstentionFit, error) {
	tasks, err := CollectTasks(ctx, groups)
	if err != nil {
		return nil, err
	}
	return FitTasks(groups, tasks, opt)
}

// CollectTasks ranks every task of every group in hybrid mode and returns
// their evidence.
func CollectTasks(ctx context.Context, groups []TaskGroup) ([]AbstentionTask, error) {
	var tasks []AbstentionTask
	for gi, g := range groups {
		if g.Index == nil {
			return nil, fmt.Errorf("fit abstention: group %s has no index", g.Name)
		}
		for _, q := range g.Queries {
			rk, err := g.Index.Rank(ctx, skill.MatchRequest{Task: q.Query, Options: skill.MatchOptions{Mode: skill.ModeHybrid}}, nil)
			if err != nil {
				return nil, fmt.Errorf("fit abstention: %s query %s: %w", g.Name, q.ID, err)
			}
			if rk.Result.Degraded {
				return nil, fmt.Errorf("fit abstention: %s query %s: embeddings failed", g.Name, q.ID)
			}
			t := AbstentionTask{Group: gi, Text: q.Query, Features: rk.Features, Needs: q.NeedSkill(), Rule: rk.Rule}
			switch rk.Rule {
			case match.RuleExplicit:
				t.Forced = true
			case match.RuleNoMatch, match.RuleNoSkills:
				t.Forced, t.Abstain = true, true
			}
			rel := map[string]bool{}
			for _, r := range q.Relevant {
				rel[r] = true
			}
			for _, c := range rk.Ranked {
				if rel[c.Skill.Name] && (c.NameMentioned || len(c.TriggersFired) > 0) {
					t.Named = true
				}
			}
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// fitSet is what FitTasks works on.
type fitSet struct {
	groups []TaskGroup
	tasks  []AbstentionTask
	opt    FitOptions
	names  []string // group names in order of first appearance
	row    []int    // group index -> names index
}

// FitTasks fits one abstention classifier over the tasks of every group not
// marked Test, with a cutoff that keeps wrong abstentions at most the
// allowed share in each group name with tasks that need a skill, and
// reports cross-validated, leave-one-catalog-out, leave-one-size-out and
// in-sample figures per group name.
func FitTasks(groups []TaskGroup, tasks []AbstentionTask, opt FitOptions) (*AbstentionFit, error) {
	if len(opt.Features) == 0 {
		opt.Features = match.HybridFeatures
	}
	if opt.MaxWrong == 0 {
		opt.MaxWrong = 0.03
	}
	if opt.Folds == 0 {
		opt.Folds = 5
	}
	if opt.L2 == 0 {
		opt.L2 = 1
	}
	fs := &fitSet{groups: groups, tasks: tasks, opt: opt, row: make([]int, len(groups))}
	at := map[string]int{}
	for gi, g := range groups {
		i, ok := at[g.Name]
		if !ok {
			i = len(fs.names)
			at[g.Name] = i
			fs.names = append(fs.names, g.Name)
		}
		fs.row[gi] = i
	}
	for _, t := range tasks {
		if t.Group < 0 || t.Group >= len(groups) {
			return nil, fmt.Errorf("fit abstention: task of group %d, there are %d groups", t.Group, len(groups))
		}
	}
	train := func(i int) bool { return !groups[tasks[i].Group].Test }
	fit := &AbstentionFit{}

	// k folds over texts.
	foldOf := textFolds(tasks, opt.Folds)
	cv := make([]bool, len(tasks))
	for f := 0; f < opt.Folds; f++ {
		cls, err := fs.fitCutoff(func(i int) bool { return foldOf[i] != f && train(i) })
		if err != nil {
			return nil, err
		}
		for i := range tasks {
			if foldOf[i] == f {
				cv[i] = fs.decide(cls, i)
			}
		}
	}
	fit.CrossValidated = fs.figures(cv)

	// Hold out one class of groups at a time (with the test fold's texts).
	heldOut := func(what string, classes []string, classOf func(TaskGroup) string) []GroupFigures {
		out := append([]bool(nil), cv...)
		for _, cl := range classes {
			held := func(i int) bool { return classOf(groups[tasks[i].Group]) == cl }
			for f := 0; f < opt.Folds; f++ {
				cls, err := fs.fitCutoff(func(i int) bool { return foldOf[i] != f && train(i) && !held(i) })
				if err != nil {
					fit.Notes = append(fit.Notes, fmt.Sprintf("%s %s, fold %d: %v; its tasks keep their k-fold decisions", what, cl, f+1, err))
					continue
				}
				for i := range tasks {
					if foldOf[i] == f && held(i) {
						out[i] = fs.decide(cls, i)
					}
				}
			}
		}
		return fs.figures(out)
	}
	var catalogs, sizes []string
	seenC, seenS := map[string]bool{}, map[string]bool{}
	for _, g := range groups {
		if !seenC[g.Catalog] {
			seenC[g.Catalog] = true
			catalogs = append(catalogs, g.Catalog)
		}
		if s := sizeClass(g); !seenS[s] {
			seenS[s] = true
			sizes = append(sizes, s)
		}
	}
	fit.LeaveCatalogOut = heldOut("catalog", catalogs, func(g TaskGroup) string { return g.Catalog })
	fit.LeaveSizeOut = heldOut("size", sizes, sizeClass)

	cls, err := fs.fitCutoff(train)
	if err != nil {
		return nil, err
	}
	all := make([]bool, len(tasks))
	for i := range tasks {
		all[i] = fs.decide(cls, i)
	}
	fit.InSample = fs.figures(all)
	fit.Classifier = cls
	return fit, nil
}

// sizeClass names a group's size class: "whole" or the sub-catalog size.
func sizeClass(g TaskGroup) string {
	if g.Size == 0 {
		return "whole"
	}
	return fmt.Sprint(g.Size)
}

// textFolds assigns each task a fold by its text, so one text (a dev-set
// query and the same query as a foreign task) never sits on both sides.
func textFolds(tasks []AbstentionTask, k int) []int {
	var texts []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.Text] {
			seen[t.Text] = true
			texts = append(texts, t.Text)
		}
	}
	sort.Strings(texts)
	order := make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	r := newShuffler()
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	fold := map[string]int{}
	for j, i := range order {
		fold[texts[i]] = j % k
	}
	out := make([]int, len(tasks))
	for i, t := range tasks {
		out[i] = fold[t.Text]
	}
	return out
}

// keywordless reports whether task i is decided by the keywordless
// threshold rather than the classifier.
func (fs *fitSet) keywordless(i int) bool {
	f := fs.tasks[i].Features
	return fs.opt.Keywordless > 0 && f.NoKeyword == 1 && f.Boost == 0
}

// fitCutoff fits the classifier on the tasks keep selects (those decided
// before the classifier left out) and sets its cutoff to the largest
// probability that abstains on at most the allowed share of the training
// tasks that need a skill, in every group name that has them.
func (fs *fitSet) fitCutoff(keep func(int) bool) (*match.Classifier, error) {
	var samples []match.Sample
	probs := map[int][]int{} // names index -> task indexes that need a skill
	var used []int
	for i, t := range fs.tasks {
		if !keep(i) || t.Forced || fs.keywordless(i) {
			continue
		}
		used = append(used, i)
		if t.Needs && fs.groups[t.Group].MaxWrong >= 0 {
			probs[fs.row[t.Group]] = append(probs[fs.row[t.Group]], i)
		}
	}
	if len(probs) == 0 {
		// No group that bounds the cutoff is left (every whole
		// catalog held out): each group with answerable tasks gets
		// FitOptions.MaxWrong.
		for _, i := range used {
			if t := fs.tasks[i]; t.Needs {
				probs[fs.row[t.Group]] = append(probs[fs.row[t.Group]], i)
			}
		}
	}
	balance := fs.balance(used)
	for _, i := range used {
		t := fs.tasks[i]
		samples = append(samples, match.Sample{Features: t.Features, NeedsSkill: t.Needs,
			Weight: groupWeight(fs.groups[t.Group]) * balance(t)})
	}
	cls, err := match.FitClassifier(skill.ModeHybrid, fs.opt.Model, fs.opt.Features, samples,
		match.FitSettings{L2: fs.opt.L2, Signs: fs.opt.Signs})
	if err != nil {
		return nil, fmt.Errorf("fit abstention: %w", err)
	}
	if len(probs) == 0 {
		return nil, errors.New("fit abstention: no training task needs a skill")
	}
	budget := map[int]float64{}
	for gi, g := range fs.groups {
		if g.MaxWrong > 0 {
			budget[fs.row[gi]] = g.MaxWrong
		}
	}
	cut := 1.0
	for row, idx := range probs {
		if len(idx) == 0 {
			continue
		}
		ps := make([]float64, len(idx))
		for j, i := range idx {
			ps[j] = cls.Probability(fs.tasks[i].Features)
		}
		sort.Float64s(ps)
		share := fs.opt.MaxWrong
		if b, ok := budget[row]; ok && b > 0 {
			share = b
		}
		k := int(math.Floor(share * float64(len(ps))))
		// Abstaining below ps[k] abstains on the k lowest.
		cut = math.Min(cut, ps[min(k, len(ps)-1)])
	}
	cls.Cutoff = cut
	return cls, nil
}

// balance returns each used task's balancing factor: 1 without
// FitOptions.Balance; else one that gives, in every size class holding
// both kinds of task, the tasks that need a skill and those that need none
// the same total weight, the same for every such class (a class holding
// one kind only keeps factor 1).
func (fs *fitSet) balance(used []int) func(AbstentionTask) float64 {
	if !fs.opt.Balance {
		return func(AbstentionTask) float64 { return 1 }
	}
	type cell struct {
		size  string
		needs bool
	}
	mass := map[cell]float64{}
	sizes := map[string]bool{}
	for _, i := range used {
		t := fs.tasks[i]
		size := sizeClass(fs.groups[t.Group])
		mass[cell{size, t.Needs}] += groupWeight(fs.groups[t.Group])
		sizes[size] = true
	}
	var both, total float64
	for size := range sizes {
		if mass[cell{size, true}] > 0 && mass[cell{size, false}] > 0 {
			both++
			total += mass[cell{size, true}] + mass[cell{size, false}]
		}
	}
	return func(t AbstentionTask) float64 {
		size := sizeClass(fs.groups[t.Group])
		own, other := mass[cell{size, t.Needs}], mass[cell{size, !t.Needs}]
		if own == 0 || other == 0 {
			return 1
		}
		return total / (2 * both * own)
	}
}

func groupWeight(g TaskGroup) float64 {
	if g.Weight == 0 {
		return 1
	}
	return g.Weight
}

// decide says whether the router abstains on task i under cls.
func (fs *fitSet) decide(cls *match.Classifier, i int) bool {
	t := fs.tasks[i]
	if t.Forced {
		return t.Abstain
	}
	if fs.keywordless(i) {
		return t.Features.DenseTop < fs.opt.Keywordless
	}
	return cls.Probability(t.Features) < cls.Cutoff
}

func (fs *fitSet) figures(abstain []bool) []GroupFigures {
	out := make([]GroupFigures, len(fs.names))
	for i, n := range fs.names {
		out[i].Group = n
	}
	for i, t := range fs.tasks {
		f := &out[fs.row[t.Group]]
		if t.Needs {
			f.NeedSkill++
			if abstain[i] {
				f.Wrong++
			}
			if t.Named {
				f.Named++
				if abstain[i] {
					f.NamedWrong++
				}
			}
		} else {
			f.NoSkill++
			if abstain[i] {
				f.Abstained++
			}
		}
	}
	return out
}

func newShuffler() *rand.Rand { return rand.New(rand.NewPCG(0x6d637073, 0x666f6c64)) }
