package loader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
)

// Start builds the first generation and publishes it, then keeps
// generations coming in the background (file events, changes of the MCP
// servers' tools, periodic rescans) until Close. Every generation a pass
// builds is handed to publish, on the loop's goroutine, before the pass
// ends. It returns the first pass's error; nothing is published then.
func (l *Loader) Start(ctx context.Context, publish func(*Generation)) error {
	// The watcher exists before the first pass, so that pass's scan also
	// tells it which folders to watch.
	if l.cfg.Watch {
		if err := l.tracker.startWatcher(l.cfg.Debounce, l.log.With("component", "watch")); err != nil {
			l.log.Warn("file watching unavailable; relying on periodic rescans", "err", err)
		}
	}
	if src := l.cfg.Tools; src != nil {
		wait := l.cfg.ToolsWait
		if wait <= 0 {
			wait = 5 * time.Second
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		_ = src.Wait(wctx) // servers that are slower join in a later generation
		cancel()
	}
	// The router is ready once the first generation is published; the
	// watches on its folders (one per folder: seconds at 100,000 skills)
	// are added after, by the loop. Adding them scans once more, which
	// picks up whatever changed before the watches were in place.
	l.mu.Lock()
	l.publish = publish
	pass, err := l.refreshLocked(ctx, false, nil)
	l.mu.Unlock()
	if err != nil {
		l.tracker.closeWatcher()
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.lifeMu.Lock()
	l.cancel, l.done = cancel, done
	l.lifeMu.Unlock()
	// The backfill embeds the model's texts on a goroutine of its own
	// and wakes the loop when they are all in; Close waits for both.
	backfilled, waitBackfill := l.assembly.runBackfill(bg)
	go func() {
		defer close(done)
		defer waitBackfill()
		l.run(bg, pass.Restored, backfilled)
	}()
	return nil
}

// toolsDebounce coalesces changes of several MCP servers (at start, all of
// them become ready within moments) into one pass.
const toolsDebounce = 200 * time.Millisecond

// run runs a pass after file events, changes of the MCP servers' tools,
// the end of the backfill (a value on backfilled) and on the rescan timer,
// until ctx ends. A changed tool list is served from the next
// generation: a request in flight keeps the one it started with. With
// catchUp (the first generation came from the last scan, not from the
// roots), it scans the roots first.
func (l *Loader) run(ctx context.Context, catchUp bool, backfilled <-chan struct{}) {
	events := l.tracker.events(ctx)
	if catchUp {
		if _, err := l.refresh(ctx, false, nil); err != nil && ctx.Err() == nil {
			l.log.Error("scanning the roots after serving the last scan failed; serving it until the next reindex", "err", err)
		}
	}
	if l.tracker.watches() {
		l.mu.Lock()
		l.tracker.watch()
		l.mu.Unlock()
	}
	w := wakeups{events: events, backfilled: backfilled, replaced: l.db.Replaced()}
	if l.cfg.Tools != nil {
		w.tools = l.cfg.Tools.Changes()
	}
	if l.cfg.RescanInterval > 0 {
		t := time.NewTicker(l.cfg.RescanInterval)
		defer t.Stop()
		w.tick = t.C
	}
	for {
		changed, ok := l.next(ctx, w)
		if !ok {
			return
		}
		if _, err := l.refresh(ctx, false, changed); err != nil && ctx.Err() == nil {
			l.log.Error("background reindex failed; serving the previous generation", "err", err)
		}
	}
}

// wakeups are what makes the loop run a pass.
type wakeups struct {
	events     <-chan struct{}  // file events (the tracker's watcher)
	tools      <-chan struct{}  // the MCP servers' tools changed
	backfilled <-chan struct{}  // the background embedding is done
	replaced   <-chan struct{}  // the store replaced its damaged file
	tick       <-chan time.Time // the rescan timer
}

// next waits for the next wakeup and returns the paths the pass scans
// again (nil: every root; empty: none); ok is false when ctx ended.
func (l *Loader) next(ctx context.Context, w wakeups) (changed []string, ok bool) {
	select {
	case <-ctx.Done():
		return nil, false
	case <-w.events:
		// Events name what changed: when it all lies in known skill
		// folders, only those are scanned again.
		// No path (a folder newly watched) means scan everything.
		if paths, all := l.tracker.takeChanged(); !all {
			changed = paths
		}
	case <-w.tick:
	case <-w.replaced:
		l.mu.Lock()
		l.setState(func(s *passState) { s.rebuilding = true })
		l.mu.Unlock()
	case <-w.backfilled:
		// Every text is embedded now: a pass without a scan serves
		// the vectors.
		changed = []string{}
	case <-w.tools:
		t := time.NewTimer(toolsDebounce)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false
		case <-t.C:
		}
	}
	return changed, true
}

// Reindex rescans the roots now (with full, reads and parses every file
// again) and publishes a new generation when anything changed. Before
// Start it answers Unavailable.
func (l *Loader) Reindex(ctx context.Context, full bool) (skill.ReindexStats, error) {
	pass, err := l.refresh(ctx, full, nil)
	return pass.Stats, err
}

// refresh runs a pass after file events that named changed paths (nil:
// scan everything), publishes its generation and has the watcher follow
// its scan.
func (l *Loader) refresh(ctx context.Context, full bool, changed []string) (Pass, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.publish == nil {
		return Pass{}, skill.Errorf(skill.CodeUnavailable, "the skill index is still loading; retry shortly")
	}
	pass, err := l.refreshLocked(ctx, full, changed)
	if err == nil {
		l.tracker.watch()
	}
	return pass, err
}

// refreshLocked runs one pass, publishes its generation and logs it. The
// caller holds mu.
func (l *Loader) refreshLocked(ctx context.Context, full bool, changed []string) (Pass, error) {
	l.snapshots.check()
	prev := l.last
	g, pass, err := l.pass(ctx, prev, full, changed)
	if errors.Is(err, store.ErrDamaged) && ctx.Err() == nil {
		// The store has replaced the file by an empty one: the pass
		// again parses every file into it.
		l.setState(func(s *passState) { s.rebuilding = true })
		l.log.Warn("the cache file was damaged; building again from the skill folders", "err", err)
		g, pass, err = l.pass(ctx, prev, true, nil)
	}
	// The pass's stats are in place before its generation is served, so
	// a Status that says serving describes the pass behind it; catching
	// up is said before the generation that needs it is served, and
	// unsaid after the one that ends it is.
	l.setState(func(s *passState) {
		s.lastReindex, s.lastErr = time.Now(), err
		if err == nil && pass.Stats.Published {
			s.lastStats = pass.Stats
		}
		if err == nil && !pass.Restored {
			s.rebuilding = false
		}
		s.catchingUp = s.catchingUp || err == nil && pass.Restored
	})
	if err == nil && g != prev {
		l.publish(g)
		l.assembly.published(g)
	}
	if caughtUp := err == nil && !pass.Restored && !pass.Partial && l.state.Load().catchingUp; caughtUp {
		l.setState(func(s *passState) { s.catchingUp = false })
		st := pass.Stats
		l.log.Info("caught up with the skill folders", "published", st.Published, "added", st.Added, "changed", st.Changed,
			"removed", st.Removed, "parsed", st.Parsed, "duration", st.Duration.String(), "phases", phaseList(pass.Phases))
	}
	if l.cfg.OnPass != nil {
		l.cfg.OnPass(ctx, pass, err)
	}
	if err == nil {
		l.logPass(pass)
	}
	return pass, err
}

// logPass logs a pass that ended well.
func (l *Loader) logPass(pass Pass) {
	if pass.Restored {
		l.log.Info("serving the skill files the last scan found, kept in the state folder; scanning the roots now for changes made while the router was stopped",
			"skills", pass.Skills)
	}
	if st := pass.Stats; st.Published {
		l.log.Info("index generation published", "generation", st.Generation, "skills", pass.Skills, "tools", pass.Tools,
			"scanned", st.Scanned, "folders_reused", pass.FoldersReused, "added", st.Added, "changed", st.Changed, "removed", st.Removed,
			"invalid", st.Invalid, "parsed", st.Parsed, "embedded", st.Embedded, "duration", st.Duration.String(),
			"phases", phaseList(pass.Phases))
	}
}

// phaseList renders a pass's phases for the log, for example
// "scan=1.2s parse=0s store=310ms".
func phaseList(ps []Phase) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", p.Name, p.Duration.Round(time.Millisecond))
	}
	return b.String()
}

