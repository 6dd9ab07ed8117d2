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
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
)

// runCalibrate fits the bundled model's abstention classifier on a mix of
// catalogs: each dev set's own queries against its own skills and against
// sub-catalogs drawn from them at several sizes, and foreign tasks
// (another set's answerable queries) against catalogs that cannot serve
// them, whole and drawn at several sizes. It writes the classifier as a
// config fragment and prints cross-validated, leave-one-catalog-out,
// leave-one-size-out and in-sample figures.
func runCalibrate(args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ExitOnError)
	evalDir := fs.String("eval", "../shared/eval", "dev sets (metatool/, seal-tools/)")
	corpora := fs.String("corpora", "../shared/corpora", "real SKILL.md trees, gathered into one foreign catalog")
	model := fs.String("model", defaultModel, "model folder")
	work := fs.String("work", defaultWork, "work directory (the gathered catalog goes to WORK/corpora)")
	out := fs.String("o", "", "calibration file to write (default MODEL/calibration.yaml)")
	maxWrong := fs.Float64("max-wrong", 0.03, "share of each group's answerable training queries the cutoff may abstain on")
	features := fs.String("features", strings.Join(match.HybridFeatures, ","), "features the classifier reads")
	signs := fs.String("signs", formatSigns(match.EvidenceSigns), "sign constraints, feature=+1 or feature=-1, comma-separated")
	noSub := fs.Bool("no-sub", false, "fit on whole catalogs only (no sub-catalogs)")
	seed := fs.Uint64("seed", 11, "seed of the sub-catalog draws")
	subWrong := fs.Float64("sub-max-wrong", -1, "share of each sub-catalog group's answerable training queries the cutoff may abstain on (-1: no limit)")
	corporaTasks := fs.String("corpora-tasks", "testdata/corpora-tasks/queries.jsonl", "labelled tasks for the gathered corpora")
	testCorpora := fs.Bool("corpora-tasks-test", false, "only evaluate the corpora tasks, never fit on them")
	keywordless := fs.Float64("keywordless", -1, "cosine threshold that decides tasks without keyword evidence instead of the classifier (-1: the model's threshold, 0: the classifier decides them)")
	balance := fs.Bool("balance", true, "weigh answerable and no-skill tasks equally in every size class")
	dump := fs.String("dump", "", "write the collected tasks (JSON) to this file")
	load := fs.String("load", "", "read collected tasks from a -dump file instead of ranking them")
	fs.Parse(args)
	if *out == "" {
		*out = filepath.Join(*model, "calibration.yaml")
	}
	opt := eval.FitOptions{MaxWrong: *maxWrong, Keywordless: *keywordless, Balance: *balance}
	opt.Features = strings.Split(*features, ",")
	var err error
	if opt.Signs, err = parseSigns(*signs); err != nil {
		return err
	}
	ctx := context.Background()
	var col collected
	if *load != "" {
		b, err := os.ReadFile(*load)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &col); err != nil {
			return fmt.Errorf("%s: %w", *load, err)
		}
	} else if col, err = collect(ctx, *evalDir, *corpora, *corporaTasks, *model, *work, !*noSub, *seed); err != nil {
		return err
	}
	if *dump != "" {
		b, err := json.Marshal(col)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*dump, b, 0o644); err != nil {
			return err
		}
	}
	groups, tasks := col.Groups, col.Tasks
	for i := range groups {
		if *testCorpora && strings.HasPrefix(groups[i].Name, "corpora-tasks") {
			groups[i].Test = true
		}
		// The cutoff's budget binds on the dev sets' whole catalogs; the
		// sub-catalogs and the corpora's few tasks teach the weights and
		// are measured.
		if groups[i].Size > 0 || groups[i].Catalog == "corpora" {
			groups[i].MaxWrong = *subWrong
		}
	}
	if *noSub {
		groups, tasks = wholeOnly(groups, tasks)
	}
	opt.Model = col.Model
	if opt.Keywordless < 0 {
		opt.Keywordless = col.Threshold
	}
	fit, err := eval.FitTasks(groups, tasks, opt)
	if err != nil {
		return err
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %-44s %-44s %-44s %s\n", "group", "5-fold (by text)", "leave-catalog-out", "leave-size-out", "in-sample")
	for i, g := range fit.InSample {
		fmt.Fprintf(&table, "%-28s %-44s %-44s %-44s %s\n", g.Group, cell(fit.CrossValidated[i]), cell(fit.LeaveCatalogOut[i]),
			cell(fit.LeaveSizeOut[i]), cell(g))
	}
	fmt.Print(table.String())
	for _, n := range fit.Notes {
		fmt.Fprintln(os.Stderr, "note:", n)
	}

	// calibrated_on names MetaTool, the set whose no-skill queries were
	// fitted on, so an evaluation on it says its abstention is in-sample.
	doc := map[string]any{"match": map[string]any{
		"abstain":       map[string]any{"classifiers": []match.Classifier{*fit.Classifier}},
		"calibrated_on": col.CalibratedOn,
	}}
	body, err := yaml.Marshal(doc)
	if err != nil {
		return err
	}
	var head strings.Builder
	head.WriteString(`# Calibrated abstention for mcpsag-static-v1, applied by the router's default
# configuration (a config file that sets match.abstain.classifiers replaces it).
# Written by: go run ./models/recipe calibrate (see models/mcpsag-static-v1/MODEL.md).
# Fitted on a mix of catalogs, never on one alone: the MetaTool and Seal-Tools dev
# sets' own queries against their own skills and against sub-catalogs drawn from
# them (NAME@SIZE: a query is answerable when one of its relevant skills was drawn,
# needs no skill when none was), labelled tasks of the real skill corpora
# (corpora-tasks) against the gathered corpora and sub-catalogs of it, and foreign
# tasks (answerable queries of one set, relabelled as needing no skill) against
# catalogs that cannot serve them, whole and drawn. Every size class weighs the
# same, its answerable and no-skill tasks half each. Weights of evidence features
# may not turn negative. Tasks no skill shares a word with are left to the model's
# cosine threshold (` + fmt.Sprintf("%g", opt.Keywordless) + `), as the router does. The cutoff abstains on at most
# ` + fmt.Sprintf("%g", 100**maxWrong) + `% of the answerable training queries of each dev set's whole catalog.
# The classifier reads score features and the catalog's size and vocabulary, so
# it applies to any catalog; it only applies to the model whose fingerprint it
# names. calibrated_on is the MetaTool set's digest (its figures below are
# in-sample for routerctl eval).
# Abstention figures (wrong = answerable queries abstained on; named = those whose
# skill is named or fires a trigger; abstain = tasks that need no skill abstained on):
`)
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		head.WriteString("#   " + strings.TrimRight(line, " ") + "\n")
	}
	if err := os.WriteFile(*out, append([]byte(head.String()), body...), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "calibrate: wrote %s\n", *out)
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
	Model        string `json:"model"`
	CalibratedOn string `json:"calibrated_on"`
	// Threshold is the model's cosine threshold.
	Threshold float64               `json:"threshold"`
	Groups    []eval.TaskGroup      `json:"groups"`
	Tasks     []eval.AbstentionTask `json:"tasks"`
}

