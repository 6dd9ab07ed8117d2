package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/upstream"
	"github.com/mcpsag/router/models"
)

// evalFlags are eval's flags; a new flag is a field, a line in register
// and its use in runEval.
type evalFlags struct {
	offlineFlags
	fusion, toolLabels string
	perQuery           bool
	foreign            int
}

func (o *evalFlags) register(f *pflag.FlagSet) {
	o.offlineFlags.register(f, "`mode`: hybrid, dense or bm25")
	f.StringVar(&o.fusion, "fusion", "", "fusion `rule`: adaptive, convex, rrf or tiebreak (default: the configured one)")
	f.BoolVar(&o.perQuery, "per-query", false, "include every query's outcome (with --json)")
	f.IntVar(&o.foreign, "foreign", 0, "run `N` answerable queries of FILE against DIR, another set's catalog, as tasks it cannot serve")
	f.StringVar(&o.toolLabels, "tool-labels", "", "JSON `FILE` mapping tools' upstream names to the names the queries use (a dev set's mapping.json)")
}

func newEvalCmd(e *env) *cobra.Command {
	var o evalFlags
	cmd := &cobra.Command{
		Use:   "eval --skills DIR --queries FILE",
		Short: "measure routing quality on labelled queries",
		Long: `Measures routing quality offline, in-process, on the same code path as the
router's Match: indexes DIR (a skill root or a workspace), embeds it with the
model (default: the bundled one), runs every query of FILE and reports
Hit@1, Recall@3, Recall@5, MRR@10 and NDCG@10 over queries that need a skill,
hidden hits (queries that need a skill abstained on although a relevant skill
was in the top 3), the verdicts (confident, low-confidence, no skill) of the
queries that need a skill and of those that need none, abstention precision
and recall over all queries, and latency p50/p99.

FILE holds JSON lines {"id": ..., "query": ..., "relevant": [skill names]};
an empty "relevant" list means the right answer is to abstain. --config
evaluates the match settings of a router config file (for example one that
routerctl calibrate wrote); a report on the set a config was calibrated on
says its verdict figures are in-sample. On a terminal, progress is shown
on stderr.

--foreign N runs the cross-catalog protocol instead: N queries of FILE that
need a skill (drawn with a fixed seed) are relabelled as needing none and
matched against DIR, which must be another set's catalog; it reports the
shares abstained on, served as low-confidence and matched confidently, and
lists the tasks that got a skill with their verdicts.

When the config file has mcp_servers, their tools are indexed too, as the
router indexes them, and --skills may be left out to evaluate tools alone.
--tool-labels maps tools' upstream names to the names the queries use, so a
catalog served by an MCP server is scored against the labels of its skill
form.`,
		Example: `  routerctl eval --skills ../shared/eval/metatool/skills --queries ../shared/eval/metatool/queries.jsonl
  routerctl eval --skills DIR --queries FILE --mode bm25 --json
  routerctl eval --skills DIR --queries FILE --config calibrated.yaml
  routerctl eval --skills CORPORA --queries ../shared/eval/metatool/queries.jsonl --foreign 500
  routerctl eval --config servers.yaml --queries ../shared/eval/seal-tools/queries.jsonl \
      --tool-labels ../shared/eval/seal-tools/mapping.json`,
		Args: noArgs,
	}
	o.register(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return runEval(cmd.Context(), e, &o) }
	return cmd
}

func runEval(ctx context.Context, e *env, o *evalFlags) error {
	if err := o.check("hybrid", "dense", "bm25"); err != nil {
		return err
	}
	switch o.fusion {
	case "", "adaptive", "convex", "rrf", "tiebreak":
	default:
		return usageErrorf("--fusion %q: want adaptive, convex, rrf or tiebreak", o.fusion)
	}
	if o.foreign < 0 {
		return usageErrorf("--foreign %d: want a positive number of queries", o.foreign)
	}
	var labels map[string]string
	if o.toolLabels != "" {
		b, err := os.ReadFile(o.toolLabels)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &labels); err != nil {
			return fmt.Errorf("--tool-labels %s: want a JSON object of names: %w", o.toolLabels, err)
		}
	}
	c, qs, _, err := o.open(ctx, e)
	if err != nil {
		return err
	}
	defer c.Close()
	if o.foreign > 0 {
		cr, err := eval.CrossCatalog(ctx, c.Index, qs, eval.CrossOptions{N: o.foreign,
			Run: eval.RunOptions{Mode: skill.MatchMode(o.mode), Fusion: skill.Fusion(o.fusion), Set: filepath.Base(filepath.Dir(o.queries))}})
		e.progress.Clear()
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(cr)
		}
		return cr.WriteText(e.stdout)
	}
	rep, err := c.Evaluate(ctx, qs, eval.RunOptions{
		Mode: skill.MatchMode(o.mode), Fusion: skill.Fusion(o.fusion), PerQuery: o.perQuery,
		Set: filepath.Base(filepath.Dir(o.queries)), Progress: e.evalProgress(), ToolLabels: labels,
	})
	e.progress.Clear()
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(rep)
	}
	return rep.WriteText(e.stdout)
}

