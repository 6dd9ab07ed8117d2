package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
)

// devSet is one labelled dev set: a skill root and its queries.
type devSet struct {
	name, skills, queries string
	// agent is true for sets of agent tasks against real skill folders,
	// false for sets of user requests against API tools; a set of one
	// kind cannot serve the tasks of the other (see foreignPairs).
	agent bool
}

// loadCollected reads the tasks a -dump file holds.
func loadCollected(path string) (collected, error) {
	var col collected
	b, err := os.ReadFile(path)
	if err != nil {
		return col, err
	}
	if err := json.Unmarshal(b, &col); err != nil {
		return col, fmt.Errorf("%s: %w", path, err)
	}
	return col, nil
}

// writeMarshalled writes v, encoded by marshal, to the file at path.
func writeMarshalled(path string, v any, marshal func(any) ([]byte, error)) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// markGroups marks, with subHidden, the sets' own tasks against
// sub-catalogs as bounding the abstention cutoff, and the groups whose
// name matches the regular expression testOnly (when not empty) as
// evaluated only.
func markGroups(groups []eval.TaskGroup, subHidden bool, testOnly string) error {
	var only *regexp.Regexp
	if testOnly != "" {
		var err error
		if only, err = regexp.Compile(testOnly); err != nil {
			return fmt.Errorf("-test-only: %w", err)
		}
	}
	for i, g := range groups {
		if g.Own && g.Size > 0 && subHidden {
			groups[i].Bound = eval.BoundHidden
		}
		if only != nil && only.MatchString(g.Name) {
			groups[i].Test = true
		}
	}
	return nil
}

// figureTable returns the fit's figures, one line per group: 5-fold,
// leave-one-set-out and in-sample.
func figureTable(fit *eval.AbstentionFit) string {
	var table strings.Builder
	fmt.Fprintf(&table, "%-34s %-82s %-82s %s\n", "group", "5-fold (by text)", "leave-one-set-out", "in-sample")
	for i, g := range fit.InSample {
		fmt.Fprintf(&table, "%-34s %-82s %-82s %s\n", g.Group, cell(fit.CrossValidated[i]), cell(fit.LeaveSetOut[i]), cell(g))
	}
	return table.String()
}

// Calibration recipe parameters (see runCalibrate).
const (
	trainSeed     = 99  // foreign tasks fitted on; the protocol's seed (eval.DefaultForeignSeed) is only evaluated
	foreignTasks  = 500 // foreign tasks per pair
	lengthenCap   = 600 // lengthened tasks per set
	lengthenSeed  = 5
	subAnswerable = 300 // answerable tasks per sub-catalog size
)

