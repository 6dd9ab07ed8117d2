package loader

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// recordSync keeps the store's file records in step with the skill files a
// scan found: unchanged files (same size and modification time) are never
// read again, changed ones are parsed again (in parallel), deleted ones
// dropped, all written in one transaction. At a start it reads the cached
// records, and checks their bodies, in the background.
type recordSync struct {
	db       *store.DB
	limits   skillmd.Limits
	workers  int
	log      *slog.Logger
	progress *progress

	records     map[string]*store.FileRecord // by SKILL.md path, as the store holds them
	loading     chan struct{}                // closed once the cached records are read
	loadErr     error
	startCheck  func()              // starts the check of the cached bodies once the records are read
	checking    chan struct{}       // closed once the cached bodies are checked; nil after the first pass
	bodiless    []*store.FileRecord // records whose cached body is missing or damaged
	bodilessErr error

	parsed int64 // files parsed since the start
}

// newRecordSync starts reading the cached records of db, and then checking
// their bodies; with laterCheck, the check waits until checkBodies is
// called.
func newRecordSync(db *store.DB, limits skillmd.Limits, workers int, log *slog.Logger, p *progress, laterCheck bool) *recordSync {
	r := &recordSync{db: db, limits: limits, workers: workers, log: log, progress: p,
		loading: make(chan struct{}), checking: make(chan struct{})}
	check := make(chan struct{})
	r.startCheck = sync.OnceFunc(func() { close(check) })
	if !laterCheck {
		r.startCheck()
	}
	go func() {
		defer close(r.checking)
		recs, err := db.Files()
		r.records, r.loadErr = recs, err
		close(r.loading)
		<-check
		if err == nil {
			r.bodiless, r.bodilessErr = db.MissingBodies(recs)
		}
	}()
	return r
}

// checkBodies starts the check of the cached bodies, once the cached
// records are read, unless it started.
func (r *recordSync) checkBodies() { r.startCheck() }

// cached returns how many files the store holds records of.
func (r *recordSync) cached() int { return len(r.records) }

// parsedTotal returns how many files were parsed since the start.
func (r *recordSync) parsedTotal() int64 { return r.parsed }

// wait waits for the cached records newRecordSync started to read.
func (r *recordSync) wait() error {
	<-r.loading
	return r.loadErr
}

// takeBodiless waits for the check of the cached bodies, the first time it
// is called, and returns the records it found without a body that are
// still the store's; later calls return nothing.
func (r *recordSync) takeBodiless() ([]*store.FileRecord, error) {
	if r.checking == nil {
		return nil, nil
	}
	<-r.checking
	found, err := r.bodiless, r.bodilessErr
	r.checking, r.bodiless, r.bodilessErr = nil, nil, nil
	var current []*store.FileRecord
	for _, rec := range found {
		if r.records[rec.Path] == rec {
			current = append(current, rec)
		}
	}
	return current, err
}

// toParse returns the indexes of the files to parse: every one with full,
// else those the store does not hold at their size and modification time,
// and those of reparse (SKILL.md paths to parse whatever their stamps).
func (r *recordSync) toParse(files []skillfs.Found, full bool, reparse map[string]bool) []int {
	var todo []int
	for i, f := range files {
		old := r.records[f.Path]
		if !full && old != nil && !reparse[f.Path] && old.ModTimeNano == f.ModTime.UnixNano() && old.Size == f.Size {
			continue
		}
		todo = append(todo, i)
	}
	return todo
}

// holdsExactly reports whether the store holds exactly files, as they are
// (todo, from toParse, is empty).
func (r *recordSync) holdsExactly(files []skillfs.Found, todo []int) bool {
	return len(todo) == 0 && len(r.records) == len(files)
}

