package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// Bound names the cutoff a task group's tasks set.
type Bound string

// Bounds.
const (
	// BoundNone: the group teaches the weights and is measured.
	BoundNone Bound = ""
	// BoundHidden: the group's own answerable tasks bound the abstention
	// cutoff, which may hide at most FitOptions.Hidden of them.
	BoundHidden Bound = "hidden"
	// BoundConfident: the group's foreign tasks bound the confident
	// cutoff, under which at least FitOptions.NotConfident of them fall.
	BoundConfident Bound = "confident"
)

// TaskGroup is a set of labelled tasks matched against one catalog: a dev
// set's own queries against its skills (or against a sub-catalog drawn from
// them, SubCatalogs), or foreign tasks (Foreign) against a catalog that
// cannot serve them.
type TaskGroup struct {
	// Name labels the group in the figures, e.g. "metatool",
	// "metatool@30", "metatool-long" or "metatool>corpora". Groups with
	// the same name (the draws of one sub-catalog size, say) share one row
	// of figures and one weight in the fit.
	Name string `json:"name"`
	// Source names the dev set the tasks come from and Catalog the one
	// whose skills (or a sub-catalog of them) the Index holds; the
	// leave-one-set-out figure holds out every group of which a set is
	// either.
	Source  string `json:"source"`
	Catalog string `json:"catalog"`
	// Size is the size of a sub-catalog (the number of skills drawn), 0
	// for a whole catalog.
	Size int `json:"size,omitempty"`
	// Own is true for a set's own queries against its own skills (or a
	// sub-catalog of them), false for foreign tasks.
	Own     bool         `json:"own,omitempty"`
	Bound   Bound        `json:"bound,omitempty"`
	Index   *match.Index `json:"-"`
	Queries []Query      `json:"-"`
	// Test marks a group that is only evaluated, never fitted on.
	Test bool `json:"test,omitempty"`
}

// FitOptions configure FitTasks.
type FitOptions struct {
	// Features default to match.HybridFeatures.
	Features []string
	// Signs constrain the sign of named features' weights (+1 keeps one
	// at or above zero, -1 at or below); match.EvidenceSigns are the
	// shipped ones.
	Signs map[string]int
	// Hidden is the share of the answerable tasks of each BoundHidden
	// group the abstention cutoff may hide (abstain on although a relevant
	// skill is in the top 3), and half of it those whose first candidate
	// is relevant (default 0.02).
	Hidden float64
	// NotConfident is the share of the tasks of each BoundConfident group
	// that must fall under the confident cutoff (default 0.75).
	NotConfident float64
	// Folds is k of the cross-validation (default 5).
	Folds int
	// L2 is the classifier's weight penalty (default 1).
	L2 float64
	// Model is the embedding model's fingerprint the classifier is tied
	// to.
	Model string
	// Keywordless is the cosine threshold under which the router abstains
	// on a task no skill shares a word with and that fires no trigger or
	// name (match.RuleKeywordless); 0 leaves such tasks to the classifier.
	Keywordless float64
}

// GroupFigures are the figures of one task group under a classifier and
// its cutoffs.
type GroupFigures struct {
	Group string `json:"group"`
	// NeedSkill tasks; NeedAbstained of them abstained on, Hidden of them
	// although a relevant skill was in the top 3, HiddenTop1 although it
	// was first;
	// LowConfidence of them served as low-confidence candidates; Named
	// those that name a relevant skill or fire its trigger, NamedHidden of
	// them abstained on.
	NeedSkill     int `json:"need_skill"`
	NeedAbstained int `json:"need_abstained"`
	Hidden        int `json:"hidden"`
	HiddenTop1    int `json:"hidden_top1"`
	LowConfidence int `json:"low_confidence"`
	Named         int `json:"named"`
	NamedHidden   int `json:"named_abstained"`
	// Top3 of the NeedSkill tasks have a relevant skill in the top three;
	// Top3Confident of those got a confident match.
	Top3          int `json:"top3"`
	Top3Confident int `json:"top3_confident"`
	// NoSkill tasks; Abstained of them abstained on, NoSkillLow served as
	// low-confidence candidates (the rest got a confident match).
	NoSkill    int `json:"no_skill"`
	Abstained  int `json:"abstained"`
	NoSkillLow int `json:"no_skill_low_confidence"`
}

// HiddenRate is the share of the tasks that need a skill hidden by an
// abstention, in percent, -1 without such tasks.
func (g GroupFigures) HiddenRate() float64 { return rate(g.Hidden, g.NeedSkill) }

