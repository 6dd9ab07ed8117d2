package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newModelCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "show the router's embedding model, or verify a model folder offline",
		Long: `model info asks the running router which embedding model it uses;
model verify checks a model folder offline.`,
		Example: `  routerctl model info
  routerctl model verify models/mcpsag-static-v1`,
	}
	cmd.AddCommand(newModelInfoCmd(e), newModelVerifyCmd(e))
	requireSubcommand(cmd)
	return cmd
}

// modelInfoOutput is model info's JSON output.
type modelInfoOutput struct {
	Model json.RawMessage `json:"model"` // a ModelStatus
	// FastModel is the fast model's ModelStatus, null when there is none.
	FastModel json.RawMessage `json:"fast_model"`
	// Serving names the model whose vectors matching uses; empty for
	// keywords only.
	Serving string `json:"serving"`
	// Backfill is the background embedding's progress (an
	// EmbeddingBackfill), null when none is under way.
	Backfill       json.RawMessage `json:"backfill"`
	Degraded       bool            `json:"degraded"`
	DegradedReason string          `json:"degraded_reason"`
}

func newModelInfoCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "info",
		Short: "show the running router's embedding model",
		Long: `Asks the running router which embedding model it uses: name, dimension,
fingerprint, load time, measured query latency, embeddings computed since
start, vectors cached, and whether it has fallen back to keyword-only
matching (and why). It also names the fast model, served while the model's
vectors are computed in the background (with their progress) or when the
model is unavailable, and says whose vectors matching uses now.`,
		Example: `  routerctl model info
  routerctl model info --json`,
		Args: noArgs,
	}
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, _ []string) error {
		st, err := c.Status(ctx, &routerv1.StatusRequest{})
		if err != nil {
			return err
		}
		serving := servingModel(skillpb.Status(st))
		if e.json {
			out := modelInfoOutput{Model: protoRaw(st.GetModel()), FastModel: json.RawMessage("null"), Serving: serving,
				Backfill: json.RawMessage("null"), Degraded: st.Degraded, DegradedReason: st.DegradedReason}
			if st.GetFastModel() != nil {
				out.FastModel = protoRaw(st.GetFastModel())
			}
			if st.GetBackfill() != nil {
				out.Backfill = protoRaw(st.GetBackfill())
			}
			return e.printJSON(out)
		}
		writeModelInfo(e.stdout, skillpb.Status(st))
		return nil
	})
	return cmd
}

// writeModelInfo prints the models of a router's state for people.
func writeModelInfo(w io.Writer, st *skill.Status) {
	if m := st.Model; m != nil && m.Name != "" {
		fmt.Fprintf(w, "model:          %s\n", m.Name)
		fmt.Fprintf(w, "path:           %s\n", m.Path)
		fmt.Fprintf(w, "dimension:      %d\n", m.Dimension)
		fmt.Fprintf(w, "fingerprint:    %s\n", m.Fingerprint)
		fmt.Fprintf(w, "load time:      %s\n", m.LoadDuration.Round(time.Millisecond))
		fmt.Fprintf(w, "query latency:  %s (median, measured at load)\n", m.QueryLatency.Round(time.Microsecond))
		fmt.Fprintf(w, "threshold:      %.3f\n", m.MatchThreshold)
		fmt.Fprintf(w, "embedded:       %d since start, %d vectors cached\n", m.EmbeddingsComputed, m.VectorsCached)
	} else {
		fmt.Fprintln(w, "no embedding model loaded")
	}
	if f := st.FastModel; f != nil {
		state := ""
		if f.Released {
			state = "; unloaded until a reindex needs it"
		}
		fmt.Fprintf(w, "fast model:     %s (dim %d, query latency %s%s)\n", f.Name, f.Dimension, f.QueryLatency.Round(time.Microsecond), state)
	}
	fmt.Fprintf(w, "serving:        %s\n", cmp.Or(servingModel(st), "keywords only"))
	if b := st.Backfill; b.Model != "" {
		fmt.Fprintf(w, "background:     %s has embedded %d of %d skill texts\n", b.Model, b.Done, b.Total)
	}
	if st.Degraded {
		fmt.Fprintf(w, "DEGRADED: %s\n", st.DegradedReason)
	}
}

// servingModel names the model whose vectors matching uses; empty for
// keywords only.
func servingModel(st *skill.Status) string {
	for _, m := range []*skill.ModelStatus{st.Model, st.FastModel} {
		if m != nil && m.Serving {
			return m.Name
		}
	}
	return ""
}

// verifyOutput is model verify's JSON output.
type verifyOutput struct {
	OK bool `json:"ok"`
	// Error says why the model did not load; empty when it did.
	Error           string        `json:"error"`
	Name            string        `json:"name"`
	Path            string        `json:"path"`
	Dimension       int           `json:"dimension"`
	Fingerprint     string        `json:"fingerprint"`
	LoadNS          time.Duration `json:"load_ns"`
	QueryLatencyNS  time.Duration `json:"query_latency_ns"`
	BatchThroughput float64       `json:"batch_texts_per_second"`
	Checks          []verifyCheck `json:"checks"`
	Warnings        []string      `json:"warnings"`
}

type verifyCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

func newModelVerifyCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "verify DIR",
		Short: "check a model folder offline",
		Long: `Loads a model folder without a router (model.onnx or onnx/model.onnx plus
tokenizer.json, as exported for Hugging Face), embeds a few texts and checks
the vectors: dimension, unit norm, no NaN, different texts give different
vectors, hostile inputs do not crash. Exit code 1 on any failure. It may
take up to --timeout or 2 minutes, whichever is longer.`,
		Example: `  routerctl model verify models/mcpsag-static-v1
  routerctl model verify ~/models/bge-small-en-v1.5 --json`,
		Args: exactArgs(1, "one model folder DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), max(e.timeout, 2*time.Minute))
			defer cancel()
			e.progress.Show("verifying %s...", args[0])
			rep, err := embed.Verify(ctx, args[0], embed.Config{Dir: args[0]})
			e.progress.Clear()
			if e.json {
				out := verifyOutput{OK: err == nil && rep.OK(), Name: rep.Identity.Name, Path: rep.Identity.Path,
					Dimension: rep.Identity.Dimension, Fingerprint: rep.Identity.Fingerprint, LoadNS: rep.Load.LoadDuration,
					QueryLatencyNS: rep.Load.QueryLatency, BatchThroughput: rep.BatchThroughput, Warnings: rep.Warnings}
				if err != nil {
					out.Error = err.Error()
				}
				for _, c := range rep.Checks {
					out.Checks = append(out.Checks, verifyCheck{c.Name, c.OK, c.Detail})
				}
				if jerr := e.printJSON(out); jerr != nil {
					return jerr
				}
			} else {
				writeVerify(e, &rep, err)
			}
			if err != nil || !rep.OK() {
				return exitStatus(exitError)
			}
			return nil
		},
	}
}

func writeVerify(e *env, rep *embed.VerifyReport, err error) {
	if rep.Identity.Name != "" {
		fmt.Fprintf(e.stdout, "%s: dimension %d, fingerprint %.16s…, loaded in %s, query %s, batch %.0f texts/s\n",
			rep.Identity.Name, rep.Identity.Dimension, rep.Identity.Fingerprint,
			rep.Load.LoadDuration.Round(time.Millisecond), rep.Load.QueryLatency.Round(time.Microsecond), rep.BatchThroughput)
	}
	for _, c := range rep.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(e.stdout, "%s %-20s %s\n", mark, c.Name, c.Detail)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(e.stdout, "warn %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(e.stdout, "FAIL the model does not load: %v\n", err)
	}
}