// sync parses files[todo[j]], brings the store in step with f's files and
// returns the records of those files. A file of reparse that does not
// parse keeps no last good version. It records its steps and counts in
// pass.
func (r *recordSync) sync(ctx context.Context, f *found, todo []int, reparse map[string]bool, pass *Pass, t *time.Time) (map[string]*store.FileRecord, error) {
	files := f.scan.Files
	st := &pass.Stats
	st.Scanned = len(files)
	r.progress.set("parse", 0, len(todo))
	parsed, err := r.parseAll(ctx, files, todo)
	if err != nil {
		return nil, err
	}
	st.Parsed = len(todo)
	r.parsed += int64(len(todo))
	pass.phase("parse", t)

	var next map[string]*store.FileRecord
	switch {
	case f.restored:
		next = r.records // exactly the scan's files (checked by the caller), none to parse
	case f.partial:
		next = maps.Clone(r.records) // the same files: only records change
	default:
		next = make(map[string]*store.FileRecord, len(files))
		for _, file := range files {
			next[file.Path] = r.records[file.Path]
		}
	}
	changes := r.changes(files, todo, parsed, reparse, next, st)
	if len(changes.Put) > 0 || len(changes.Delete) > 0 {
		r.progress.set("store", 0, len(changes.Put)+len(changes.Delete))
		if !f.partial {
			// Bodies no record uses any more go on full scans; after a
			// rescan of a few folders they wait for the next one.
			keep := make(map[string]bool, len(next))
			for _, rec := range next {
				if rec.Good != nil {
					keep[rec.Good.ContentHash] = true
				}
			}
			changes.KeepBodies = keep
		}
		if err := r.db.ApplyFiles(changes); err != nil {
			return nil, fmt.Errorf("update cache: %w", err)
		}
	}
	r.records = next
	pass.phase("store", t)
	return next, nil
}

// changes puts the parsed records into next and returns the store's
// changes, counting them in st.
func (r *recordSync) changes(files []skillfs.Found, todo []int, parsed []parseResult, reparse map[string]bool, next map[string]*store.FileRecord, st *skill.ReindexStats) store.FileChanges {
	changes := store.FileChanges{Bodies: map[string]string{}}
	for j, i := range todo {
		f := files[i]
		old := r.records[f.Path]
		rec := parsed[j].record
		if old != nil && rec.Good == nil && !reparse[f.Path] {
			rec.Good = old.Good // a bad edit keeps the last good version (whose body is in the cache)
		}
		next[f.Path] = rec
		switch {
		case old != nil && old.ContentHash == rec.ContentHash:
			st.Unchanged++
		case parsed[j].ok && old == nil:
			st.Added++
		case parsed[j].ok:
			st.Changed++
		}
		if parsed[j].ok {
			changes.Bodies[rec.Good.ContentHash] = parsed[j].body
		}
		changes.Put = append(changes.Put, rec)
	}
	st.Unchanged += len(files) - len(todo)
	for p := range r.records {
		if _, ok := next[p]; !ok {
			st.Removed++
			changes.Delete = append(changes.Delete, p)
		}
	}
	for _, rec := range next {
		if skill.HasErrors(rec.Problems) {
			st.Invalid++
		}
	}
	return changes
}

type parseResult struct {
	record *store.FileRecord
	body   string
	ok     bool
}

// parseAll reads and parses files[todo[j]] in parallel.
func (r *recordSync) parseAll(ctx context.Context, files []skillfs.Found, todo []int) ([]parseResult, error) {
	out := make([]parseResult, len(todo))
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(r.workers, max(len(todo), 1)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= len(todo) || ctx.Err() != nil {
					return
				}
				out[j] = parseFound(files[todo[j]], r.limits)
				if d := done.Add(1); d%64 == 0 {
					r.progress.set("parse", int(d), len(todo))
				}
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// parseFound reads and parses one found SKILL.md into a cache record.
func parseFound(f skillfs.Found, lim skillmd.Limits) parseResult {
	rec := &store.FileRecord{Path: f.Path, ModTimeNano: f.ModTime.UnixNano(), Size: f.Size}
	data, err := skillfs.ReadSkillFile(f.Path, lim.MaxFileBytes)
	if err != nil {
		rec.Problems = []skill.Problem{{Severity: skill.SeverityError, Code: "file-unreadable", File: f.Path, Message: err.Error()}}
		return parseResult{record: rec}
	}
	rec.ContentHash = skill.Hash(data)
	p, problems := skillmd.Parse(data, filepath.Base(f.Dir), lim)
	for i := range problems {
		problems[i].File = f.Path
	}
	rec.Problems = problems
	if p == nil {
		return parseResult{record: rec}
	}
	rec.Good = &store.Version{
		Name: p.Name, FoldedName: skillmd.FoldName(p.Name), Frontmatter: p.Frontmatter, BodyLine: p.BodyLine,
		BodyTokens:  skill.EstimateTokens(p.Body),
		ContentHash: p.ContentHash, FrontmatterHash: p.FrontmatterHash,
		Size: f.Size, ModTimeNano: rec.ModTimeNano, Problems: problems,
	}
	return parseResult{record: rec, body: p.Body, ok: true}
}