// runCalibrate fits the bundled model's abstention classifier over five dev
// sets: each set's own tasks against its catalog and against sub-catalogs
// drawn from it, its tasks lengthened into long agent task statements,
// general requests no catalog serves, and foreign tasks (another set's
// answerable tasks) against catalogs that cannot serve them. It writes the
// classifier as a config fragment and prints cross-validated,
// leave-one-set-out and in-sample figures.
func runCalibrate(args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ExitOnError)
	evalDir := fs.String("eval", "../shared/eval", "dev sets metatool/ and seal-tools/")
	transferDir := fs.String("eval-transfer", "../shared/eval-transfer", "dev sets skillsbench-dev/ and toollens-train/")
	corpora := fs.String("corpora", "../shared/corpora", "real SKILL.md trees, gathered into one catalog")
	corporaTasks := fs.String("corpora-tasks", "testdata/corpora-tasks/queries.jsonl", "labelled tasks for the gathered corpora")
	everyday := fs.String("everyday", "", "also fit on these requests of a general kind against the skill folders (everyday>NAME), e.g. testdata/everyday-requests/queries.jsonl; the shipped fits use none (docs/matching.md)")
	model := fs.String("model", defaultModel, "model folder")
	work := fs.String("work", defaultWork, "work directory (the gathered catalog goes to WORK/corpora)")
	out := fs.String("o", "", "calibration file to write (default MODEL/calibration.yaml)")
	hidden := fs.Float64("hidden", 0.02, "share of each set's answerable tasks the abstention cutoff may hide (half of it at the first candidate)")
	notConfident := fs.Float64("not-confident", 0.8, "share of each foreign pair's tasks that must fall under the confident cutoff")
	features := fs.String("features", strings.Join(match.HybridFeatures, ","), "features the classifier reads")
	signs := fs.String("signs", formatSigns(match.EvidenceSigns), "sign constraints, feature=+1 or feature=-1, comma-separated")
	seed := fs.Uint64("seed", 11, "seed of the sub-catalog draws")
	keywordless := fs.Float64("keywordless", -1, "cosine threshold under which tasks without keyword evidence are abstained on (-1: the model's threshold, 0: the classifier decides them)")
	subHidden := fs.Bool("sub-hidden", false, "the sets' own tasks against sub-catalogs bound the abstention cutoff too")
	testOnly := fs.String("test-only", "", "regular expression: groups whose name matches are evaluated, never fitted on (for ablations)")
	report := fs.String("report", "", "write the fit's figures (JSON) to this file")
	dump := fs.String("dump", "", "write the collected tasks (JSON) to this file")
	load := fs.String("load", "", "read collected tasks from a -dump file instead of ranking them")
	fs.Parse(args)
	opt := eval.FitOptions{Hidden: *hidden, NotConfident: *notConfident, Keywordless: *keywordless, Features: strings.Split(*features, ",")}
	signMap, err := parseSigns(*signs)
	if err != nil {
		return err
	}
	opt.Signs = signMap
	var col collected
	if *load != "" {
		col, err = loadCollected(*load)
	} else {
		col, err = gatherAndCollect(devSets(*evalDir, *transferDir, *work, *corporaTasks), *corpora, *everyday, *model, *seed)
	}
	if err != nil {
		return err
	}
	if *dump != "" {
		if err := writeMarshalled(*dump, col, json.Marshal); err != nil {
			return err
		}
	}
	if err := markGroups(col.Groups, *subHidden, *testOnly); err != nil {
		return err
	}
	opt.Model = col.Model
	if opt.Keywordless < 0 {
		opt.Keywordless = col.Threshold
	}
	fit, err := eval.FitTasks(col.Groups, col.Tasks, opt)
	if err != nil {
		return err
	}
	if err := writeReport(*report, fit); err != nil {
		return err
	}
	table := figureTable(fit)
	fmt.Print(table)
	return writeCalibration(*out, *model, fit, table, col.CalibratedOn, opt)
}

// writeReport writes the fit's figures as indented JSON to path, unless
// path is empty.
func writeReport(path string, fit *eval.AbstentionFit) error {
	if path == "" {
		return nil
	}
	indent := func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
	return writeMarshalled(path, fit, indent)
}

// devSets are the five dev sets, the gathered corpora's last.
func devSets(evalDir, transferDir, work, corporaTasks string) []devSet {
	return []devSet{
		{name: "metatool", skills: filepath.Join(evalDir, "metatool", "skills"), queries: filepath.Join(evalDir, "metatool", "queries.jsonl")},
		{name: "seal-tools", skills: filepath.Join(evalDir, "seal-tools", "skills"), queries: filepath.Join(evalDir, "seal-tools", "queries.jsonl")},
		{name: "toollens-train", skills: filepath.Join(transferDir, "toollens-train", "skills"), queries: filepath.Join(transferDir, "toollens-train", "queries.jsonl")},
		{name: "skillsbench-dev", skills: filepath.Join(transferDir, "skillsbench-dev", "skills"), queries: filepath.Join(transferDir, "skillsbench-dev", "queries.jsonl"), agent: true},
		{name: "corpora", skills: filepath.Join(work, "corpora"), queries: corporaTasks, agent: true},
	}
}

// gatherAndCollect gathers the corpora's skill folders into the last set's
// catalog, then collects the tasks of the sets.
func gatherAndCollect(sets []devSet, corpora, everyday, model string, seed uint64) (collected, error) {
	gathered := sets[len(sets)-1].skills
	n, err := gatherSkills(corpora, gathered)
	if err != nil {
		return collected{}, err
	}
	fmt.Fprintf(os.Stderr, "calibrate: %d skill folders gathered under %s\n", n, gathered)
	return collect(context.Background(), sets, everyday, model, seed)
}