// offlineFlags are the flags eval and calibrate share.
type offlineFlags struct {
	skills, queries, modelDir, configFile, mode string
}

func (o *offlineFlags) register(f *pflag.FlagSet, modes string) {
	f.StringVar(&o.skills, "skills", "", "skill root or workspace `DIR` (required unless --config has mcp_servers)")
	f.StringVar(&o.queries, "queries", "", "labelled queries `FILE`, JSON lines (required)")
	f.StringVar(&o.modelDir, "model-dir", "", "embedding model `DIR` (default: the config's model.dir, else the bundled model)")
	f.StringVar(&o.configFile, "config", "", "router config `FILE` whose model and match settings to use")
	f.StringVar(&o.mode, "mode", "hybrid", modes)
}

// check reports missing required flags and a mode outside modes.
func (o *offlineFlags) check(modes ...string) error {
	if (o.skills == "" && o.configFile == "") || o.queries == "" {
		return usageError{"--skills and --queries are required (a --config with mcp_servers may stand in for --skills)"}
	}
	for _, m := range modes {
		if o.mode == m {
			return nil
		}
	}
	return usageErrorf("--mode %q: want %s", o.mode, orList(modes))
}

// open indexes the skills with the settings of the config file, if any.
func (o *offlineFlags) open(ctx context.Context, e *env) (*eval.Corpus, []eval.Query, *config.Config, error) {
	qs, err := eval.LoadQueries(o.queries)
	if err != nil {
		return nil, nil, nil, err
	}
	var cfg *config.Config
	mcfg := config.Default().Match // what the router does without a config file
	var ecfg embed.Config
	var servers []upstream.ServerConfig
	if o.configFile != "" {
		c, err := config.Resolve(config.Overrides{ConfigFile: o.configFile, Workspace: filepath.Dir(o.configFile)}, func(string) string { return "" })
		if err != nil {
			return nil, nil, nil, err
		}
		cfg, mcfg = &c, c.Match
		ecfg = embed.Config{QueryPrefix: c.Model.QueryPrefix, DocumentPrefix: c.Model.DocumentPrefix, MaxTokens: c.Model.MaxTokens,
			BatchSize: c.Model.BatchSize, MatchThreshold: c.Model.MatchThreshold, BodyChars: c.Model.BodyChars,
			Timeout: c.Model.Timeout, QueryCacheSize: c.Model.QueryCacheSize}
		if o.modelDir == "" {
			o.modelDir = c.Model.Dir
		}
		servers = c.Servers()
	}
	if o.skills == "" && len(servers) == 0 {
		return nil, nil, nil, usageErrorf("--config %s has no mcp_servers: give --skills", o.configFile)
	}
	if o.modelDir == "" && o.mode != "bm25" {
		if o.modelDir, err = models.Default(filepath.Join(os.TempDir(), "mcpsag-models")); err != nil {
			e.note("bundled model unavailable (%v); dense matching is off", err)
		}
	}
	if o.mode == "bm25" {
		o.modelDir = ""
	}
	what := o.skills
	if len(servers) > 0 {
		what = strings.TrimPrefix(fmt.Sprintf("%s and the tools of %d MCP servers", o.skills, len(servers)), " and ")
	}
	e.note("indexing %s ...", what)
	c, err := eval.Open(ctx, eval.Options{Skills: o.skills, ModelDir: o.modelDir, Embed: ecfg, Config: &mcfg,
		Progress: e.evalProgress(), Servers: servers})
	if err != nil {
		return nil, nil, nil, err
	}
	if c.DenseErr != nil && o.mode != "bm25" {
		e.note("dense matching unavailable: %v; results are keyword-only", c.DenseErr)
	}
	e.note("%d skills and tools indexed in %s (match index %s); running %d queries",
		c.Index.Len(), c.BuildTime.Round(time.Millisecond), c.IndexTime.Round(time.Millisecond), len(qs))
	return c, qs, cfg, nil
}

// evalProgress draws eval's progress on the status line; nil off a
// terminal.
func (e *env) evalProgress() eval.Progress {
	if !e.progress.On() {
		return nil
	}
	return func(phase string, done, total int) {
		if total > 0 {
			e.progress.Show("%s: %d/%d (%d%%)", phase, done, total, 100*done/total)
		} else {
			e.progress.Show("%s...", phase)
		}
	}
}
