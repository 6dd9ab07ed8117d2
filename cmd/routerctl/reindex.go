package main

import (
	"context"
	"fmt"
	"os"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

const reindexUsage = `
Usage: routerctl reindex [--full]

Rescans the skill folders now and prints what changed. The router also
reindexes by itself when files change and on a timer; use this after bulk
edits or to check a fix. --full re-reads and re-parses every file instead of
trusting the cache. On a terminal, progress is shown while it runs.
`

func runReindex(e *env, args []string) error {
	fs := newFlags(e, "reindex", reindexUsage)
	full := fs.Bool("full", false, "re-read and re-parse every file")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(e.timeout, 10*time.Minute))
	defer cancel()

	type result struct {
		res *routerv1.ReindexResponse
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Reindex(ctx, &routerv1.ReindexRequest{Full: *full})
		done <- result{res, err}
	}()
	var r result
	if isTerminal(e.stderr) && !e.json {
		r = waitWithProgress(ctx, e, c, done)
	} else {
		r = <-done
	}
	if r.err != nil {
		return r.err
	}
	if e.json {
		return e.printProto(r.res)
	}
	st := r.res.Stats
	fmt.Fprintf(e.stdout, "scanned %d: %d added, %d changed, %d removed, %d unchanged, %d invalid; parsed %d in %s (generation %d)\n",
		st.Scanned, st.Added, st.Changed, st.Removed, st.Unchanged, st.Invalid, st.Parsed,
		st.Duration.AsDuration().Round(time.Millisecond), st.IndexGeneration)
	if st.Invalid > 0 {
		fmt.Fprintln(e.stdout, "see the problems with: routerctl status, or routerctl validate DIR")
	}
	return nil
}

// waitWithProgress polls Status while the reindex runs and draws one line.
func waitWithProgress[T any](ctx context.Context, e *env, c routerv1.SkillRouterClient, done <-chan T) T {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	drawn := false
	for {
		select {
		case r := <-done:
			if drawn {
				fmt.Fprint(e.stderr, "\r\033[K")
			}
			return r
		case <-tick.C:
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := c.Status(sctx, &routerv1.StatusRequest{})
			cancel()
			if err != nil || !st.ReindexProgress.GetRunning() {
				continue
			}
			p := st.ReindexProgress
			if p.Total > 0 {
				fmt.Fprintf(e.stderr, "\r\033[K%s: %d/%d", p.Phase, p.Done, p.Total)
			} else {
				fmt.Fprintf(e.stderr, "\r\033[K%s...", p.Phase)
			}
			drawn = true
		}
	}
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
