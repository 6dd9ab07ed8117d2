package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
)

// calibrateFlags are calibrate's flags.
type calibrateFlags struct {
	offlineFlags
	folds   int
	beta    float64
	out     string
	inPlace bool
}

func (o *calibrateFlags) register(f *pflag.FlagSet) {
	o.offlineFlags.register(f, "`mode`: hybrid or bm25")
	f.IntVar(&o.folds, "folds", 5, "`k` of the k-fold cross-validation")
	f.Float64Var(&o.beta, "beta", 1, "F-`beta` of abstention to maximise (below 1 favours precision)")
	f.StringVar(&o.out, "out", "", "write the calibrated config to `FILE` (- for stdout; default: <config>.calibrated.yaml beside --config)")
	f.BoolVar(&o.inPlace, "in-place", false, "rewrite the --config file itself instead")
}

func newCalibrateCmd(e *env) *cobra.Command {
	var o calibrateFlags
	cmd := &cobra.Command{
		Use:   "calibrate --skills DIR --queries FILE [--config FILE [--out FILE | --in-place]]",
		Short: "fit the abstention threshold and fusion weights",
		Long: `Fits, on labelled queries, the dense weights of the adaptive and convex
fusion rules (best NDCG@10), the abstention threshold and a small classifier
over score features (best F-beta of abstention), and prints the trade-off
curves with k-fold cross-validated figures.

The fitted values (model.match_threshold, match.fusion.adaptive_weight,
match.fusion.convex_weight, match.abstain.classifiers, match.calibrated_on)
go into a copy of the --config file, keeping its other settings: by default
<config>.calibrated.yaml beside it (for .mcp-config.yaml,
.mcp-config.calibrated.yaml), or the file named by --out (- prints it on
stdout, and the report on stderr). The --config file itself changes only
with --in-place; the router then applies it on its next config reload.
Without --config and --out it prints the YAML to add. On a terminal,
progress is shown on stderr.`,
		Example: `  routerctl calibrate --skills DIR --queries FILE --config examples/.mcp/.mcp-config.yaml --out /tmp/calibrated.yaml
  routerctl calibrate --skills DIR --queries FILE --config my-config.yaml --in-place --beta 0.5
  routerctl calibrate --skills DIR --queries FILE --mode bm25 --out -`,
		Args: noArgs,
	}
	o.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return runCalibrate(cmd.Context(), e, &o) }
	return cmd
}

func runCalibrate(ctx context.Context, e *env, o *calibrateFlags) error {
	if err := o.check("hybrid", "bm25"); err != nil {
		return err
	}
	target, err := o.target()
	if err != nil {
		return err
	}
	if o.out == "-" && e.json {
		return usageError{"--out - and --json both want stdout; write the config to a file"}
	}
	if o.folds < 2 {
		return usageErrorf("--folds %d: want 2 or more", o.folds)
	}
	if o.beta <= 0 {
		return usageErrorf("--beta %g: want a positive number", o.beta)
	}
	c, qs, _, err := o.open(ctx, e)
	if err != nil {
		return err
	}
	defer c.Close()
	cal, err := eval.Calibrate(ctx, c.Index, qs, eval.CalibrateOptions{
		Mode: skill.MatchMode(o.mode), Folds: o.folds, Beta: o.beta,
		Set: filepath.Base(filepath.Dir(o.queries)), Progress: e.evalProgress(),
	})
	e.progress.Clear()
	if err != nil {
		return err
	}
	report := e.stdout
	if o.out == "-" {
		report = e.stderr
	}
	if e.json {
		err = e.printJSON(cal)
	} else {
		err = cal.WriteText(report)
	}
	if err != nil {
		return err
	}
	return o.write(e, calibratedValues(cal, skill.MatchMode(o.mode)), target)
}

// target returns where the calibrated config goes: a file, "-" for stdout,
// or "" to print the values to add.
func (o *calibrateFlags) target() (string, error) {
	switch {
	case o.inPlace && o.out != "":
		return "", usageError{"--in-place and --out exclude each other"}
	case o.inPlace && o.configFile == "":
		return "", usageError{"--in-place needs --config FILE"}
	case o.inPlace:
		return o.configFile, nil
	case o.out != "" && o.out != "-" && o.configFile != "" && sameFile(o.out, o.configFile):
		return "", usageErrorf("--out %s is the --config file; use --in-place to rewrite it", o.out)
	case o.out != "":
		return o.out, nil
	case o.configFile != "":
		return calibratedPath(o.configFile), nil
	}
	return "", nil
}

// write puts the values where target says.
func (o *calibrateFlags) write(e *env, values calValues, target string) error {
	keys := strings.Join(values.keys(), ", ")
	switch {
	case target == "":
		text, err := calibratedConfig("", values)
		if err != nil {
			return err
		}
		e.note("\nadd to the router's config file (or rerun with --config FILE or --out FILE to write one):\n%s", text)
		return nil
	case o.inPlace:
		if err := config.Merge(target, values); err != nil {
			return err
		}
		e.note("\nwrote %s into %s; the router applies it on its next config reload", keys, target)
		return nil
	}
	text, err := calibratedConfig(o.configFile, values)
	if err != nil {
		return err
	}
	if target == "-" {
		_, err := e.stdout.Write(text)
		return err
	}
	if err := os.WriteFile(target, text, 0o644); err != nil {
		return fmt.Errorf("write the calibrated config: %w", err)
	}
	from := "a new config"
	if o.configFile != "" {
		from = "a copy of " + o.configFile
	}
	e.note("\nwrote %s: %s with %s set. The router uses it when started with --config %s;\nor copy it over the config in force (--in-place rewrites --config directly)",
		target, from, keys, target)
	return nil
}

// calibratedPath is the default output beside a config file:
// dir/name.calibrated.yaml for dir/name.yaml.
func calibratedPath(configFile string) string {
	ext := filepath.Ext(configFile)
	if ext != ".yaml" && ext != ".yml" {
		ext = ""
	}
	return strings.TrimSuffix(configFile, ext) + ".calibrated.yaml"
}

// sameFile reports whether a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return os.SameFile(fa, fb)
}

// calibratedConfig returns the text of the config file base (none when
// empty) with values merged in, keeping its other keys and comments.
func calibratedConfig(base string, values calValues) ([]byte, error) {
	dir, err := os.MkdirTemp("", "routerctl-calibrate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "config.yaml")
	if base != "" {
		data, err := os.ReadFile(base)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return nil, err
		}
	}
	if err := config.Merge(tmp, values); err != nil {
		return nil, err
	}
	return os.ReadFile(tmp)
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
