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
		return writeStatus(e.stdout, st)
	})
	return cmd
}

// writeStatus prints the router's state for people.
func writeStatus(w io.Writer, st *routerv1.StatusResponse) error {
	state := "serving"
	if !st.Serving {
		state = "loading"
	}
	fmt.Fprintf(w, "router %s, %s, up %s\n", st.Version, state, time.Since(st.StartedAt.AsTime()).Round(time.Second))
	fmt.Fprintf(w, "index generation %d: %d skills served, %d disabled, %d hidden, %d agent-scoped, %d shadowed, %d files invalid\n",
		st.IndexGeneration, st.Skills, st.SkillsDisabled, st.SkillsHidden, st.SkillsAgentScoped, st.SkillsShadowed, st.FilesInvalid)
	if len(st.Agents) > 0 {
		fmt.Fprintf(w, "agents: %v\n", st.Agents)
	}
	if lr := st.LastReindex; lr != nil && lr.FinishedAt != nil {
		fmt.Fprintf(w, "last reindex %s ago: scanned %d, parsed %d, took %s\n",
			time.Since(lr.FinishedAt.AsTime()).Round(time.Second), lr.Scanned, lr.Parsed, lr.Duration.AsDuration().Round(time.Millisecond))
	}
	if st.LastReindexError != "" {
		fmt.Fprintf(w, "last reindex FAILED: %s\n", st.LastReindexError)
	}
	if st.CatchingUp {
		fmt.Fprintln(w, "catching up: serving what the last scan found before this start; scanning the skill folders for changes made while the router was stopped")
	}
	if p := st.ReindexProgress; p.GetRunning() {
		if p.Phase == skill.PhaseWatch {
			fmt.Fprintln(w, "file watcher: adding the folders of the last scan; edits are seen once it is done")
		} else {
			fmt.Fprintf(w, "reindex running: %s %d/%d\n", p.Phase, p.Done, p.Total)
		}
	}
	if v := st.Validation; v != nil && (v.Errors > 0 || v.Warnings > 0) {
		fmt.Fprintf(w, "validation: %d errors, %d warnings, by code:\n", v.Errors, v.Warnings)
		for _, code := range slices.Sorted(maps.Keys(v.ByCode)) {
			fmt.Fprintf(w, "  %-28s %d\n", code, v.ByCode[code])
		}
		fmt.Fprintln(w, "  see each with its file and line: routerctl validate WORKSPACE; one skill's: routerctl show NAME")
	}
	if len(st.Servers) > 0 {
		ready, failed := 0, 0
		for _, s := range st.Servers {
			switch s.State {
			case routerv1.ServerState_SERVER_STATE_READY:
				ready++
			case routerv1.ServerState_SERVER_STATE_FAILED:
				failed++
			}
		}
		fmt.Fprintf(w, "tools: %d served from %d MCP servers (%d ready, %d failed); details: routerctl servers\n",
			st.Tools, len(st.Servers), ready, failed)
	}
	fmt.Fprintf(w, "flags: skills_v1=%v skills_exec=%v tools_call=%v\n", st.Flags.GetSkillsV1(), st.Flags.GetSkillsExec(), st.Flags.GetToolsCall())
	if m := st.Model; m != nil && m.Name != "" {
		fmt.Fprintf(w, "model: %s (dim %d, %d embeddings computed, %d cached)\n", m.Name, m.Dimension, m.EmbeddingsComputed, m.CacheEntries)
	}
	if b := st.Backfill; b != nil {
		fmt.Fprintf(w, "embedding in the background: %s, %d of %d skill texts; matching uses %s meanwhile\n",
			b.Model, b.Done, b.Total, cmp.Or(servingModel(st), "keywords only"))
	}
	if st.Degraded {
		fmt.Fprintf(w, "DEGRADED: %s\n", st.DegradedReason)
	}
	if c := st.Config; c != nil && c.Error != "" {
		fmt.Fprintf(w, "config edit REJECTED (previous config in force): %s\n", c.Error)
	}
	if n := len(st.Shadowed); n > 0 {
		fmt.Fprintf(w, "%d name collisions; see routerctl list --shadowed\n", n)
	}
	return nil
}
