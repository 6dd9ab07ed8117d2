package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

const matchUsage = `
Usage: routerctl match "TASK" [--agent A] [--top-k N] [--mode hybrid|dense|bm25]
                      [--fusion adaptive|convex|rrf|tiebreak] [--threshold X] [--hidden]

Asks the router which skills fit a task. Prints the candidates, best first,
with the evidence for each (cosine, BM25, fused score, rank in each list,
triggers that fired), or why it abstained (no skill fits, routing disabled).
`

func runMatch(e *env, args []string) error {
	fs := newFlags(e, "match", matchUsage)
	agent := fs.String("agent", "", "match as this agent")
	topK := fs.Int("top-k", 0, "number of candidates, 1-50 (0: the router's default)")
	mode := fs.String("mode", "", "hybrid, dense or bm25 (default: the router's)")
	fusion := fs.String("fusion", "", "adaptive, convex, rrf or tiebreak (default: the router's)")
	threshold := fs.Float64("threshold", 0, "override the cosine threshold (0: the model's)")
	hidden := fs.Bool("hidden", false, "also match skills marked hidden")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{`match takes one TASK in quotes (see routerctl match --help)`}
	}
	req := &routerv1.MatchRequest{Task: pos[0], TopK: int32(*topK), Agent: *agent, Options: &routerv1.MatchOptions{IncludeHidden: *hidden}}
	if *mode != "" {
		v, ok := routerv1.MatchMode_value["MATCH_MODE_"+strings.ToUpper(*mode)]
		if !ok {
			return usageError{fmt.Sprintf("--mode %q: want hybrid, dense or bm25", *mode)}
		}
		req.Options.Mode = routerv1.MatchMode(v)
	}
	if *fusion != "" {
		v, ok := routerv1.Fusion_value["FUSION_"+strings.ToUpper(*fusion)]
		if !ok {
			return usageError{fmt.Sprintf("--fusion %q: want adaptive, convex, rrf or tiebreak", *fusion)}
		}
		req.Options.Fusion = routerv1.Fusion(v)
	}
	if *threshold != 0 {
		req.Options.Threshold = threshold
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	res, err := c.Match(ctx, req)
	if err != nil {
		return err
	}
	if e.json {
		return e.printProto(res)
	}
	mode_ := strings.ToLower(strings.TrimPrefix(res.Mode.String(), "MATCH_MODE_"))
	if res.Degraded {
		mode_ += ", keywords only: embeddings unavailable"
	}
	if res.Abstained {
		reason := strings.ToLower(strings.TrimPrefix(res.AbstainReason.String(), "ABSTAIN_REASON_"))
		fmt.Fprintf(e.stdout, "no skill fits (%s): %s\n", reason, res.AbstainDetail)
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSKILL\tFUSED\tCOSINE\tBM25\tWHY")
	for i, c := range res.Candidates {
		s := c.Scores
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%.3f\t%.2f\t%s\n", i+1, c.Skill.Name, s.Fused, s.Cosine, s.Bm25, oneLine(c.Reason, 90))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "(%s; generation %d)\n", mode_, res.IndexGeneration)
	return nil
}