// Top3ConfidentRate is the share of the tasks with a relevant skill in the
// top three that got a confident match, in percent, -1 without such tasks.
func (g GroupFigures) Top3ConfidentRate() float64 { return rate(g.Top3Confident, g.Top3) }

// AbstainRate is the share of the tasks that need no skill abstained on,
// in percent, -1 without such tasks.
func (g GroupFigures) AbstainRate() float64 { return rate(g.Abstained, g.NoSkill) }

// NotConfidentRate is the share of the tasks that need no skill not given
// a confident match (abstained on or served as low-confidence), in
// percent, -1 without such tasks.
func (g GroupFigures) NotConfidentRate() float64 { return rate(g.Abstained+g.NoSkillLow, g.NoSkill) }

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
	// never fitted on, whatever its group); LeaveSetOut: each dev set's
	// groups (those of its tasks and those of its catalog) are judged by
	// a classifier, and cutoffs, fitted without any of them; InSample:
	// the final classifier on every group.
	CrossValidated []GroupFigures `json:"cross_validated"`
	LeaveSetOut    []GroupFigures `json:"leave_set_out"`
	InSample       []GroupFigures `json:"in_sample"`
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
	// Top3 and Top1 are set when a relevant skill is among the first
	// three candidates of the ranking, or first.
	Top3 bool `json:"top3,omitempty"`
	Top1 bool `json:"top1,omitempty"`
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
			for i, c := range rk.Ranked {
				if !slices.Contains(q.Relevant, c.Skill.Name) {
					continue
				}
				t.Top1 = t.Top1 || i == 0
				t.Top3 = t.Top3 || i < 3
				t.Named = t.Named || c.NameMentioned || len(c.TriggersFired) > 0
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

// FitTasks fits one classifier of "the top three candidates hold a skill
// for the task" over the tasks of every group not marked Test: positives
// are the answerable tasks whose relevant skill ranks in the top three,
// negatives the tasks that need no skill (answerable tasks the ranking
// missed say nothing of abstention and are left out). Every group name
// weighs the same in each class, and both classes the same in all. The
// abstention cutoff is the largest that hides at most FitOptions.Hidden of
// the answerable tasks of every BoundHidden group, the confident cutoff the
// smallest that leaves FitOptions.NotConfident of the tasks of every
// BoundConfident group under it. It reports cross-validated,
// leave-one-set-out and in-sample figures per group name.
func FitTasks(groups []TaskGroup, tasks []AbstentionTask, opt FitOptions) (*AbstentionFit, error) {
	fs, err := newFitSet(groups, tasks, opt.withDefaults())
	if err != nil {
		return nil, err
	}
	train := func(i int) bool { return !groups[tasks[i].Group].Test }
	fit := &AbstentionFit{}
	cv, err := fs.crossValidate(train)
	if err != nil {
		return nil, err
	}
	fit.CrossValidated = fs.figures(cv)
	var loso []skill.Verdict
	loso, fit.Notes = fs.leaveSetsOut(train, cv)
	fit.LeaveSetOut = fs.figures(loso)

	cls, err := fs.fitCutoffs(train)
	if err != nil {
		return nil, err
	}
	all := make([]skill.Verdict, len(tasks))
	for i := range tasks {
		all[i] = fs.verdict(cls, i)
	}
	fit.InSample = fs.figures(all)
	fit.Classifier = cls
	return fit, nil
}

// withDefaults returns opt with its zero values replaced by the defaults
// (match.HybridFeatures, Hidden 0.02, NotConfident 0.75, 5 folds, L2 1).
func (opt FitOptions) withDefaults() FitOptions {
	if len(opt.Features) == 0 {
		opt.Features = match.HybridFeatures
	}
	opt.Hidden = cmp.Or(opt.Hidden, 0.02)
	opt.NotConfident = cmp.Or(opt.NotConfident, 0.75)
	opt.Folds = cmp.Or(opt.Folds, 5)
	opt.L2 = cmp.Or(opt.L2, 1)
	return opt
}

// newFitSet numbers the groups' names (one row of figures each, in order of
// first appearance) and fails when a task names a group that is not there.
func newFitSet(groups []TaskGroup, tasks []AbstentionTask, opt FitOptions) (*fitSet, error) {
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
	return fs, nil
}

// crossValidate returns each task's verdict by the classifier and cutoffs
// fitted on the training tasks of the other folds (tasks are assigned
// folds by their text).
func (fs *fitSet) crossValidate(train func(int) bool) ([]skill.Verdict, error) {
	foldOf := textFolds(fs.tasks, fs.opt.Folds)
	cv := make([]skill.Verdict, len(fs.tasks))
	for f := 0; f < fs.opt.Folds; f++ {
		cls, err := fs.fitCutoffs(func(i int) bool { return foldOf[i] != f && train(i) })
		if err != nil {
			return nil, err
		}
		for i := range fs.tasks {
			if foldOf[i] == f {
				cv[i] = fs.verdict(cls, i)
			}
		}
	}
	return cv, nil
}

// leaveSetsOut returns each task's verdict by the classifier and cutoffs
// fitted on the training tasks of every other set (a group belongs to its
// source's set and its catalog's). A set whose fit fails keeps its tasks'
// cross-validated verdicts cv, with a note saying so.
func (fs *fitSet) leaveSetsOut(train func(int) bool, cv []skill.Verdict) ([]skill.Verdict, []string) {
	var sets []string
	for _, g := range fs.groups {
		for _, s := range []string{g.Source, g.Catalog} {
			if s != "" && !slices.Contains(sets, s) {
				sets = append(sets, s)
			}
		}
	}
	var notes []string
	loso := append([]skill.Verdict(nil), cv...)
	for _, s := range sets {
		held := func(i int) bool {
			g := fs.groups[fs.tasks[i].Group]
			return g.Source == s || g.Catalog == s
		}
		cls, err := fs.fitCutoffs(func(i int) bool { return train(i) && !held(i) })
		if err != nil {
			notes = append(notes, fmt.Sprintf("leaving %s out: %v; its tasks keep their k-fold verdicts", s, err))
			continue
		}
		for i := range fs.tasks {
			if held(i) {
				loso[i] = fs.verdict(cls, i)
			}
		}
	}
	return loso, notes
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

// keywordless reports whether task i is one the keywordless threshold may
// abstain on, whatever the classifier says.
func (fs *fitSet) keywordless(i int) bool {
	f := fs.tasks[i].Features
	return fs.opt.Keywordless > 0 && f.NoKeyword == 1 && f.Boost == 0
}

// ruleAbstains reports whether a rule other than the classifier abstains
// on task i: a forced decision, or the keywordless threshold.
func (fs *fitSet) ruleAbstains(i int) bool {
	t := fs.tasks[i]
	if t.Forced {
		return t.Abstain
	}
	return fs.keywordless(i) && t.Features.DenseTop < fs.opt.Keywordless
}

// positive reports whether task i is a positive of the fit, and whether it
// takes part in it at all.
func (fs *fitSet) positive(i int) (pos, use bool) {
	t := fs.tasks[i]
	switch {
	case t.Forced || fs.keywordless(i):
		return false, false
	case !t.Needs:
		return false, true
	case t.Top3:
		return true, true
	}
	return false, false
}

// fitCutoffs fits the classifier on the tasks keep selects and sets its
// abstention and confident cutoffs from them.
func (fs *fitSet) fitCutoffs(keep func(int) bool) (*match.Classifier, error) {
	type cell struct {
		row int
		pos bool
	}
	count := map[cell]float64{}
	var used []int
	for i := range fs.tasks {
		pos, use := fs.positive(i)
		if !keep(i) || !use {
			continue
		}
		used = append(used, i)
		count[cell{fs.row[fs.tasks[i].Group], pos}]++
	}
	// Each group name weighs the same in its class: 1/count per task, then
	// each class's total is scaled to half the samples.
	classTotal := map[bool]float64{}
	for c := range count {
		classTotal[c.pos]++
	}
	samples := make([]sample, 0, len(used))
	for _, i := range used {
		pos, _ := fs.positive(i)
		c := cell{fs.row[fs.tasks[i].Group], pos}
		w := float64(len(used)) / (2 * classTotal[pos] * count[c])
		samples = append(samples, sample{Features: fs.tasks[i].Features, Positive: pos, Weight: w})
	}
	cls, err := fitClassifier(skill.ModeHybrid, fs.opt.Model, fs.opt.Features, samples,
		fitSettings{L2: fs.opt.L2, Signs: fs.opt.Signs})
	if err != nil {
		return nil, fmt.Errorf("fit abstention: %w", err)
	}
	cut, err := fs.abstainCutoff(cls, keep)
	if err != nil {
		return nil, err
	}
	cls.Cutoff = cut
	cls.Confident = max(cut, fs.confidentCutoff(cls, keep))
	return cls, nil
}

// abstainCutoff returns the largest cutoff that abstains on at most
// FitOptions.Hidden of the answerable tasks of every BoundHidden group name
// whose relevant skill ranks in the top three, and on at most half that
// share of those whose relevant skill ranks first, counting what the other
// rules already hide.
func (fs *fitSet) abstainCutoff(cls *match.Classifier, keep func(int) bool) (float64, error) {
	type budget struct {
		answerable, hidden3, hidden1 int
		p3, p1                       []float64
	}
	rows := map[int]*budget{}
	for i, t := range fs.tasks {
		g := fs.groups[t.Group]
		if !keep(i) || g.Bound != BoundHidden || !t.Needs {
			continue
		}
		b := rows[fs.row[t.Group]]
		if b == nil {
			b = &budget{}
			rows[fs.row[t.Group]] = b
		}
		b.answerable++
		switch {
		case fs.ruleAbstains(i):
			if t.Top3 {
				b.hidden3++
			}
			if t.Top1 {
				b.hidden1++
			}
		case t.Forced || t.Features.Boost > 0:
			// Explicit, or named: never abstained on.
		default:
			p := cls.Probability(t.Features)
			if t.Top3 {
				b.p3 = append(b.p3, p)
			}
			if t.Top1 {
				b.p1 = append(b.p1, p)
			}
		}
	}
	if len(rows) == 0 {
		return 0, errors.New("fit abstention: no group bounds the abstention cutoff")
	}
	cut := 1.0
	limit := func(ps []float64, share float64, answerable, hidden int) {
		if len(ps) == 0 {
			return
		}
		sort.Float64s(ps)
		k := max(0, int(math.Floor(share*float64(answerable)))-hidden)
		// Abstaining below ps[k] abstains on the k lowest.
		cut = math.Min(cut, ps[min(k, len(ps)-1)])
	}
	for _, b := range rows {
		limit(b.p3, fs.opt.Hidden, b.answerable, b.hidden3)
		limit(b.p1, fs.opt.Hidden/2, b.answerable, b.hidden1)
	}
	return cut, nil
}

// confidentCutoff returns the smallest probability under which at least
// FitOptions.NotConfident of the classifier-decided tasks of every
// BoundConfident group name fall (0 without such groups).
func (fs *fitSet) confidentCutoff(cls *match.Classifier, keep func(int) bool) float64 {
	byRow := map[int][]float64{}
	for i, t := range fs.tasks {
		if !keep(i) || fs.groups[t.Group].Bound != BoundConfident || t.Forced || fs.ruleAbstains(i) {
			continue
		}
		byRow[fs.row[t.Group]] = append(byRow[fs.row[t.Group]], cls.Probability(t.Features))
	}
	conf := 0.0
	for _, ps := range byRow {
		sort.Float64s(ps)
		k := int(math.Ceil(fs.opt.NotConfident * float64(len(ps))))
		if k >= len(ps) {
			conf = math.Max(conf, math.Nextafter(ps[len(ps)-1], 2))
			continue
		}
		conf = math.Max(conf, ps[k])
	}
	return math.Min(conf, 1)
}

// verdict is the router's verdict on task i under cls.
func (fs *fitSet) verdict(cls *match.Classifier, i int) skill.Verdict {
	t := fs.tasks[i]
	switch {
	case fs.ruleAbstains(i):
		return skill.VerdictNoSkill
	case t.Forced:
		return skill.VerdictConfident
	}
	p := cls.Probability(t.Features)
	switch {
	case !fs.keywordless(i) && p < cls.Cutoff && t.Features.Boost == 0:
		return skill.VerdictNoSkill
	case p < cls.Confident:
		return skill.VerdictLowConfidence
	}
	return skill.VerdictConfident
}

func (fs *fitSet) figures(verdicts []skill.Verdict) []GroupFigures {
	out := make([]GroupFigures, len(fs.names))
	for i, n := range fs.names {
		out[i].Group = n
	}
	for i, t := range fs.tasks {
		f := &out[fs.row[t.Group]]
		v := verdicts[i]
		if t.Needs {
			f.NeedSkill++
			if t.Top3 {
				f.Top3++
				if v == skill.VerdictConfident {
					f.Top3Confident++
				}
			}
			if v == skill.VerdictNoSkill {
				f.NeedAbstained++
				if t.Top3 {
					f.Hidden++
				}
				if t.Top1 {
					f.HiddenTop1++
				}
			}
			if v == skill.VerdictLowConfidence {
				f.LowConfidence++
			}
			if t.Named {
				f.Named++
				if v == skill.VerdictNoSkill {
					f.NamedHidden++
				}
			}
		} else {
			f.NoSkill++
			switch v {
			case skill.VerdictNoSkill:
				f.Abstained++
			case skill.VerdictLowConfidence:
				f.NoSkillLow++
			}
		}
	}
	return out
}

func newShuffler() *rand.Rand { return rand.New(rand.NewPCG(0x6d637073, 0x666f6c64)) }
