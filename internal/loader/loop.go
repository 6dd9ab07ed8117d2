package loader

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
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
		w, err := skillfs.NewWatcher(l.cfg.Debounce, l.log.With("component", "watch"))
		if err != nil {
			l.log.Warn("file watching unavailable; relying on periodic rescans", "err", err)
		} else {
			l.tracker.watcher = w
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
		if w := l.tracker.watcher; w != nil {
			w.Close()
		}
		return err
	}
	bg, cancel := context.WithCancel(context.Background())
	l.stateMu.Lock()
	l.cancel, l.done = cancel, make(chan struct{})
	l.stateMu.Unlock()
	go l.run(bg, pass.Restored)
	return nil
}

// toolsDebounce coalesces changes of several MCP servers (at start, all of
// them become ready within moments) into one pass.
const toolsDebounce = 200 * time.Millisecond

// run runs a pass after file events, changes of the MCP servers' tools and
// on the rescan timer. A changed tool list is served from the next
// generation: a request in flight keeps the one it started with. With
// catchUp (the first generation came from the last scan, not from the
// roots), it scans the roots first.
func (l *Loader) run(ctx context.Context, catchUp bool) {
	defer close(l.done)
	var events, tools, backfilled <-chan struct{}
	if b := l.assembly.backfill; b != nil {
		var wg sync.WaitGroup
		wg.Go(func() { b.run(ctx) })
		defer wg.Wait()
		backfilled = b.ready
	}
	w := l.tracker.watcher
	if w != nil {
		go w.Run(ctx)
		events = w.Changes()
	}
	if catchUp {
		if _, err := l.refresh(ctx, false, nil); err != nil && ctx.Err() == nil {
			l.log.Error("scanning the roots after serving the last scan failed; serving it until the next reindex", "err", err)
		}
	}
	if w != nil {
		l.mu.Lock()
		l.tracker.watch()
		l.mu.Unlock()
	}
	if l.cfg.Tools != nil {
		tools = l.cfg.Tools.Changes()
	}
	replaced := l.db.Replaced()
	var tick <-chan time.Time
	if l.cfg.RescanInterval > 0 {
		t := time.NewTicker(l.cfg.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	for {
		var changed []string
		select {
		case <-ctx.Done():
			return
		case <-events:
			// Events name what changed: when it all lies in known skill
			// folders, only those are scanned again.
			// No path (a folder newly watched) means scan everything.
			if paths, all := w.TakeChanged(); !all {
				changed = paths
			}
		case <-tick:
		case <-replaced:
			l.rebuilding.Store(true)
		case <-backfilled:
			// Every text is embedded now: a pass without a scan serves
			// the vectors.
			changed = []string{}
		case <-tools:
			t := time.NewTimer(toolsDebounce)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if _, err := l.refresh(ctx, false, changed); err != nil && ctx.Err() == nil {
			l.log.Error("background reindex failed; serving the previous generation", "err", err)
		}
	}
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
		l.rebuilding.Store(true)
		l.log.Warn("the cache file was damaged; building again from the skill folders", "err", err)
		g, pass, err = l.pass(ctx, prev, true, nil)
	}
	if err == nil && !pass.Restored {
		l.rebuilding.Store(false)
	}
	// The pass's stats are in place before its generation is served, so
	// a Status that says serving describes the pass behind it.
	st := pass.Stats
	l.stateMu.Lock()
	l.lastReindex, l.lastErr = time.Now(), err
	if err == nil && st.Published {
		l.lastStats = st
	}
	if err == nil && g != nil {
		l.servedModel = ""
		if g.vectors != nil {
			l.servedModel = g.space.model.Fingerprint
		}
	}
	l.stateMu.Unlock()
	// Catching up is said before the generation that needs it is served,
	// and unsaid after the one that ends it is.
	if err == nil && pass.Restored {
		l.catchingUp.Store(true)
	}
	if err == nil && g != prev {
		l.publish(g)
	}
	if err == nil && !pass.Restored && !pass.Partial && l.catchingUp.Swap(false) {
		l.log.Info("caught up with the skill folders", "published", st.Published, "added", st.Added, "changed", st.Changed,
			"removed", st.Removed, "parsed", st.Parsed, "duration", st.Duration.String(), "phases", phaseList(pass.Phases))
	}
	if l.cfg.OnPass != nil {
		l.cfg.OnPass(ctx, pass, err)
	}
	if err != nil {
		return pass, err
	}
	if pass.Restored {
		l.log.Info("serving the skill files the last scan found, kept in the state folder; scanning the roots now for changes made while the router was stopped",
			"skills", pass.Skills)
	}
	if st.Published {
		l.log.Info("index generation published", "generation", st.Generation, "skills", pass.Skills, "tools", pass.Tools,
			"scanned", st.Scanned, "folders_reused", pass.FoldersReused, "added", st.Added, "changed", st.Changed, "removed", st.Removed,
			"invalid", st.Invalid, "parsed", st.Parsed, "embedded", st.Embedded, "duration", st.Duration.String(),
			"phases", phaseList(pass.Phases))
	}
	return pass, nil
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

// Describe fills in what st says of the passes and the model: the running
// pass, the last one, catching up, the embedding model, and why matching or
// the cache is degraded.
func (l *Loader) Describe(st *skill.Status) {
	st.Progress, st.ParsedTotal = l.Progress(), l.ParsedTotal()
	if !st.Progress.Running && l.tracker.watching.Load() {
		// After a start, the watches are added while the router serves
		// (seconds at 100,000 folders); edits are seen once they are.
		st.Progress = skill.Progress{Running: true, Phase: skill.PhaseWatch}
	}
	l.stateMu.Lock()
	st.LastReindex, st.LastStats = l.lastReindex, l.lastStats
	if l.lastErr != nil {
		st.LastReindexError = l.lastErr.Error()
	}
	l.stateMu.Unlock()
	st.CatchingUp = l.catchingUp.Load()
	l.modelStatus(st)
	for _, why := range l.stateProblems() {
		st.Degraded = true
		st.DegradedReason = strings.TrimPrefix(st.DegradedReason+"; ", "; ") + why
	}
}

// stateProblems says what is wrong with the state folder's files, if
// anything: the cache, and an index snapshot another process changed.
func (l *Loader) stateProblems() []string {
	var out []string
	if why := l.db.Degraded(); why != "" {
		out = append(out, why)
	}
	if l.rebuilding.Load() {
		out = append(out, "the cache file was found damaged and replaced by an empty one; rebuilding it from the skill folders (skill bodies load Unavailable until then)")
	}
	if why := l.snapshots.check(); why != "" {
		out = append(out, why)
	}
	return out
}

// modelStatus fills the embedding fields of a Status: the primary and the
// fast model, which one the last generation serves, and the background
// embedding's progress.
func (l *Loader) modelStatus(st *skill.Status) {
	m := l.cfg.Embedder
	l.stateMu.Lock()
	served := l.servedModel
	l.stateMu.Unlock()
	if b := l.assembly.backfill; b != nil {
		bs := b.status()
		st.Backfill = skill.Backfill{Model: bs.Model, Done: bs.Done, Total: bs.Total, Started: bs.Started}
	}
	if f := l.cfg.Fast; f != nil && !f.Status().Degraded {
		st.FastModel = l.describeModel(f.Status(), served)
	}
	if m == nil {
		if st.FastModel == nil {
			st.Degraded, st.DegradedReason = true, "embeddings are off; matching uses keywords only"
		}
		return
	}
	ms := m.Status()
	if ms.Degraded {
		st.Degraded = true
		fallback := "keywords only"
		if st.FastModel != nil {
			fallback = "the fast model " + st.FastModel.Name
		}
		st.DegradedReason = fmt.Sprintf("%s: %s; matching uses %s until a valid model is available", ms.Reason, ms.Detail, fallback)
		return
	}
	st.Model = l.describeModel(ms, served)
}

// describeModel is the Status of a model, served when served is its
// fingerprint.
func (l *Loader) describeModel(ms embed.Status, served string) *skill.ModelStatus {
	out := &skill.ModelStatus{
		Name: ms.Identity.Name, Dimension: ms.Identity.Dimension, Fingerprint: ms.Identity.Fingerprint, Path: ms.Identity.Path,
		LoadDuration: ms.Load.LoadDuration, QueryLatency: ms.Load.QueryLatency,
		EmbeddingsComputed: ms.EmbeddingsComputed, MatchThreshold: ms.MatchThreshold,
		Serving: served != "" && served == ms.Identity.Fingerprint,
	}
	out.VectorsCached, _ = l.db.VectorCount(ms.Identity.Fingerprint)
	return out
}