// writeCalibration writes the fitted classifier as a config fragment to
// out (default MODEL/calibration.yaml), its header explaining the fit and
// holding the figures' table.
func writeCalibration(out, model string, fit *eval.AbstentionFit, table string, calibratedOn []string, opt eval.FitOptions) error {
	if out == "" {
		out = filepath.Join(model, "calibration.yaml")
	}
	// calibrated_on names every set fitted on, so an evaluation of one of
	// them says its verdict figures are in-sample.
	doc := map[string]any{"match": map[string]any{
		"abstain":       map[string]any{"classifiers": []match.Classifier{*fit.Classifier}},
		"calibrated_on": strings.Join(calibratedOn, " "),
	}}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	var head strings.Builder
	name := filepath.Base(filepath.Clean(model))
	head.WriteString(`# Calibrated abstention for ` + name + `, applied by the router's default
# configuration (a config file that sets match.abstain.classifiers replaces it).
# Written by: go run ./models/recipe calibrate (see models/` + name + `/MODEL.md).
# The classifier gives the probability that the first three candidates hold a skill
# for the task. Match abstains ("no skill fits") under cutoff, serves the candidates
# as low-confidence from cutoff to confident, and as a confident match from there.
# Fitted on five dev sets at once, never on one alone: each set's own tasks against
# its catalog and against sub-catalogs drawn from it (NAME@SIZE), its tasks wrapped
# in the scaffolding of long agent task statements (NAME-long), general requests
# (general>NAME), and foreign tasks (another set's tasks, relabelled as needing no
# skill) against catalogs that cannot serve them: user requests for API tools
# against the gathered skill folders, agent tasks against API tools (A>B).
# It reads no feature that names a catalog (size, vocabulary). Weights of evidence
# features may not turn negative. The cutoff hides at most ` + fmt.Sprintf("%g", 100*opt.Hidden) + `% of each set's
# answerable tasks (a relevant skill in the top three abstained on), half that at
# the first candidate; at least ` + fmt.Sprintf("%g", 100*opt.NotConfident) + `% of each foreign pair's tasks fall under
# confident. Tasks no skill shares a word with are abstained on under the model's
# cosine threshold (` + fmt.Sprintf("%g", opt.Keywordless) + `), as the router does.
# Figures (need: answerable tasks, hidden by an abstention / low-confidence; none:
# tasks that need no skill, abstained on / low-confidence):
`)
	for _, line := range strings.Split(strings.TrimRight(table, "\n"), "\n") {
		head.WriteString("#   " + strings.TrimRight(line, " ") + "\n")
	}
	if err := os.WriteFile(out, append([]byte(head.String()), body...), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "calibrate: wrote %s\n", out)
	return nil
}

