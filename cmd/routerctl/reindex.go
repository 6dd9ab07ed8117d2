package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skillpb"
)

// reindexTimeout bounds a reindex when --timeout is shorter: a full
// reindex of a large tree re-embeds every skill.
const reindexTimeout = 10 * time.Minute

func newReindexCmd(e *env) *cobra.Command {
	var full bool
	cmd := &cobra.Command{
		Use:   "reindex",
		Short: "rescan the skill folders now",
		Long: `Rescans the skill folders now and prints what changed. The router also
reindexes by itself when files change and on a timer; use this after bulk
edits or to check a fix. --full re-reads and re-parses every file instead of
trusting the cached records; it embeds again only the skills whose embedded
text changed (a vector depends on the text and the model alone, and cached
vectors carry checksums). On a terminal, progress is shown on stderr while it runs.
The call may take up to 10 minutes, or --timeout when longer.`,
		Example: `  routerctl reindex
  routerctl reindex --full --json`,
		Args: noArgs,
	}
	cmd.Flags().BoolVar(&full, "full", false, "re-read and re-parse every file")
	cmd.RunE = e.remote(reindexTimeout, func(ctx context.Context, c routerv1.SkillRouterClient, _ []string) error {
		stop := e.pollProgress(ctx, c)
		res, err := c.Reindex(ctx, &routerv1.ReindexRequest{Full: full})
		stop()
		if err != nil {
			return err
		}
		if e.json {
			return e.printJSON(res)
		}
		st := skillpb.ReindexStats(res.GetStats())
		fmt.Fprintf(e.stdout, "scanned %d: %d added, %d changed, %d removed, %d unchanged, %d invalid; parsed %d in %s (generation %d)\n",
			st.Scanned, st.Added, st.Changed, st.Removed, st.Unchanged, st.Invalid, st.Parsed,
			st.Duration.Round(time.Millisecond), st.Generation)
		if st.Invalid > 0 {
			fmt.Fprintln(e.stdout, "the invalid files' problems: routerctl status (by code), routerctl validate WORKSPACE (each with its file and line)")
		}
		return nil
	})
	return cmd
}

// pollProgress shows the router's reindex progress on the status line
// until stop is called; it does nothing when stderr is not a terminal.
func (e *env) pollProgress(ctx context.Context, c routerv1.SkillRouterClient) (stop func()) {
	if !e.progress.On() {
		return func() {}
	}
	ctx, cancel := context.WithCancel(withoutRetry(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			sctx, scancel := context.WithTimeout(ctx, time.Second)
			st, err := c.Status(sctx, &routerv1.StatusRequest{})
			scancel()
			if err != nil {
				continue
			}
			if p := skillpb.Status(st).Progress; p.Running {
				if p.Total > 0 {
					e.progress.Show("reindex: %s %d/%d", p.Phase, p.Done, p.Total)
				} else {
					e.progress.Show("reindex: %s...", p.Phase)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
		e.progress.Clear()
	}
}
