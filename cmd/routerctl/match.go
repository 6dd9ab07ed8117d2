package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newMatchCmd(e *env) *cobra.Command {
	var (
		agent, mode, fusion, kinds string
		topK                       int
		threshold                  float64
		hidden                     bool
	)
	cmd := &cobra.Command{
		Use:   `match "TASK"`,
		Short: "ask which skills and tools fit a task",
		Long: `Asks the router which skills, and which tools of connected MCP servers, fit
a task; --kinds skills or --kinds tools asks for one kind. Prints the
candidates, best first, with the evidence for each (cosine, BM25, fused score,
rank in each list, triggers that fired), and the verdict: a confident match,
or low-confidence candidates that may not fit (the agent should check them);
or why it abstained (no skill fits, routing disabled). --json includes each
tool's input schema.`,
		Example: `  routerctl match "fill in a PDF form from a JSON file"
  routerctl match --top-k 3 --mode bm25 "my pod is stuck in CrashLoopBackOff"
  routerctl match --kinds tools "read a text file"
  routerctl match "what is the capital of France" --json`,
		Args: exactArgs(1, "one TASK (quote it)"),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "match as this `agent`")
	f.IntVar(&topK, "top-k", 0, "number of candidates, from 1 to the router's match.max_top_k (50 by default); 0: the router's default")
	f.StringVar(&mode, "mode", "", "`mode`: hybrid, dense or bm25 (default: the router's)")
	f.StringVar(&fusion, "fusion", "", "fusion `rule`: adaptive, convex, rrf or tiebreak (default: the router's)")
	f.Float64Var(&threshold, "threshold", 0, "cosine threshold to abstain below (0: the model's)")
	f.BoolVar(&hidden, "hidden", false, "also match skills marked hidden")
	f.StringVar(&kinds, "kinds", "", "match `kinds`: skills, tools or both (default both)")
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, args []string) error {
		kf, err := kindsFilter(kinds)
		if err != nil {
			return err
		}
		if topK < 0 {
			return usageErrorf("--top-k %d: want 1 or more (0: the router's default)", topK)
		}
		opts, err := matchOptions(cmd.Flags(), kf, mode, fusion, threshold, hidden)
		if err != nil {
			return err
		}
		res, err := c.Match(ctx, &routerv1.MatchRequest{Task: args[0], TopK: int32(topK), Agent: agent, Options: opts})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(res)
		}
		writeMatch(e.stdout, skillpb.MatchResult(res), kf)
		return nil
	})
	return cmd
}

// matchOptions are the options of a match the flags ask for; a --mode or
// --fusion the API does not know is a usage error.
func matchOptions(f *pflag.FlagSet, kf routerv1.KindFilter, mode, fusion string, threshold float64, hidden bool) (*routerv1.MatchOptions, error) {
	opts := &routerv1.MatchOptions{IncludeHidden: hidden, Kinds: kf}
	if err := oneOf(f, "mode", "", "hybrid", "dense", "bm25"); err != nil {
		return nil, err
	}
	if err := oneOf(f, "fusion", "", "adaptive", "convex", "rrf", "tiebreak"); err != nil {
		return nil, err
	}
	if mode != "" {
		opts.Mode = routerv1.MatchMode(routerv1.MatchMode_value["MATCH_MODE_"+strings.ToUpper(mode)])
	}
	if fusion != "" {
		opts.Fusion = routerv1.Fusion(routerv1.Fusion_value["FUSION_"+strings.ToUpper(fusion)])
	}
	if threshold != 0 {
		opts.Threshold = &threshold
	}
	return opts, nil
}

// writeMatch prints a match's answer: why it abstained, or its verdict and
// candidates, best first, with the evidence for each.
func writeMatch(w io.Writer, res *skill.MatchResult, kf routerv1.KindFilter) {
	if res.Abstained {
		what, detail := "skill", res.AbstainDetail
		if kf == routerv1.KindFilter_KIND_FILTER_TOOLS {
			what = "tool"
			if res.AbstainReason == skill.AbstainNoTools {
				detail = "no tool of an MCP server is visible to this caller (routerctl servers shows the servers configured and their state)"
			}
		}
		fmt.Fprintf(w, "no %s fits (%s): %s\n", what, res.AbstainReason, detail)
		return
	}
	switch res.Verdict {
	case skill.VerdictConfident:
		fmt.Fprintf(w, "confident: %s\n", res.VerdictDetail)
	case skill.VerdictLowConfidence:
		fmt.Fprintf(w, "low confidence: %s\n", res.VerdictDetail)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSKILL\tFUSED\tCOSINE\tBM25\tWHY")
	for i, c := range res.Candidates {
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%.3f\t%.2f\t%s\n", i+1, c.Skill.Name, c.Fused, c.Cosine, c.BM25, oneLine(c.Reason, 90))
	}
	tw.Flush()
	used := string(res.Mode)
	if res.Degraded {
		used += ", keywords only: embeddings unavailable"
	}
	fmt.Fprintf(w, "(%s; generation %d)\n", used, res.Generation)
}
