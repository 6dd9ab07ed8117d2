package loader

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// progress is the state of the running pass, for Status.
type progress struct {
	p atomic.Pointer[skill.Progress]
}

func (p *progress) set(phase string, done, total int) {
	p.p.Store(&skill.Progress{Running: true, Phase: phase, Done: done, Total: total})
}

func (p *progress) clear() { p.p.Store(&skill.Progress{}) }

func (p *progress) get() skill.Progress { return *p.p.Load() }

// pass brings the store in step with the disk and returns the generation
// that reflects it, made from prev (nil for the first pass): prev itself
// when nothing changed (Pass.Stats.Published is then false). With full,
// every file is read and parsed again; changed are the paths file events
// named, when every one lies in a skill folder the last scan found (else
// nil: every root is scanned). On error the store keeps what was written
// before the error, and prev stays valid. The caller holds mu.
//
// The index is updated from prev's (or, on the first pass, from the
// snapshot the last run left in the state folder): only skills that
// changed are analyzed and embedded. Each new generation's index is saved
// to that snapshot in the background.
func (l *Loader) pass(ctx context.Context, prev *Generation, full bool, changed []string) (*Generation, Pass, error) {
	start := time.Now()
	defer l.progress.clear()
	if n := l.db.Replacements(); n != l.replacements {
		// The cache file was found damaged and replaced by an empty one:
		// what the records say it holds, it no longer does. Every file is
		// parsed again, which stores its record and body again.
		l.replacements, full, changed = n, true, nil
		l.log.Warn("the cache file was replaced after damage; parsing every skill again")
	}
	c, pass, err := l.catalogWithBodies(ctx, prev, full, changed)
	pass.Full = full
	if err != nil {
		return nil, pass, err
	}
	// The snapshot is read while the pass scans: wait for it only now.
	base, baseSpace := l.base(prev, &pass)
	g, prune, err := l.assembly.assemble(ctx, prev, base, baseSpace, c, l.matchCfg, &pass)
	if err != nil {
		return nil, pass, err
	}
	if g == prev {
		if prune {
			l.snapshots.save(g, true)
		}
		pass.Stats.Generation = prev.ID
		pass.Stats.Duration = time.Since(start)
		return prev, pass, nil
	}
	g.scan, g.scanRoots = l.tracker.lastScan()
	if pass.Restored {
		l.snapshots.scanWritten(g.ContentID)
	}
	l.snapshots.save(g, prune)
	l.last = g
	pass.Tools = len(c.cat.Tools())
	pass.Skills = len(c.winners) - pass.Tools
	pass.Stats.Generation = g.ID
	pass.Stats.Published = true
	pass.Stats.Duration = time.Since(start)
	return g, pass, nil
}

// catalogWithBodies is catalog, run a second time when the check of the
// cached bodies found some missing or damaged: before any body is used,
// their files are parsed again, which stores their bodies again. A pass
// that serves the last scan leaves that to the pass after it: until then,
// a damaged body is not served (Generation.Body), and a skill whose
// analysis needed it is analyzed again then.
func (l *Loader) catalogWithBodies(ctx context.Context, prev *Generation, full bool, changed []string) (cataloged, Pass, error) {
	c, pass, err := l.catalog(ctx, prev, full, changed, nil)
	if err != nil || pass.Restored {
		return c, pass, err
	}
	bodiless, err := l.records.takeBodiless()
	if err != nil || len(bodiless) == 0 {
		return c, pass, err
	}
	l.log.Warn("cached bodies missing or damaged; parsing their files again", "files", len(bodiless))
	reparse := make(map[string]bool, len(bodiless))
	for _, r := range bodiless {
		reparse[r.Path] = true
	}
	first := pass
	c, pass, err = l.catalog(ctx, prev, full, changed, reparse)
	if err != nil {
		return c, pass, err
	}
	pass.Phases = append(first.Phases, pass.Phases...)
	pass.Stats = afterSecondPass(first.Stats, pass.Stats)
	return c, pass, nil
}

// base returns the index a pass updates and the space of its vectors:
// prev's, or on the first pass the index snapshot's (nil when there is
// none).
func (l *Loader) base(prev *Generation, pass *Pass) (*match.Index, vectorSpace) {
	if prev != nil {
		return prev.Index, prev.space
	}
	if l.based {
		return nil, vectorSpace{}
	}
	l.based = true
	t := time.Now()
	base, space := l.snapshots.load()
	pass.phase("snapshot", &t)
	return base, space
}

// catalog finds the skill files (tracker), brings the store's records in
// step with them (record sync) and returns the catalog they make with the
// tools of MCP servers (assembly): prev's when its input did not change.
// The files of reparse are parsed again whatever their stamps.
func (l *Loader) catalog(ctx context.Context, prev *Generation, full bool, changed []string, reparse map[string]bool) (cataloged, Pass, error) {
	var pass Pass
	t := time.Now()
	l.progress.set("scan", 0, 0)
	restore := prev == nil && !full && changed == nil && reparse == nil
	f, err := l.tracker.find(ctx, restore, prev != nil && !full, changed)
	if err != nil {
		return cataloged{}, pass, err
	}
	pass.phase("scan", &t)
	if err := l.records.wait(); err != nil {
		return cataloged{}, pass, err
	}
	pass.phase("records", &t)
	if err := ctx.Err(); err != nil {
		return cataloged{}, pass, err
	}
	todo := l.records.toParse(f.scan.Files, full, reparse)
	if f.restored && !l.records.holdsExactly(f.scan.Files, todo) {
		l.log.Info("the cache does not hold the skill files of the last scan as it found them; scanning the roots",
			"files", len(f.scan.Files), "cached", l.records.cached(), "to_parse", len(todo))
		if err := l.tracker.scan(ctx, &f, changed, false); err != nil {
			return cataloged{}, pass, err
		}
		todo = l.records.toParse(f.scan.Files, full, reparse)
		pass.phase("scan", &t)
	}
	if f.restored {
		l.tracker.keep(&f.scan, f.roots)
	} else {
		l.records.checkBodies()
	}
	pass.Dirs, pass.Restored, pass.Partial, pass.FoldersReused = f.scan.Dirs, f.restored, f.partial, f.reused
	recs, err := l.records.sync(ctx, &f, todo, reparse, &pass, &t)
	l.setState(func(s *passState) { s.parsedTotal = l.records.parsedTotal() })
	if err != nil {
		return cataloged{}, pass, err
	}
	c, built := l.assembly.catalog(prev, &f, recs)
	pass.Stats.FinishedAt = time.Now()
	if built {
		pass.phase("catalog", &t)
	}
	return c, pass, nil
}
