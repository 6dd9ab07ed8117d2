package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/embed"
)

const modelUsage = `
Usage:
  routerctl model info
  routerctl model verify DIR

info asks the running router which embedding model it uses: name,
dimension, fingerprint, load time, measured query latency, embeddings
computed since start, vectors cached, and whether it has fallen back to
keyword-only matching (and why).

verify loads a model folder without a router (model.onnx or onnx/model.onnx
plus tokenizer.json, as exported for Hugging Face), embeds a few texts and
checks the vectors: dimension, unit norm, no NaN, different texts give
different vectors, hostile inputs do not crash. Exit code 1 on any failure.
`

func runModel(e *env, args []string) error {
	fs := newFlags(e, "model", modelUsage)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 1 && pos[0] == "info":
		return modelInfo(e)
	case len(pos) == 2 && pos[0] == "verify":
		return modelVerify(e, pos[1])
	}
	return usageError{"model takes 'info' or 'verify DIR' (see routerctl model --help)"}
}

func modelInfo(e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := e.ctx()
	defer cancel()
	st, err := c.Status(ctx, &routerv1.StatusRequest{})
	if err != nil {
		return err
	}
	if e.json {
		return e.printProto(&routerv1.StatusResponse{Model: st.Model, Degraded: st.Degraded, DegradedReason: st.DegradedReason})
	}
	if m := st.Model; m != nil && m.Name != "" {
		fmt.Fprintf(e.stdout, "model:          %s\n", m.Name)
		fmt.Fprintf(e.stdout, "path:           %s\n", m.Path)
		fmt.Fprintf(e.stdout, "dimension:      %d\n", m.Dimension)
		fmt.Fprintf(e.stdout, "fingerprint:    %s\n", m.Fingerprint)
		fmt.Fprintf(e.stdout, "load time:      %s\n", m.LoadDuration.AsDuration().Round(time.Millisecond))
		fmt.Fprintf(e.stdout, "query latency:  %s (median, measured at load)\n", m.QueryLatency.AsDuration().Round(time.Microsecond))
		fmt.Fprintf(e.stdout, "threshold:      %.3f\n", m.MatchThreshold)
		fmt.Fprintf(e.stdout, "embedded:       %d since start, %d vectors cached\n", m.EmbeddingsComputed, m.CacheEntries)
	}
	if st.Degraded {
		fmt.Fprintf(e.stdout, "DEGRADED: %s\n", st.DegradedReason)
	}
	return nil
}

func modelVerify(e *env, dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(e.timeout, 2*time.Minute))
	defer cancel()
	rep, err := embed.Verify(ctx, dir, embed.Config{Dir: dir})
	if e.json {
		out := map[string]any{"ok": err == nil && rep.OK(), "report": rep}
		if err != nil {
			out["error"] = err.Error()
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(out); jerr != nil {
			return jerr
		}
	} else {
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
	if err != nil || !rep.OK() {
		return exitStatus(exitError)
	}
	return nil
}
