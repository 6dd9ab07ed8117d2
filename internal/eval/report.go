package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// pct formats a percentage with its unit, or "n/a" for an undefined one.
func pct(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	title := r.Set
	if title == "" {
		title = "evaluation"
	}
	fmt.Fprintf(&b, "%s: %d skills, %d queries (%d need a skill, %d need none)\n", title, r.Skills, r.Queries, r.NeedSkill, r.NoSkill)
	mode := string(r.Mode)
	if r.Fusion != "" {
		mode += " (" + string(r.Fusion) + ")"
	}
	model := r.Model
	if model == "" {
		model = "none"
	}
	fmt.Fprintf(&b, "mode %s, model %s, dense available: %v", mode, model, r.DenseAvailable)
	if r.Degraded > 0 {
		fmt.Fprintf(&b, ", %d queries keyword-only", r.Degraded)
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Hit@1\tRecall@3\tRecall@5\tMRR@10\tNDCG@10\tHit@1 after abstention")
	m := r.Ranking
	fmt.Fprintf(tw, "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", m.Hit1, m.R3, m.R5, m.MRR10, m.NDCG10, r.EndToEndHit1)
	_ = tw.Flush()
	a := r.Abstention
	fmt.Fprintf(&b, "\nabstention: %d abstained, %d correctly; precision %s, recall %s; %d queries that need a skill abstained on\n",
		a.Abstained, a.Correct, pct(a.Precision), pct(a.Recall), a.WrongOnAnswerable)
	if r.NeedSkill > 0 {
		fmt.Fprintf(&b, "hidden hits (abstained on although a relevant skill was in the top 3): %d of %d (%s)\n",
			r.HiddenHits, r.NeedSkill, pct(r.HiddenHitShare))
	}
	fmt.Fprintf(&b, "verdicts:")
	for _, v := range []struct {
		name string
		n    int
		c    VerdictCounts
	}{
		{"need a skill", r.NeedSkill, r.Verdicts.NeedSkill},
		{"of those, a relevant skill in the top 3", r.Verdicts.Top3.total(), r.Verdicts.Top3},
		{"need none", r.NoSkill, r.Verdicts.NoSkill},
	} {
		if v.n > 0 {
			fmt.Fprintf(&b, " %s: %d confident, %d low-confidence (%s), %d no skill;", v.name, v.c.Confident, v.c.LowConfidence,
				pct(v.c.LowConfidenceShare), v.c.NoSkill)
		}
	}
	b.WriteString("\n")
	if r.Named > 0 {
		fmt.Fprintf(&b, "queries that name a relevant skill or fire its trigger: %d, abstained on %d\n", r.Named, r.NamedAbstained)
	}
	fmt.Fprintf(&b, "decided by: %s\n", rules(r.Rules))
	fmt.Fprintf(&b, "latency: p50 %s, p99 %s, mean %s\n", r.Latency.P50, r.Latency.P99, r.Latency.Mean)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rules(m map[string]int) string {
	var parts []string
	known := []string{"threshold", "keyword_threshold", "classifier", "keywordless", "explicit", "no_match", "no_skills"}
	for _, k := range known {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
	}
	var other []string
	for k := range m {
		if !slices.Contains(known, k) && m[k] > 0 {
			other = append(other, k)
		}
	}
	slices.Sort(other)
	for _, k := range other {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the calibration for people.
func (c *Calibration) WriteText(w io.Writer) error {
	var b strings.Builder
	title := c.Set
	if title == "" {
		title = "calibration"
	}
	fmt.Fprintf(&b, "%s (%s): %d queries (%d need a skill, %d need none), mode %s\n", title, c.Digest, c.Queries, c.NeedSkill, c.NoSkill, c.Mode)
	writeWeights(&b, "convex weight (dense share)", c.Weights, c.ConvexWeight)
	writeWeights(&b, "adaptive weight (dense share when the index holds none of the task's terms)", c.AdaptiveWeights, c.AdaptiveWeight)
	if c.ThresholdCurve != nil {
		fmt.Fprintf(&b, "\nthreshold on %s: %.4f (AUROC %.3f); cross-validated precision %s, recall %s (%d abstained, %d on queries that need a skill)\n",
			c.ThresholdScore, c.Threshold, c.ThresholdAUROC, pct(c.ThresholdCV.Precision), pct(c.ThresholdCV.Recall),
			c.ThresholdCV.Abstained, c.ThresholdCV.WrongOnAnswerable)
		writeCurve(&b, c.ThresholdCurve)
	}
	if c.Classifier != nil {
		fmt.Fprintf(&b, "\nclassifier (%d features): cutoff %.3f, out-of-fold AUROC %.3f\n", len(c.Classifier.Features), c.Classifier.Cutoff, c.ClassifierAUROC)
		fmt.Fprintf(&b, "  cross-validated: precision %s, recall %s (%d abstained, %d on queries that need a skill)\n",
			pct(c.ClassifierCV.Precision), pct(c.ClassifierCV.Recall), c.ClassifierCV.Abstained, c.ClassifierCV.WrongOnAnswerable)
		fmt.Fprintf(&b, "  in-sample (optimistic): precision %s, recall %s\n", pct(c.ClassifierInSample.Precision), pct(c.ClassifierInSample.Recall))
		b.WriteString("  out-of-fold trade-off:\n")
		writeCurve(&b, c.ClassifierCurve)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeWeights(b *strings.Builder, title string, pts []WeightPoint, chosen float64) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s vs ranking, in-sample:\n", title)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "weight\tHit@1\tRecall@5\tNDCG@10\t")
	for _, p := range pts {
		mark := ""
		if p.Weight == chosen {
			mark = "<- chosen"
		}
		fmt.Fprintf(tw, "%.2f\t%.1f\t%.1f\t%.1f\t%s\n", p.Weight, p.Ranking.Hit1, p.Ranking.R5, p.Ranking.NDCG10, mark)
	}
	_ = tw.Flush()
}

func writeCurve(b *strings.Builder, pts []CurvePoint) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  cutoff\tabstained\tprecision\trecall\tF")
	for _, p := range pts {
		fmt.Fprintf(tw, "  %.4f\t%d\t%s\t%s\t%.1f\n", p.Cutoff, p.Abstained, pct(p.Precision), pct(p.Recall), p.F)
	}
	_ = tw.Flush()
}
