package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
)

// runCalibrate fits the bundled model's abstention classifier on a mix of
// catalogs: each dev set's own queries against its own skills, and foreign
// tasks (another set's answerable queries) against catalogs that cannot
// serve them. It writes the classifier as a config fragment and prints
// cross-validated, leave-one-catalog-out and in-sample figures.
func runCalibrate(args []string) error {
	fs := flag.NewFlagSet("calibrate", flag.ExitOnError)
	evalDir := fs.String("eval", "../shared/eval", "dev sets (metatool/, seal-tools/)")
	corpora := fs.String("corpora", "../shared/corpora", "real SKILL.md trees, gathered into one foreign catalog")
	model := fs.String("model", defaultModel, "model folder")
	work := fs.String("work", defaultWork, "work directory (the gathered catalog goes to WORK/corpora)")
	out := fs.String("o", "", "calibration file to write (default MODEL/calibration.yaml)")
	maxWrong := fs.Float64("max-wrong", 0.03, "share of each set's answerable training queries the cutoff may abstain on")
	fs.Parse(args)
	if *out == "" {
		*out = filepath.Join(*model, "calibration.yaml")
	}
	ctx := context.Background()
	root := filepath.Join(*work, "corpora")
	n, err := gatherSkills(*corpora, root)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "calibrate: %d skill folders gathered under %s\n", n, root)

	cfg := match.DefaultConfig()
	open := func(dir string) (*eval.Corpus, error) {
		c, err := eval.Open(ctx, eval.Options{Skills: dir, ModelDir: *model, Config: &cfg})
		if err != nil {
			return nil, err
		}
		if c.DenseErr != nil {
			c.Close()
			return nil, c.DenseErr
		}
		return c, nil
	}
	mt, err := open(filepath.Join(*evalDir, "metatool", "skills"))
	if err != nil {
		return err
	}
	defer mt.Close()
	st, err := open(filepath.Join(*evalDir, "seal-tools", "skills"))
	if err != nil {
		return err
	}
	defer st.Close()
	co, err := open(root)
	if err != nil {
		return err
	}
	defer co.Close()
	mq, err := eval.LoadQueries(filepath.Join(*evalDir, "metatool", "queries.jsonl"))
	if err != nil {
		return err
	}
	sq, err := eval.LoadQueries(filepath.Join(*evalDir, "seal-tools", "queries.jsonl"))
	if err != nil {
		return err
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
	}
	fit, err := eval.FitAbstention(ctx, groups, eval.FitOptions{
		Features: match.HybridFeatures, MaxWrong: *maxWrong, Model: mt.Model.Fingerprint,
	})
	if err != nil {
		return err
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %28s %28s %28s\n", "group", "5-fold (by text)", "leave-catalog-out", "in-sample")
	for i, g := range groups {
		fmt.Fprintf(&table, "%-28s %28s %28s %28s\n", g.Name, cell(fit.CrossValidated[i]), cell(fit.LeaveCatalogOut[i]), cell(fit.InSample[i]))
	}
	fmt.Print(table.String())

	// calibrated_on names MetaTool, the set whose no-skill queries were
	// fitted on, so an evaluation on it says its abstention is in-sample.
	doc := map[string]any{"match": map[string]any{
		"abstain":       map[string]any{"classifiers": []match.Classifier{*fit.Classifier}},
		"calibrated_on": eval.Digest(mq),
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
# sets' own queries against their own skills, and foreign tasks (answerable queries
# of one set, relabelled as needing no skill) against catalogs that cannot serve
# them. The cutoff abstains on at most ` + fmt.Sprintf("%g", 100**maxWrong) + `% of each set's answerable training queries.
# The classifier reads score features only, so it applies to any catalog; it
# only applies to the model whose fingerprint it names. calibrated_on is the
# MetaTool set's digest (its figures below are in-sample for routerctl eval).
# Abstention figures (wrong = answerable queries abstained on; foreign = foreign
# tasks abstained on):
`)
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n") {
		head.WriteString("#   " + line + "\n")
	}
	if err := os.WriteFile(*out, append([]byte(head.String()), body...), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "calibrate: wrote %s\n", *out)
	return nil
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