// Describe fills in what st says of the passes: the running pass (or the
// watcher adding folders), the last one, catching up, and the background
// embedding. The models' status and why matching or the cache is degraded
// are their owners' (see Problems for the loader's part).
func (l *Loader) Describe(st *skill.Status) {
	ps := l.state.Load()
	st.Progress, st.ParsedTotal = l.Progress(), ps.parsedTotal
	if !st.Progress.Running && l.tracker.syncingWatcher() {
		// After a start, the watches are added while the router serves
		// (seconds at 100,000 folders); edits are seen once they are.
		st.Progress = skill.Progress{Running: true, Phase: skill.PhaseWatch}
	}
	st.LastReindex, st.LastStats = ps.lastReindex, ps.lastStats
	if ps.lastErr != nil {
		st.LastReindexError = ps.lastErr.Error()
	}
	st.CatchingUp = ps.catchingUp
	if bf, ok := l.assembly.backfillStatus(); ok {
		st.Backfill = bf
	}
}

// Problems says what is wrong with the loader's files in the state folder,
// if anything, for Status: a cache file being rebuilt after damage, and an
// index snapshot another process changed.
func (l *Loader) Problems() []string {
	var out []string
	if l.state.Load().rebuilding {
		out = append(out, "the cache file was found damaged and replaced by an empty one; rebuilding it from the skill folders (skill bodies load Unavailable until then)")
	}
	if why := l.snapshots.check(); why != "" {
		out = append(out, why)
	}
	return out
}
