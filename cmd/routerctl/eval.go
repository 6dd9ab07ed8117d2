package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/models"
)

const evalUsage = `
Usage: routerctl eval --skills DIR --queries FILE [--mode hybrid|dense|bm25]
                      [--fusion F] [--model-dir DIR] [--config FILE] [--per-query]

Measures routing quality offline, in-process, on the same code path as the
router's Match: indexes DIR (a skill root or a workspace), embeds it with the
model (default: the bundled one), runs every query of FILE and reports
Hit@1, Recall@3, Recall@5, MRR@10 and NDCG@10 over queries that need a skill,
abstention precision and recall over all queries, and latency p50/p99.

FILE holds JSON lines {"id": ..., "query": ..., "relevant": [skill names]};
an empty "relevant" list means the right answer is to abstain. --config
evaluates the match settings of a router config file (for example one that
routerctl calibrate wrote); a report on the set a config was calibrated on
says its abstention figures are in-sample.
`

const calibrateUsage = `
Usage: routerctl calibrate --skills DIR --queries FILE [--mode hybrid|bm25]
                           [--model-dir DIR] [--config FILE] [--folds K] [--beta B]

Fits, on labelled queries, the dense weights of the adaptive and convex
fusion rules (best NDCG@10), the abstention threshold and a small classifier
over score features (best F-beta of abstention), prints the trade-off curve
with k-fold cross-validated figures, and writes the chosen values into the
config file given by --config (model.match_threshold,
match.fusion.adaptive_weight, match.fusion.convex_weight,
match.abstain.classifiers, match.calibrated_on), keeping its other settings.
Without --config it prints the YAML to add. The router applies the file on
its next config reload.
`

// offlineFlags are the flags eval and calibrate share.
type offlineFlags struct {
	skills, queries, modelDir, configFile, mode string
}

func (o *offlineFlags) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&o.skills, "skills", "", "skill root or workspace `DIR` (required)")
	fs.StringVar(&o.queries, "queries", "", "labelled queries `FILE` (JSON lines; required)")
	fs.StringVar(&o.modelDir, "model-dir", "", "embedding model `DIR` (default: the config's model.dir, else the bundled model)")
	fs.StringVar(&o.configFile, "config", "", "router config `FILE` whose model and match settings to use")
	fs.StringVar(&o.mode, "mode", "hybrid", "hybrid, dense or bm25")
}

// open indexes the skills with the settings of the config file, if any.
func (o *offlineFlags) open(ctx context.Context, e *env) (*eval.Corpus, []eval.Query, *config.Config, error) {
	if o.skills == "" || o.queries == "" {
		return nil, nil, nil, usageError{"--skills and --queries are required"}
	}
	switch o.mode {
	case "hybrid", "dense", "bm25":
	default:
		return nil, nil, nil, usageError{fmt.Sprintf("--mode %q: want hybrid, dense or bm25", o.mode)}
	}
	qs, err := eval.LoadQueries(o.queries)
	if err != nil {
		return nil, nil, nil, err
	}
	var cfg *config.Config
	mcfg := config.Default().Match // what the router does without a config file
	var ecfg embed.Config
	if o.configFile != "" {
		c, err := config.Resolve(config.Overrides{ConfigFile: o.configFile, Workspace: filepath.Dir(o.configFile)}, func(string) string { return "" })
		if err != nil {
			return nil, nil, nil, err
		}
		cfg, mcfg = &c, c.Match
		ecfg = embed.Config{QueryPrefix: c.Model.QueryPrefix, DocumentPrefix: c.Model.DocumentPrefix, MaxTokens: c.Model.MaxTokens,
			BatchSize: c.Model.BatchSize, MatchThreshold: c.Model.MatchThreshold, BodyChars: c.Model.BodyChars}
		if o.modelDir == "" {
			o.modelDir = c.Model.Dir
		}
	}
	if o.modelDir == "" && o.mode != "bm25" {
		if o.modelDir, err = models.Default(filepath.Join(os.TempDir(), "mcpsag-models")); err != nil {
			fmt.Fprintf(e.stderr, "bundled model unavailable (%v); dense matching is off\n", err)
		}
	}
	if o.mode == "bm25" {
		o.modelDir = ""
	}
	fmt.Fprintf(e.stderr, "indexing %s ...\n", o.skills)
	c, err := eval.Open(ctx, eval.Options{Skills: o.skills, ModelDir: o.modelDir, Embed: ecfg, Config: &mcfg})
	if err != nil {
		return nil, nil, nil, err
	}
	if c.DenseErr != nil && o.mode != "bm25" {
		fmt.Fprintf(e.stderr, "dense matching unavailable: %v; results are keyword-only\n", c.DenseErr)
	}
	fmt.Fprintf(e.stderr, "%d skills indexed in %s (match index %s); running %d queries\n",
		c.Index.Len(), c.BuildTime.Round(time.Millisecond), c.IndexTime.Round(time.Millisecond), len(qs))
	return c, qs, cfg, nil
}

