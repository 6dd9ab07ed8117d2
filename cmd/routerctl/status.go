package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

func newStatusCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "show the router's state",
		Long: `Shows the router's state: whether it serves, the index generation and skill
counts, the last reindex, validation problems by code, name collisions,
feature flags and the embedding model. It answers while the router is still
building its first index.`,
		Example: `  routerctl status
  routerctl status --json`,
		Args: noArgs,
	}
	cmd.RunE = e.remote(0, func(ctx context.Context, c routerv1.SkillRouterClient, _ []string) error {
		st, err := c.Status(ctx, &routerv1.StatusRequest{})
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(st)
		}
		return writeStatus(e.stdout, skillpb.Status(st))
	})
	return cmd
}

// writeStatus prints the router's state for people: the index, then what
// it serves with.
func writeStatus(w io.Writer, st *skill.Status) error {
	state := "serving"
	if !st.Serving {
		state = "loading"
	}
	fmt.Fprintf(w, "router %s, %s, up %s\n", st.Version, state, time.Since(st.StartedAt).Round(time.Second))
	writeIndexState(w, st)
	writeServices(w, st)
	if n := len(st.Shadows); n > 0 {
		fmt.Fprintf(w, "%d name collisions; see routerctl list --shadowed\n", n)
	}
	return nil
}

// writeIndexState prints the index: its generation and counts, its last
// and running reindex, and its validation problems by code.
func writeIndexState(w io.Writer, st *skill.Status) {
	fmt.Fprintf(w, "index generation %d: %d skills served, %d disabled, %d hidden, %d agent-scoped, %d shadowed, %d files invalid\n",
		st.Generation, st.Skills, st.Disabled, st.Hidden, st.AgentScoped, st.Shadowed, st.FilesInvalid)
	if len(st.Agents) > 0 {
		fmt.Fprintf(w, "agents: %v\n", st.Agents)
	}
	if lr := st.LastStats; !lr.FinishedAt.IsZero() {
		fmt.Fprintf(w, "last reindex %s ago: scanned %d, parsed %d, took %s\n",
			time.Since(lr.FinishedAt).Round(time.Second), lr.Scanned, lr.Parsed, lr.Duration.Round(time.Millisecond))
	}
	if st.LastReindexError != "" {
		fmt.Fprintf(w, "last reindex FAILED: %s\n", st.LastReindexError)
	}
	if st.CatchingUp {
		fmt.Fprintln(w, "catching up: serving what the last scan found before this start; scanning the skill folders for changes made while the router was stopped")
	}
	if p := st.Progress; p.Running {
		if p.Phase == skill.PhaseWatch {
			fmt.Fprintln(w, "file watcher: adding the folders of the last scan; edits are seen once it is done")
		} else {
			fmt.Fprintf(w, "reindex running: %s %d/%d\n", p.Phase, p.Done, p.Total)
		}
	}
	if st.Errors > 0 || st.Warnings > 0 {
		fmt.Fprintf(w, "validation: %d errors, %d warnings, by code:\n", st.Errors, st.Warnings)
		for _, code := range slices.Sorted(maps.Keys(st.ProblemsByCode)) {
			fmt.Fprintf(w, "  %-28s %d\n", code, st.ProblemsByCode[code])
		}
		fmt.Fprintln(w, "  see each with its file and line: routerctl validate WORKSPACE; one skill's: routerctl show NAME")
	}
}

// writeServices prints what the index is served with: the MCP servers,
// the feature flags, the embedding model, and the state of the config.
func writeServices(w io.Writer, st *skill.Status) {
	if len(st.Servers) > 0 {
		ready, failed := 0, 0
		for _, s := range st.Servers {
			switch s.State {
			case skill.ServerReady:
				ready++
			case skill.ServerFailed:
				failed++
			}
		}
		fmt.Fprintf(w, "tools: %d served from %d MCP servers (%d ready, %d failed); details: routerctl servers\n",
			st.Tools, len(st.Servers), ready, failed)
	}
	fmt.Fprintf(w, "flags: skills_v1=%v skills_exec=%v tools_call=%v\n", st.Flags.SkillsV1, st.Flags.SkillsExec, st.Flags.ToolsCall)
	if m := st.Model; m != nil && m.Name != "" {
		fmt.Fprintf(w, "model: %s (dim %d, %d embeddings computed, %d cached)\n", m.Name, m.Dimension, m.EmbeddingsComputed, m.VectorsCached)
	}
	if b := st.Backfill; b.Model != "" {
		fmt.Fprintf(w, "embedding in the background: %s, %d of %d skill texts; matching uses %s meanwhile\n",
			b.Model, b.Done, b.Total, cmp.Or(servingModel(st), "keywords only"))
	}
	if st.Degraded {
		fmt.Fprintf(w, "DEGRADED: %s\n", st.DegradedReason)
	}
	if st.Config.Error != "" {
		fmt.Fprintf(w, "config edit REJECTED (previous config in force): %s\n", st.Config.Error)
	}
}