// formatSigns writes signs as parseSigns reads them, sorted by name.
func formatSigns(signs map[string]int) string {
	var parts []string
	for name, v := range signs {
		parts = append(parts, fmt.Sprintf("%s=%+d", name, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// parseSigns reads "feature=+1,feature=-1".
func parseSigns(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, v, ok := strings.Cut(part, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("sign %q: want feature=+1 or feature=-1", part)
		case v == "+1" || v == "1":
			out[name] = 1
		case v == "-1":
			out[name] = -1
		default:
			return nil, fmt.Errorf("sign %q: want feature=+1 or feature=-1", part)
		}
	}
	return out, nil
}

// collected are the ranked tasks of every group, as -dump writes them.
type collected struct {
	Model string `json:"model"`
	// CalibratedOn are the digests of the sets' query files.
	CalibratedOn []string `json:"calibrated_on"`
	// Threshold is the model's cosine threshold.
	Threshold float64               `json:"threshold"`
	Groups    []eval.TaskGroup      `json:"groups"`
	Tasks     []eval.AbstentionTask `json:"tasks"`
}

// collect builds the task groups of the dev sets and ranks their tasks.
func collect(ctx context.Context, sets []devSet, everyday, model string, seed uint64) (collected, error) {
	c := &collector{ctx: ctx, sets: sets, seed: seed, corpus: map[string]*eval.Corpus{}, queries: map[string][]eval.Query{}}
	defer func() {
		for _, cp := range c.corpus {
			cp.Close()
		}
	}()
	if err := c.open(model); err != nil {
		return collected{}, err
	}
	for _, q := range c.queries["metatool"] {
		if !q.NeedSkill() {
			c.general = append(c.general, q)
		}
	}
	if everyday != "" {
		var err error
		if c.everyday, err = loadNoSkill(everyday); err != nil {
			return collected{}, err
		}
	}
	for _, s := range sets {
		c.addGroups(s)
		if err := c.addSubCatalogs(s); err != nil {
			return collected{}, err
		}
	}
	fmt.Fprintf(os.Stderr, "calibrate: ranking the tasks of %d groups\n", len(c.groups))
	tasks, err := eval.CollectTasks(ctx, c.groups)
	if err != nil {
		return collected{}, err
	}
	mt := c.corpus["metatool"]
	col := collected{Model: mt.Model.Fingerprint, Threshold: mt.Index.Config().Abstain.Threshold, Groups: c.groups, Tasks: tasks}
	for _, s := range sets {
		col.CalibratedOn = append(col.CalibratedOn, eval.Digest(c.queries[s.name]))
	}
	return col, nil
}

// loadNoSkill reads a query file every request of which needs no skill.
func loadNoSkill(path string) ([]eval.Query, error) {
	qs, err := eval.LoadQueries(path)
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(qs, eval.Query.NeedSkill); i >= 0 {
		return nil, fmt.Errorf("%s: request %s names relevant skills; every request must need no skill (empty relevant)", path, qs[i].ID)
	}
	return qs, nil
}

// collector builds the task groups of the dev sets.
type collector struct {
	ctx     context.Context
	sets    []devSet
	seed    uint64
	corpus  map[string]*eval.Corpus // by set
	queries map[string][]eval.Query // by set
	general []eval.Query            // MetaTool's requests that need no skill
	// everyday are requests of a general kind written for this project
	// (trivia, arithmetic, translation, creative writing, summaries of
	// well-known works, advice), which no skill catalog serves.
	everyday []eval.Query
	groups   []eval.TaskGroup
}

// open opens each set's corpus with the model and reads its queries.
func (c *collector) open(model string) error {
	cfg := match.DefaultConfig()
	for _, s := range c.sets {
		cp, err := eval.Open(c.ctx, eval.Options{Skills: s.skills, ModelDir: model, Config: &cfg})
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		c.corpus[s.name] = cp
		if cp.DenseErr != nil {
			return cp.DenseErr
		}
		if c.queries[s.name], err = eval.LoadQueries(s.queries); err != nil {
			return err
		}
	}
	return nil
}

func (c *collector) add(g eval.TaskGroup) { c.groups = append(c.groups, g) }

// addGroups adds the groups against s's whole catalog: its own tasks,
// lengthened, general requests, and its tasks foreign to other catalogs.
func (c *collector) addGroups(s devSet) {
	ix := c.corpus[s.name].Index
	c.add(eval.TaskGroup{Name: s.name, Source: s.name, Catalog: s.name, Own: true, Bound: eval.BoundHidden, Index: ix, Queries: c.queries[s.name]})
	answerable := answerableOnly(c.queries[s.name])
	if !s.agent || s.name == "corpora" {
		// Agent tasks of skillsbench are long already.
		long := eval.Lengthen(answerable[:min(lengthenCap, len(answerable))], lengthenSeed)
		c.add(eval.TaskGroup{Name: s.name + "-long", Source: s.name, Catalog: s.name, Own: true, Bound: eval.BoundHidden, Index: ix, Queries: long})
	}
	if s.name != "metatool" && s.name != "seal-tools" {
		c.add(eval.TaskGroup{Name: "general>" + s.name, Source: "metatool", Catalog: s.name, Index: ix, Queries: c.general})
	}
	if len(c.everyday) > 0 && s.agent {
		c.add(eval.TaskGroup{Name: "everyday>" + s.name, Source: "everyday", Catalog: s.name, Index: ix, Queries: c.everyday})
	}
	for _, to := range c.sets {
		if !foreignPair(s, to) {
			continue
		}
		tix := c.corpus[to.name].Index
		name := s.name + ">" + to.name
		c.add(eval.TaskGroup{Name: name, Source: s.name, Catalog: to.name, Bound: eval.BoundConfident, Index: tix,
			Queries: eval.Foreign(answerable, foreignTasks, trainSeed)})
		c.add(eval.TaskGroup{Name: name + " (protocol)", Source: s.name, Catalog: to.name, Index: tix, Test: true,
			Queries: eval.Foreign(answerable, foreignTasks, eval.DefaultForeignSeed)})
		long := eval.Lengthen(eval.Foreign(answerable, min(lengthenCap/2, foreignTasks), trainSeed), lengthenSeed)
		if s.name != "skillsbench-dev" {
			c.add(eval.TaskGroup{Name: s.name + "-long>" + to.name, Source: s.name, Catalog: to.name, Index: tix, Queries: long})
		}
	}
}

// addSubCatalogs adds the groups against sub-catalogs of s: the set's own
// tasks against skills drawn from its catalog, and tasks no drawn skill
// serves (general requests, foreign tasks of the other kind) against draws
// of the same sizes, so the fit sees small catalogs both ways.
func (c *collector) addSubCatalogs(s devSet) error {
	sub := func(qs []eval.Query, name, source string, sizes []int, answer, none int) error {
		gs, err := c.corpus[s.name].SubCatalogs(c.ctx, qs, eval.SubCatalogOptions{
			Name: name, Catalog: s.name, Source: source, Own: source == s.name, Sizes: sizes,
			Answerable: answer, NoSkill: none, MinDraws: 3, MaxDraws: 60, Seed: c.seed,
		})
		c.groups = append(c.groups, gs...)
		return err
	}
	if err := sub(answerableOnly(c.queries[s.name]), s.name, s.name, []int{10, 30, 100, 300}, subAnswerable, 0); err != nil {
		return err
	}
	if err := sub(c.general, "general>"+s.name, "metatool", []int{10, 30, 100}, 0, subAnswerable); err != nil {
		return err
	}
	if len(c.everyday) > 0 && s.agent {
		if err := sub(c.everyday, "everyday>"+s.name, "everyday", []int{10, 30, 100}, 0, subAnswerable); err != nil {
			return err
		}
	}
	for _, from := range c.sets {
		if foreignPair(from, s) {
			qs := eval.Foreign(answerableOnly(c.queries[from.name]), foreignTasks, trainSeed)
			if err := sub(qs, from.name+">"+s.name, from.name, []int{10, 30, 100}, 0, subAnswerable); err != nil {
				return err
			}
		}
	}
	return nil
}

// foreignPair reports whether the tasks of from are foreign to the catalog
// of to: user requests for API tools (MetaTool, Seal-Tools, ToolLens)
// against the gathered skill folders, and agent tasks (SkillsBench, the
// corpora tasks) against the MetaTool and ToolLens tools. Seal-Tools' 4,076 generated functions cover
// nearly every domain (a GDP task finds calculate-gdp), the SkillsBench
// catalog holds app automations that serve many user requests and shares 29
// skills with the corpora, and the API catalogs serve each other's requests,
// so those pairs are not foreign.
func foreignPair(from, to devSet) bool {
	switch {
	case from.name == to.name:
		return false
	case !from.agent:
		return to.name == "corpora"
	default:
		return to.name == "metatool" || to.name == "toollens-train"
	}
}

func answerableOnly(qs []eval.Query) []eval.Query {
	var out []eval.Query
	for _, q := range qs {
		if q.NeedSkill() {
			out = append(out, q)
		}
	}
	return out
}

// cell renders one group's figures.
func cell(g eval.GroupFigures) string {
	var parts []string
	if g.NeedSkill > 0 {
		s := fmt.Sprintf("need %d: hidden %d (%.1f%%), top-1 %d, low %.0f%%", g.NeedSkill, g.Hidden, g.HiddenRate(), g.HiddenTop1,
			100*float64(g.LowConfidence)/float64(g.NeedSkill))
		if g.Top3 > 0 {
			s += fmt.Sprintf(", top-3 confident %.0f%%", g.Top3ConfidentRate())
		}
		if g.Named > 0 {
			s += fmt.Sprintf(", named %d/%d", g.NamedHidden, g.Named)
		}
		parts = append(parts, s)
	}
	if g.NoSkill > 0 {
		parts = append(parts, fmt.Sprintf("none %d: abstain %.1f%%, low %.0f%%", g.NoSkill, g.AbstainRate(),
			100*float64(g.NoSkillLow)/float64(g.NoSkill)))
	}
	return strings.Join(parts, "; ")
}

// gatherSkills copies every folder holding a SKILL.md under src into one
// skill root dst (replaced), renaming a folder whose name is taken, and
// returns how many it copied.
func gatherSkills(src, dst string) (int, error) {
	if err := os.RemoveAll(dst); err != nil {
		return 0, err
	}
	var dirs []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "SKILL.md" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(dirs) == 0 {
		return 0, errors.New("no SKILL.md under " + src)
	}
	taken := map[string]bool{}
	for _, d := range dirs {
		name := filepath.Base(d)
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s-%d", filepath.Base(d), i)
		}
		taken[name] = true
		if err := os.CopyFS(filepath.Join(dst, "skills", name), os.DirFS(d)); err != nil {
			return 0, fmt.Errorf("copy %s: %w", d, err)
		}
	}
	return len(dirs), nil
}
