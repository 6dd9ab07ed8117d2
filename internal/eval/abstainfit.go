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
// set's own queries against its skills, or foreign tasks (Foreign) against
// a catalog that cannot serve them.
type TaskGroup struct {
	// Name labels the group in the figures, e.g. "metatool" or
	// "metatool>corpora".
	Name string
	// Catalog names the catalog Index was built from; the
	// leave-one-catalog-out figure holds out every foreign group of one
	// catalog at a time.
	Catalog string
	// Own is true for a set's own queries against its own skills, false
	// for foreign tasks.
	Own     bool
	Index   *match.Index
	Queries []Query
	// Test marks a group that is only evaluated, never fitted on.
	Test bool
}

// FitOptions configure FitAbstention.
type FitOptions struct {
	// Features default to match.HybridFeatures.
	Features []string
	// MaxWrong is the share of the training tasks that need a skill, in
	// each group that has them, that the cutoff may abstain on (default
	// 0.03).
	MaxWrong float64
	// Folds is k of the cross-validation (default 5).
	Folds int
	// L2 is the classifier's weight penalty (default 1).
	L2 float64
	// Model is the embedding model's fingerprint the classifier is tied
	// to.
	Model string
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
// does.
type AbstentionFit struct {
	Classifier *match.Classifier `json:"classifier"`
	// CrossValidated: k folds over task texts (a text in a test fold is
	// never fitted on, whatever its group); LeaveCatalogOut: each
	// catalog's foreign groups are judged by a classifier fitted without
	// any foreign task of that catalog (own groups by the k folds);
	// InSample: the final classifier on every group.
	CrossValidated  []GroupFigures `json:"cross_validated"`
	LeaveCatalogOut []GroupFigures `json:"leave_catalog_out"`
	InSample        []GroupFigures `json:"in_sample"`
}

// fitTask is one task's evidence.
type fitTask struct {
	group    int
	text     string
	features match.Features
	needs    bool
	forced   bool // decided before the classifier: explicit or no match
	abstain  bool // the forced decision
	named    bool
}

// FitAbstention fits one catalog-agnostic abstention classifier over the
// tasks of every group not marked Test, with a cutoff that keeps wrong
// abstentions at most opt.MaxWrong in each group of tasks that need a
// skill, and reports cross-validated, leave-one-catalog-out and in-sample
// figures for every group.
func FitAbstention(ctx context.Context, groups []TaskGroup, opt FitOptions) (*AbstentionFit, error) {
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
	var tasks []fitTask
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
			ft := fitTask{group: gi, text: q.Query, features: rk.Features, needs: q.NeedSkill()}
			switch rk.Rule {
			case match.RuleExplicit:
				ft.forced = true
			case match.RuleNoMatch, match.RuleNoSkills:
				ft.forced, ft.abstain = true, true
			}
			rel := map[string]bool{}
			for _, r := range q.Relevant {
				rel[r] = true
			}
			for _, c := range rk.Ranked {
				if rel[c.Skill.Name] && (c.NameMentioned || len(c.TriggersFired) > 0) {
					ft.named = true
				}
			}
			tasks = append(tasks, ft)
		}
	}
	train := func(t fitTask) bool { return !groups[t.group].Test }
	fit := &AbstentionFit{}

	// k folds over texts.
	foldOf := textFolds(tasks, opt.Folds)
	cv := make([]bool, len(tasks))
	for f := 0; f < opt.Folds; f++ {
		cls, err := fitCutoff(groups, tasks, func(i int) bool { return foldOf[i] != f && train(tasks[i]) }, opt)
		if err != nil {
			return nil, err
		}
		for i := range tasks {
			if foldOf[i] == f {
				cv[i] = decideTask(cls, tasks[i])
			}
		}
	}
	fit.CrossValidated = figures(groups, tasks, cv)

	// Leave one catalog's foreign tasks out.
	loco := append([]bool(nil), cv...)
	catalogs := map[string]bool{}
	for _, g := range groups {
		if !g.Own {
			catalogs[g.Catalog] = true
		}
	}
	names := make([]string, 0, len(catalogs))
	for c := range catalogs {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, cat := range names {
		held := func(i int) bool { g := groups[tasks[i].group]; return !g.Own && g.Catalog == cat }
		for f := 0; f < opt.Folds; f++ {
			cls, err := fitCutoff(groups, tasks, func(i int) bool {
				return foldOf[i] != f && train(tasks[i]) && !held(i)
			}, opt)
			if err != nil {
				return nil, err
			}
			for i := range tasks {
				if foldOf[i] == f && held(i) {
					loco[i] = decideTask(cls, tasks[i])
				}
			}
		}
	}
	fit.LeaveCatalogOut = figures(groups, tasks, loco)

	cls, err := fitCutoff(groups, tasks, func(i int) bool { return train(tasks[i]) }, opt)
	if err != nil {
		return nil, err
	}
	all := make([]bool, len(tasks))
	for i := range tasks {
		all[i] = decideTask(cls, tasks[i])
	}
	fit.InSample = figures(groups, tasks, all)
	fit.Classifier = cls
	return fit, nil
}

// textFolds assigns each task a fold by its text, so one text (a dev-set
// query and the same query as a foreign task) never sits on both sides.
func textFolds(tasks []fitTask, k int) []int {
	var texts []string
	seen := map[string]bool{}
	for _, t := range tasks {
		if !seen[t.text] {
			seen[t.text] = true
			texts = append(texts, t.text)
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
		out[i] = fold[t.text]
	}
	return out
}

// fitCutoff fits the classifier on the tasks keep selects (those decided
// before the classifier left out) and sets its cutoff to the largest
// probability that abstains on at most opt.MaxWrong of the training tasks
// that need a skill, in every group that has them.
func fitCutoff(groups []TaskGroup, tasks []fitTask, keep func(int) bool, opt FitOptions) (*match.Classifier, error) {
	var samples []match.Sample
	probs := map[int][]int{} // group -> task indexes that need a skill
	for i, t := range tasks {
		if !keep(i) || t.forced {
			continue
		}
		samples = append(samples, match.Sample{Features: t.features, NeedsSkill: t.needs})
		if t.needs {
			probs[t.group] = append(probs[t.group], i)
		}
	}
	cls, err := match.FitClassifier(skill.ModeHybrid, opt.Model, opt.Features, samples, opt.L2)
	if err != nil {
		return nil, fmt.Errorf("fit abstention: %w", err)
	}
	if len(probs) == 0 {
		return nil, errors.New("fit abstention: no training task needs a skill")
	}
	cut := 1.0
	for _, idx := range probs {
		ps := make([]float64, len(idx))
		for j, i := range idx {
			ps[j] = cls.Probability(tasks[i].features)
		}
		sort.Float64s(ps)
		k := int(math.Floor(opt.MaxWrong * float64(len(ps))))
		// Abstaining below ps[k] abstains on the k lowest.
		cut = math.Min(cut, ps[min(k, len(ps)-1)])
	}
	cls.Cutoff = cut
	return cls, nil
}

// decideTask says whether the router abstains on the task under cls.
func decideTask(cls *match.Classifier, t fitTask) bool {
	if t.forced {
		return t.abstain
	}
	return cls.Probability(t.features) < cls.Cutoff
}

func figures(groups []TaskGroup, tasks []fitTask, abstain []bool) []GroupFigures {
	out := make([]GroupFigures, len(groups))
	for i, g := range groups {
		out[i].Group = g.Name
	}
	for i, t := range tasks {
		f := &out[t.group]
		if t.needs {
			f.NeedSkill++
			if abstain[i] {
				f.Wrong++
			}
			if t.named {
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