// wholeOnly keeps the groups of whole catalogs and their tasks.
func wholeOnly(groups []eval.TaskGroup, tasks []eval.AbstentionTask) ([]eval.TaskGroup, []eval.AbstentionTask) {
	var gs []eval.TaskGroup
	at := map[int]int{}
	for i, g := range groups {
		if g.Size == 0 {
			at[i] = len(gs)
			gs = append(gs, g)
		}
	}
	var ts []eval.AbstentionTask
	for _, t := range tasks {
		if j, ok := at[t.Group]; ok {
			t.Group = j
			ts = append(ts, t)
		}
	}
	return gs, ts
}

// collect builds the task groups and ranks their tasks.
func collect(ctx context.Context, evalDir, corpora, corporaTasks, model, work string, sub bool, seed uint64) (collected, error) {
	var col collected
	root := filepath.Join(work, "corpora")
	n, err := gatherSkills(corpora, root)
	if err != nil {
		return col, err
	}
	fmt.Fprintf(os.Stderr, "calibrate: %d skill folders gathered under %s\n", n, root)

	cfg := match.DefaultConfig()
	open := func(dir string) (*eval.Corpus, error) {
		c, err := eval.Open(ctx, eval.Options{Skills: dir, ModelDir: model, Config: &cfg})
		if err != nil {
			return nil, err
		}
		if c.DenseErr != nil {
			c.Close()
			return nil, c.DenseErr
		}
		return c, nil
	}
	mt, err := open(filepath.Join(evalDir, "metatool", "skills"))
	if err != nil {
		return col, err
	}
	defer mt.Close()
	st, err := open(filepath.Join(evalDir, "seal-tools", "skills"))
	if err != nil {
		return col, err
	}
	defer st.Close()
	co, err := open(root)
	if err != nil {
		return col, err
	}
	defer co.Close()
	mq, err := eval.LoadQueries(filepath.Join(evalDir, "metatool", "queries.jsonl"))
	if err != nil {
		return col, err
	}
	sq, err := eval.LoadQueries(filepath.Join(evalDir, "seal-tools", "queries.jsonl"))
	if err != nil {
		return col, err
	}
	cq, err := eval.LoadQueries(corporaTasks)
	if err != nil {
		return col, err
	}
	// Training foreign tasks use another seed than the protocol's
	// (DefaultForeignSeed), whose tasks are only evaluated.
	const trainSeed = 99
	groups := []eval.TaskGroup{
		{Name: "metatool", Catalog: "metatool", Own: true, Index: mt.Index, Queries: mq},
		{Name: "seal-tools", Catalog: "seal-tools", Own: true, Index: st.Index, Queries: sq},
		{Name: "metatool>corpora (train)", Catalog: "corpora", Index: co.Index, Queries: eval.Foreign(mq, 1000, trainSeed)},
		{Name: "seal-tools>corpora (train)", Catalog: "corpora", Index: co.Index, Queries: eval.Foreign(sq, 1000, trainSeed)},
		{Name: "metatool>seal-tools", Catalog: "seal-tools", Index: st.Index, Queries: eval.Foreign(mq, 1000, trainSeed)},
		{Name: "seal-tools>metatool", Catalog: "metatool", Index: mt.Index, Queries: eval.Foreign(sq, 1000, trainSeed)},
		{Name: "metatool>corpora", Catalog: "corpora", Index: co.Index, Queries: eval.Foreign(mq, 500, eval.DefaultForeignSeed), Test: true},
		{Name: "seal-tools>corpora", Catalog: "corpora", Index: co.Index, Queries: eval.Foreign(sq, 500, eval.DefaultForeignSeed), Test: true},
		{Name: "corpora-tasks", Catalog: "corpora", Own: true, Index: co.Index, Queries: cq},
	}
	if sub {
		// Sub-catalogs: the sets' own queries against skills drawn from
		// their catalogs, and foreign tasks plus MetaTool's no-skill
		// queries against skills drawn from the corpora.
		var none []eval.Query
		for _, q := range mq {
			if !q.NeedSkill() {
				none = append(none, q)
			}
		}
		foreign := append(append(eval.Foreign(mq, 1000, trainSeed+1), eval.Foreign(sq, 1000, trainSeed+1)...), none...)
		for _, s := range []struct {
			c        *eval.Corpus
			qs       []eval.Query
			name     string
			own      bool
			sizes    []int
			answer   int
			noSkill  int
			minDraws int
		}{
			{mt, mq, "metatool", true, []int{10, 30, 100}, 400, 400, 3},
			{st, sq, "seal-tools", true, []int{10, 30, 100, 300}, 400, 400, 3},
			{co, foreign, "corpora", false, []int{10, 30, 100}, 0, 600, 6},
		} {
			gs, err := s.c.SubCatalogs(ctx, s.qs, eval.SubCatalogOptions{
				Name: s.name, Catalog: s.name, Own: s.own, Sizes: s.sizes,
				Answerable: s.answer, NoSkill: s.noSkill, MinDraws: s.minDraws, Seed: seed,
			})
			if err != nil {
				return col, err
			}
			groups = append(groups, gs...)
		}
		// The corpora's own labelled tasks against skills drawn from
		// it, with MetaTool's no-skill queries (general requests) as the
		// ones no drawn skill serves.
		gs, err := co.SubCatalogs(ctx, append(append([]eval.Query(nil), cq...), none...), eval.SubCatalogOptions{
			Name: "corpora-tasks", Catalog: "corpora", Own: true, Sizes: []int{10, 30, 100},
			Answerable: 150, NoSkill: 150, MinDraws: 3, MaxDraws: 60, Seed: seed + 2,
		})
		if err != nil {
			return col, err
		}
		groups = append(groups, gs...)
	}
	fmt.Fprintf(os.Stderr, "calibrate: ranking the tasks of %d groups\n", len(groups))
	tasks, err := eval.CollectTasks(ctx, groups)
	if err != nil {
		return col, err
	}
	return collected{Model: mt.Model.Fingerprint, CalibratedOn: eval.Digest(mq), Threshold: mt.Index.Config().Abstain.Threshold,
		Groups: groups, Tasks: tasks}, nil
}

// cell renders one group's figures.
func cell(g eval.GroupFigures) string {
	var parts []string
	if g.NeedSkill > 0 {
		parts = append(parts, fmt.Sprintf("wrong %d/%d (%.1f%%)", g.Wrong, g.NeedSkill, g.WrongRate()))
		if g.Named > 0 {
			parts = append(parts, fmt.Sprintf("named %d/%d", g.NamedWrong, g.Named))
		}
	}
	if g.NoSkill > 0 {
		parts = append(parts, fmt.Sprintf("abstain %d/%d (%.1f%%)", g.Abstained, g.NoSkill, g.AbstainRate()))
	}
	return strings.Join(parts, ", ")
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