func runEval(e *env, args []string) error {
	fs := newFlags(e, "eval", evalUsage)
	var o offlineFlags
	o.register(fs)
	fusion := fs.String("fusion", "", "adaptive, convex, rrf or tiebreak (default: the configured rule)")
	perQuery := fs.Bool("per-query", false, "include every query's outcome (JSON)")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	ctx := context.Background()
	c, qs, _, err := o.open(ctx, e)
	if err != nil {
		return err
	}
	defer c.Close()
	rep, err := c.Evaluate(ctx, qs, eval.RunOptions{
		Mode: skill.MatchMode(o.mode), Fusion: skill.Fusion(*fusion), PerQuery: *perQuery, Set: filepath.Base(filepath.Dir(o.queries)),
	})
	if err != nil {
		return err
	}
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(e.stdout)
}

func runCalibrate(e *env, args []string) error {
	fs := newFlags(e, "calibrate", calibrateUsage)
	var o offlineFlags
	o.register(fs)
	folds := fs.Int("folds", 5, "k of the k-fold cross-validation")
	beta := fs.Float64("beta", 1, "F-beta of abstention to maximise (below 1 favours precision)")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	if o.mode == "dense" {
		return usageError{"calibrate fits hybrid or bm25"}
	}
	ctx := context.Background()
	c, qs, cfg, err := o.open(ctx, e)
	if err != nil {
		return err
	}
	defer c.Close()
	cal, err := eval.Calibrate(ctx, c.Index, qs, eval.CalibrateOptions{
		Mode: skill.MatchMode(o.mode), Folds: *folds, Beta: *beta, Set: filepath.Base(filepath.Dir(o.queries)),
	})
	if err != nil {
		return err
	}
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(cal); err != nil {
			return err
		}
	} else if err := cal.WriteText(e.stdout); err != nil {
		return err
	}
	values := calibratedValues(cal, skill.MatchMode(o.mode))
	if cfg == nil || cfg.File == "" {
		fmt.Fprintf(e.stderr, "\nadd to the router's config file (or rerun with --config FILE to write it):\n%s", values.yaml())
		return nil
	}
	if err := config.Merge(cfg.File, values); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "\nwrote %s into %s; the router applies it on its next config reload\n", strings.Join(values.keys(), ", "), cfg.File)
	return nil
}

// calValues are the settings calibrate writes into a config file.
type calValues []config.Setting

// calibratedValues picks the fitted values of a calibration. The cosine
// threshold belongs to the model, so it goes to model.match_threshold (and a
// match.abstain.threshold that would override it is removed).
func calibratedValues(cal *eval.Calibration, mode skill.MatchMode) calValues {
	var v calValues
	if mode == skill.ModeKeyword {
		v = append(v, config.Setting{Key: "match.abstain.keyword_threshold", Value: cal.Threshold})
	} else {
		v = append(v, config.Setting{Key: "model.match_threshold", Value: cal.Threshold},
			config.Setting{Key: "match.abstain.threshold", Value: nil})
		if cal.ConvexWeight >= 0 {
			v = append(v, config.Setting{Key: "match.fusion.convex_weight", Value: cal.ConvexWeight})
		}
		if cal.AdaptiveWeight >= 0 {
			v = append(v, config.Setting{Key: "match.fusion.adaptive_weight", Value: cal.AdaptiveWeight})
		}
	}
	if cs := cal.Config.Abstain.Classifiers; len(cs) > 0 {
		v = append(v, config.Setting{Key: "match.abstain.classifiers", Value: cs})
	}
	return append(v, config.Setting{Key: "match.calibrated_on", Value: cal.Digest})
}

func (v calValues) keys() []string {
	var out []string
	for _, s := range v {
		if s.Value != nil {
			out = append(out, s.Key)
		}
	}
	return out
}

// yaml renders the values as a config file fragment.
func (v calValues) yaml() string {
	tmp, err := os.CreateTemp("", "calibrate-*.yaml")
	if err != nil {
		return err.Error()
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := config.Merge(tmp.Name(), v); err != nil {
		return err.Error()
	}
	b, _ := os.ReadFile(tmp.Name())
	return string(b)
}
