// Package loader builds index generations. A build scans the skill roots,
// parses the SKILL.md files that changed, keeps the store in step with the
// disk, resolves the catalog, embeds the skills through the store's vector
// cache and builds the match index. The result, a Generation, is immutable.
// The router serves one Generation at a time, and evaluation builds its
// Generation through the same Builder, so it measures exactly what is served.
package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"path/filepath"
	"runtime"
	"slices"

	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// Config says where skills are, how to read them and how to embed them.
type Config struct {
	Workspace string
	// Roots are the configured roots; skillfs.DefaultRoots when empty.
	Roots      []skillfs.RootSpec
	Precedence []skill.SourceKind
	Limits     skillmd.Limits
	Scan       skillfs.ScanLimits
	// Workers parse files in parallel; 0 means GOMAXPROCS.
	Workers int
	// Embedder embeds skills and tasks; nil means keyword-only matching.
	Embedder *embed.Manager
	// Tools gives the tools of connected MCP servers, indexed with the
	// skills; nil means none.
	Tools ToolSource
	// ServeLastScan makes the first build take the skill files from the
	// scan behind the index snapshot (ScanFile) instead of scanning the
	// roots, when the cache holds every one of them as that scan found it
	// (the same paths, sizes and modification times) and the roots are
	// the same: a restart then parses and embeds nothing, and reads no
	// folder, before it serves. The pass says so (Pass.Restored); the
	// caller then builds again at once, which scans the roots and catches
	// up with what changed while it was stopped.
	ServeLastScan bool
	Logger        *slog.Logger
}

// ToolSource gives a build the tools of the connected MCP servers;
// upstream.Manager is one.
type ToolSource interface {
	// Tools returns the entries of kind tool served now, with unique
	// names, and a digest that changes whenever they do. It must not
	// block on a server.
	Tools() ([]*skill.Skill, string)
	// Settled reports whether every enabled server has its tools listed.
	// While one has not (it is starting, or failing), the vectors of
	// texts the build does not use are kept in the cache: that server's
	// tools come back without being embedded again.
	Settled() bool
}

// Generation is one immutable snapshot of the skills on disk, ready to serve:
// the resolved catalog, the skills' vectors and the match index over them.
type Generation struct {
	// ContentID is the generation's content digest (hex): everything a
	// client sees of it (the skills as written, their roots and precedence,
	// registries, problems), the embedding model and the matching
	// configuration, written without host paths. Two routers serving the
	// same files and configuration have the same ContentID; any change
	// gives another. ID is a number made from it.
	ContentID string
	ID        uint64
	Catalog   *catalog.Catalog
	Index     *match.Index
	// Model is the identity of the model that embedded the skills; zero
	// when matching is keyword-only.
	Model embed.Identity

	vectors map[*skill.Skill][]float32 // by winning skill; nil when keyword-only
	space   vectorSpace                // what made vectors
	digest  string                     // fingerprint of the catalog input, host paths included
	db      *store.DB
	// scan is the scan behind the catalog, of scanRoots; the snapshot
	// writer saves it with the index (ScanFile).
	scan      *skillfs.ScanResult
	scanRoots []skill.Root
}

// Body returns a skill's SKILL.md body from the store. ok is false when the
// body is gone (a newer generation replaced it): ask again.
func (g *Generation) Body(s *skill.Skill) (body string, ok bool, err error) {
	return g.db.Body(s.ContentHash)
}

// Pass describes one build.
type Pass struct {
	Stats skill.ReindexStats
	// Dirs lists every folder the scan visited, for a watcher.
	Dirs []string
	// DocumentsCached and DocumentsEmbedded count the skill texts whose
	// vectors came from the cache (or an earlier generation) and those
	// computed in this pass.
	DocumentsCached, DocumentsEmbedded int
	// Analyzed counts the skills the match index analyzed in this pass;
	// Reused those whose analysis came from the previous generation or
	// the snapshot.
	Analyzed, Reused int
	// Phases are the durations of the pass's steps, in order.
	Phases []Phase
	// Partial is set when only the skill folders named by file events
	// were scanned again.
	Partial bool
	// FoldersReused counts the folders a full scan did not read, since
	// their listings from the last full scan still held.
	FoldersReused int
	// Restored is set when the skill files came from the scan behind the
	// index snapshot, not from the roots (Config.ServeLastScan).
	Restored bool
}

// Phase is one step of a build and its duration.
type Phase struct {
	Name     string
	Duration time.Duration
}

// phase records the step that ends now, begun at *start, and restarts the
// clock.
func (p *Pass) phase(name string, start *time.Time) {
	now := time.Now()
	p.Phases = append(p.Phases, Phase{name, now.Sub(*start)})
	*start = now
}

// Builder turns the skill folders into generations. It keeps the store in
// step with the disk: unchanged files (same size and modification time) are
// never read again, changed ones are parsed again, deleted ones dropped. One
// build runs at a time.
type Builder struct {
	cfg       Config
	db        *store.DB
	log       *slog.Logger
	workspace string // absolute

	mu            sync.Mutex // serialises builds; guards the fields below
	records       map[string]*store.FileRecord
	registries    map[string]map[string]skill.RegistryEntry // root -> last good registry
	restored      bool                                      // the index snapshot was tried
	loading       chan struct{}                             // closed once the cached records are read
	recordsErr    error
	checkBodies   func()              // starts the check of the cached bodies once the records are read
	checking      chan struct{}       // closed once the cached bodies are checked; nil after the first build
	bodiless      []*store.FileRecord // records whose cached body is missing or damaged
	bodilessErr   error
	reparse       map[string]bool     // SKILL.md paths the next pass parses whatever their stamps
	lastScan      *skillfs.ScanResult // the last scan, for rescans of changed skill folders
	lastRoots     []skill.Root
	scanIdx       map[string]int          // skill folder -> its index in lastScan.Files
	memo          map[string]*skillMemo   // SKILL.md path -> the skill built from it, for reuse
	lastMemoFiles []skillfs.Found         // the scan files memo was made for
	dirMemo       []*skillMemo            // memo of lastMemoFiles' paths, in folder order
	dirPos        []int                   // by index in lastMemoFiles: its place in dirMemo
	cids          map[*skill.Skill][]byte // per-skill content digests of the served generation

	parsedTotal atomic.Int64
	progress    atomic.Pointer[skill.Progress]
	snapshots   snapshotWriter
	listings    listingsFile
	lastScans   lastScanFile
}

// NewBuilder returns a builder over db; it starts reading the cached records
// and the index snapshot, which the first build waits for.
func NewBuilder(cfg Config, db *store.DB) (*Builder, error) {
	if cfg.Limits == (skillmd.Limits{}) {
		cfg.Limits = skillmd.DefaultLimits
	}
	if cfg.Scan == (skillfs.ScanLimits{}) {
		cfg.Scan = skillfs.DefaultScanLimits
	}
	if len(cfg.Roots) == 0 {
		cfg.Roots = skillfs.DefaultRoots()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Builder{cfg: cfg, db: db, log: cfg.Logger, registries: make(map[string]map[string]skill.RegistryEntry)}
	var err error
	if b.workspace, err = filepath.Abs(cfg.Workspace); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", cfg.Workspace, err)
	}
	b.snapshots.path = filepath.Join(filepath.Dir(db.Path()), SnapshotFile)
	b.snapshots.log = cfg.Logger
	b.listings.path = filepath.Join(filepath.Dir(db.Path()), ListingsFile)
	b.listings.log = cfg.Logger
	b.lastScans.path = filepath.Join(filepath.Dir(db.Path()), ScanFile)
	b.lastScans.log = cfg.Logger
	b.snapshots.lastScans = &b.lastScans
	if cfg.ServeLastScan {
		b.lastScans.startLoad(cfg.Workspace, cfg.Roots)
	}
	removeLeftovers(filepath.Dir(db.Path()), cfg.Logger)
	b.progress.Store(&skill.Progress{})
	// The cached records and the index snapshot are read while the first
	// build scans the roots, and the cached bodies are checked after the
	// records, while that build makes its catalog: it waits for that only
	// before it uses a body. A first build that serves the last scan
	// (ServeLastScan) does not wait for the check, nor share the CPUs with
	// it: the check starts with the next build, which uses its findings.
	// Such a build needs the snapshot last, after its catalog: the
	// snapshot is read once the last scan is, so that on few cores it
	// does not slow the reading of the scan and the records the catalog
	// is made of (docs/benchmarks.md, "Less on a start's critical path").
	b.loading, b.checking = make(chan struct{}), make(chan struct{})
	check := make(chan struct{})
	b.checkBodies = sync.OnceFunc(func() { close(check) })
	if !cfg.ServeLastScan {
		b.checkBodies()
	}
	go func() {
		defer close(b.checking)
		recs, err := db.Files()
		b.records, b.recordsErr = recs, err
		close(b.loading)
		<-check
		if err == nil {
			b.bodiless, b.bodilessErr = db.MissingBodies(recs)
		}
	}()
	b.snapshots.startLoad(b.lastScans.loaded)
	return b, nil
}

// waitRecords waits for the cached records NewBuilder started to read.
func (b *Builder) waitRecords() error {
	<-b.loading
	return b.recordsErr
}

// takeBodiless waits for the check of the cached bodies NewBuilder started,
// the first time it is called, and returns the records it found without a
// body that are still the builder's; later calls return nothing.
func (b *Builder) takeBodiless() ([]*store.FileRecord, error) {
	if b.checking == nil {
		return nil, nil
	}
	<-b.checking
	found, err := b.bodiless, b.bodilessErr
	b.checking, b.bodiless, b.bodilessErr = nil, nil, nil
	var current []*store.FileRecord
	for _, r := range found {
		if b.records[r.Path] == r {
			current = append(current, r)
		}
	}
	return current, err
}

// Flush waits until the last generation's index snapshot and the last full
// scan's folder listings are written.
func (b *Builder) Flush() {
	b.snapshots.flush()
	b.listings.wait()
}

// Config returns the builder's configuration, defaults filled.
func (b *Builder) Config() Config { return b.cfg }

// ParsedTotal returns how many files were parsed since the builder started.
func (b *Builder) ParsedTotal() int64 { return b.parsedTotal.Load() }

// Progress returns the state of the running build, if any.
func (b *Builder) Progress() skill.Progress { return *b.progress.Load() }

// VectorCount returns how many vectors the store caches for a model.
func (b *Builder) VectorCount(fingerprint string) (int, error) { return b.db.VectorCount(fingerprint) }

// Build brings the store in step with the disk and returns the generation
// that reflects it, with the match index built under matchCfg (the model's
// cosine threshold applied unless matchCfg sets one). With full, every file
// is read and parsed again. When nothing changed since prev (nil for the
// first build) it returns prev and Pass.Stats.Published is false. On error
// the store keeps what was written before the error, and prev stays valid.
//
// The index is updated from prev's (or, on the first build, from the
// snapshot the last run left in the state folder): only skills that changed
// are analyzed and embedded. Each new generation's index is saved to that
// snapshot in the background.
func (b *Builder) Build(ctx context.Context, prev *Generation, full bool, matchCfg match.Config) (*Generation, Pass, error) {
	return b.build(ctx, prev, full, nil, matchCfg)
}

// BuildChanged is Build after file events: changed are the paths the events
// named. When every one lies in a skill folder the last scan found, only
// those folders are scanned again; otherwise (a new or removed folder, a
// registry, lost events: changed nil) every root is scanned, as by Build.
func (b *Builder) BuildChanged(ctx context.Context, prev *Generation, changed []string, matchCfg match.Config) (*Generation, Pass, error) {
	if changed == nil {
		return b.build(ctx, prev, false, nil, matchCfg)
	}
	return b.build(ctx, prev, false, changed, matchCfg)
}

func (b *Builder) build(ctx context.Context, prev *Generation, full bool, changed []string, matchCfg match.Config) (*Generation, Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	defer b.progress.Store(&skill.Progress{})

	cat, digest, pass, err := b.refreshCatalog(ctx, prev, full, changed)
	if err != nil {
		return nil, pass, err
	}
	// Before any body is used: a file whose cached body is missing or
	// damaged is parsed again, which stores its body again. A pass that
	// serves the last scan leaves that to the build after it: until then,
	// a damaged body is not served (Generation.Body), and a skill whose
	// analysis needed it is analyzed again then.
	var bodiless []*store.FileRecord
	if !pass.Restored {
		if bodiless, err = b.takeBodiless(); err != nil {
			return nil, pass, err
		}
	}
	if len(bodiless) > 0 {
		b.log.Warn("cached bodies missing or damaged; parsing their files again", "files", len(bodiless))
		b.reparse = map[string]bool{}
		for _, r := range bodiless {
			b.reparse[r.Path] = true
		}
		first := pass
		cat, digest, pass, err = b.refreshCatalog(ctx, prev, full, changed)
		b.reparse = nil
		if err != nil {
			return nil, pass, err
		}
		pass.Phases = append(first.Phases, pass.Phases...)
		pass.Stats = afterSecondPass(first.Stats, pass.Stats)
	}
	// The snapshot is read while refreshCatalog scans: wait for it only now.
	var base *match.Index
	var baseSpace vectorSpace
	if prev != nil {
		base, baseSpace = prev.Index, prev.space
	} else if !b.restored {
		b.restored = true
		t := time.Now()
		base, baseSpace = b.snapshots.load()
		pass.phase("snapshot", &t)
	}
	t := time.Now()
	b.setProgress("embed", 0, len(cat.Winners()))
	vectors, space, err := b.vectors(ctx, prev, base, baseSpace, cat, &pass)
	if err != nil {
		return nil, pass, err
	}
	model := space.model
	pass.phase("embed", &t)
	if prev != nil && cat == prev.Catalog && sameVectors(prev, vectors, space) {
		pass.Stats.Generation = prev.ID
		pass.Stats.Duration = time.Since(start)
		return prev, pass, nil
	}
	b.setProgress("index", 0, len(cat.Winners()))
	g := &Generation{Catalog: cat, Model: model, space: space, vectors: vectors, digest: digest, db: b.db,
		scan: b.lastScan, scanRoots: b.lastRoots}
	cfg := b.modelConfig(matchCfg, g)
	if b.cids == nil || !pass.Partial {
		b.cids = make(map[*skill.Skill][]byte, len(cat.Entries())) // a full scan drops the digests of skills gone
	}
	g.ContentID, g.ID = contentID(cat, model, vectors != nil, cfg, b.workspace, b.cids)
	if pass.Restored {
		b.snapshots.scanWritten(g.ContentID)
	}
	pass.phase("identity", &t)
	var us match.UpdateStats
	if g.Index, us, err = b.buildIndex(ctx, base, g, cfg); err != nil {
		return nil, pass, err
	}
	g.vectors = heldVectors(g.vectors, g.Index)
	pass.phase("index", &t)
	pass.Analyzed, pass.Reused = us.Changed+us.Added, us.Kept
	b.snapshots.save(g)
	pass.Stats.Generation = g.ID
	pass.Stats.Published = true
	pass.Stats.Duration = time.Since(start)
	return g, pass, nil
}

// afterSecondPass is what two catalog passes in a row did, from the stats of
// each: the files the first added or changed are unchanged for the second.
func afterSecondPass(first, second skill.ReindexStats) skill.ReindexStats {
	second.Added += first.Added
	second.Changed += first.Changed
	second.Removed += first.Removed
	second.Unchanged -= first.Added + first.Changed
	second.Parsed += first.Parsed
	return second
}

// WithMatchConfig returns a generation serving g's catalog and vectors under
// another match configuration: over g's index data when only query-time
// settings changed, else over an updated index.
func (b *Builder) WithMatchConfig(ctx context.Context, g *Generation, cfg match.Config) (*Generation, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := *g
	cfg = b.modelConfig(cfg, g)
	if b.cids == nil {
		b.cids = map[*skill.Skill][]byte{}
	}
	next.ContentID, next.ID = contentID(g.Catalog, g.Model, g.vectors != nil, cfg, b.workspace, b.cids)
	var err error
	if next.Index, err = g.Index.WithConfig(cfg); err != nil {
		if next.Index, _, err = b.buildIndex(ctx, g.Index, &next, cfg); err != nil {
			return nil, err
		}
	}
	next.vectors = heldVectors(next.vectors, next.Index)
	b.snapshots.save(&next)
	return &next, nil
}

// refreshCatalog scans, parses what changed, updates the store and returns
// the catalog: prev's when its input did not change.
func (b *Builder) refreshCatalog(ctx context.Context, prev *Generation, full bool, changed []string) (*catalog.Catalog, string, Pass, error) {
	var pass Pass
	t := time.Now()
	b.setProgress("scan", 0, 0)
	roots, err := skillfs.ExpandRoots(b.cfg.Workspace, b.cfg.Roots)
	if err != nil {
		return nil, "", pass, err
	}
	var scan skillfs.ScanResult
	restored := prev == nil && !full && changed == nil && b.reparse == nil
	if last := b.lastScans.take(roots); restored && last != nil {
		scan = *last
	} else {
		restored = false
		scan, pass.Partial, pass.FoldersReused = b.scan(roots, changed, prev != nil && !full)
	}
	pass.phase("scan", &t)
	if err := b.waitRecords(); err != nil {
		return nil, "", pass, err
	}
	pass.phase("records", &t)
	if err := ctx.Err(); err != nil {
		return nil, "", pass, err
	}
	todo := b.toParse(scan.Files, full)
	if restored && (len(todo) > 0 || len(b.records) != len(scan.Files)) {
		b.log.Info("the cache does not hold the skill files of the last scan as it found them; scanning the roots",
			"files", len(scan.Files), "cached", len(b.records), "to_parse", len(todo))
		restored = false
		scan, pass.Partial, pass.FoldersReused = b.scan(roots, changed, false)
		todo = b.toParse(scan.Files, full)
		pass.phase("scan", &t)
	}
	if restored {
		b.setScan(&scan, roots)
	} else {
		b.checkBodies()
	}
	partial := pass.Partial
	pass.Dirs, pass.Restored = scan.Dirs, restored

	st := &pass.Stats
	st.Scanned = len(scan.Files)

	b.setProgress("parse", 0, len(todo))
	parsed, err := b.parseAll(ctx, scan.Files, todo)
	if err != nil {
		return nil, "", pass, err
	}
	st.Parsed = len(todo)
	b.parsedTotal.Add(int64(len(todo)))
	pass.phase("parse", &t)

	changes := store.FileChanges{Bodies: map[string]string{}}
	var next map[string]*store.FileRecord
	switch {
	case restored:
		next = b.records // exactly the scan's files (checked above), none to parse
	case partial:
		next = maps.Clone(b.records) // the same files: only records change
	default:
		next = make(map[string]*store.FileRecord, len(scan.Files))
		for _, f := range scan.Files {
			next[f.Path] = b.records[f.Path]
		}
	}
	for j, i := range todo {
		f := scan.Files[i]
		old := b.records[f.Path]
		rec := parsed[j].record
		if old != nil && rec.Good == nil && !b.reparse[f.Path] {
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
	st.Unchanged += len(scan.Files) - len(todo)
	for p := range b.records {
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

	if len(changes.Put) > 0 || len(changes.Delete) > 0 {
		b.setProgress("store", 0, len(changes.Put)+len(changes.Delete))
		if !partial {
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
		if err := b.db.ApplyFiles(changes); err != nil {
			return nil, "", pass, fmt.Errorf("update cache: %w", err)
		}
	}
	b.records = next
	pass.phase("store", &t)

	in, digest := b.catalogInput(roots, scan, next)
	if b.cfg.Tools != nil {
		in.Tools, _ = b.cfg.Tools.Tools()
		if len(in.Tools) > 0 {
			digest = toolsDigest(digest, in.Tools)
		}
	}
	st.FinishedAt = time.Now()
	if prev != nil && digest == prev.digest {
		return prev.Catalog, digest, pass, nil
	}
	cat := catalog.New(in)
	pass.phase("catalog", &t)
	return cat, digest, pass, nil
}

// toParse returns the indexes of the files to parse: every one with full,
// else those the cache does not hold at their size and modification time,
// and those marked for parsing again.
func (b *Builder) toParse(files []skillfs.Found, full bool) []int {
	var todo []int
	for i, f := range files {
		old := b.records[f.Path]
		if !full && old != nil && !b.reparse[f.Path] && old.ModTimeNano == f.ModTime.UnixNano() && old.Size == f.Size {
			continue
		}
		todo = append(todo, i)
	}
	return todo
}

// scan returns the skill files of the roots: the last scan with the skill
// folders of changed scanned again when that is enough (partial is then
// set), else a scan of every root, given the last full scan's folder
// listings; reused counts the folders it took from them.
func (b *Builder) scan(roots []skill.Root, changed []string, incremental bool) (res skillfs.ScanResult, partial bool, reused int) {
	if incremental && changed != nil && b.lastScan != nil && slices.Equal(roots, b.lastRoots) {
		if res, ok := b.rescan(changed); ok {
			return res, true, 0
		}
	}
	known := b.listings.load()
	res = skillfs.Scan(roots, b.cfg.Scan, known)
	b.listings.save(res.Listings, known)
	reused = res.Listings.Reused()
	res.Listings = nil // on disk only: the next full scan reads them there
	b.setScan(&res, roots)
	return res, false, reused
}

// setScan makes res the last scan, the base of rescans.
func (b *Builder) setScan(res *skillfs.ScanResult, roots []skill.Root) {
	b.lastScan, b.lastRoots = res, roots
	b.scanIdx = make(map[string]int, len(res.Files))
	for i, f := range res.Files {
		b.scanIdx[f.Dir] = i
	}
}

// rescan scans again the skill folders that hold the changed paths (a
// folder itself, or a file directly in it). ok is false when a path lies
// elsewhere, or a folder no longer holds a skill as the last scan found it.
func (b *Builder) rescan(changed []string) (skillfs.ScanResult, bool) {
	idx := map[int]bool{}
	for _, p := range changed {
		i, ok := b.scanIdx[p]
		if !ok {
			i, ok = b.scanIdx[filepath.Dir(p)]
		}
		if !ok {
			return skillfs.ScanResult{}, false
		}
		idx[i] = true
	}
	files := slices.Clone(b.lastScan.Files)
	for i := range idx {
		f, ok := skillfs.ScanSkillDir(files[i].Root, files[i].Dir, b.cfg.Scan)
		if !ok || f.Path != files[i].Path {
			return skillfs.ScanResult{}, false
		}
		files[i] = f
	}
	res := skillfs.ScanResult{Files: files, Dirs: b.lastScan.Dirs, Problems: b.lastScan.Problems}
	b.lastScan = &res
	return res, true
}

func (b *Builder) setProgress(phase string, done, total int) {
	b.progress.Store(&skill.Progress{Running: true, Phase: phase, Done: done, Total: total})
}

type parseResult struct {
	record *store.FileRecord
	body   string
	ok     bool
}

// parseAll reads and parses files[todo[j]] in parallel.
func (b *Builder) parseAll(ctx context.Context, files []skillfs.Found, todo []int) ([]parseResult, error) {
	out := make([]parseResult, len(todo))
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(b.cfg.Workers, max(len(todo), 1)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= len(todo) || ctx.Err() != nil {
					return
				}
				out[j] = parseFound(files[todo[j]], b.cfg.Limits)
				if d := done.Add(1); d%64 == 0 {
					b.setProgress("parse", int(d), len(todo))
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
		Name: p.Name, Frontmatter: p.Frontmatter, BodyLine: p.BodyLine,
		BodyTokens:  skill.EstimateTokens(p.Body),
		ContentHash: p.ContentHash, FrontmatterHash: p.FrontmatterHash,
		Size: f.Size, ModTimeNano: rec.ModTimeNano, Problems: problems,
	}
	return parseResult{record: rec, body: p.Body, ok: true}
}

// skillMemo is the skill built from one SKILL.md path, and what it was
// built from: the next build reuses it (the same pointer) when all of that
// is unchanged.
type skillMemo struct {
	rec      *store.FileRecord
	hasReg   bool
	key      string // the folded name
	skill    *skill.Skill
	stale    *skill.Problem // the serving-last-good warning, when any
	digestIn []byte         // the skill's part of digestInput
}

// same reports whether m was built from rec, f and the registry entry e
// (hasReg: there is one). The skill it built holds what it took from f and
// e.
func (m *skillMemo) same(rec *store.FileRecord, f skillfs.Found, e skill.RegistryEntry, hasReg bool) bool {
	s, r := m.skill, m.skill.Registry
	return m.rec == rec && s.Root == f.Root && s.Dir == f.Dir && s.RelPath == f.RelPath &&
		s.ResourcesTruncated == f.ResourcesTruncated && slices.Equal(s.Resources, f.Resources) &&
		m.hasReg == hasReg && (!hasReg || r.Owner == e.Owner && r.Source == e.Source && slices.Equal(r.Tags, e.Tags) &&
		((r.Enabled == nil) == (e.Enabled == nil)) && (e.Enabled == nil || *r.Enabled == *e.Enabled))
}

// sameFiles reports whether two scans found the same SKILL.md paths.
func sameFiles(a, b []skillfs.Found) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) > 0 && &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if a[i].Path != b[i].Path {
			return false
		}
	}
	return true
}

// catalogInput assembles skills from the good versions, the scan's resource
// listings and the registries, and fingerprints it all (digestInput). A
// skill whose record, listing and registry entry did not change since the
// last build is the same *skill.Skill as then.
func (b *Builder) catalogInput(roots []skill.Root, scan skillfs.ScanResult, recs map[string]*store.FileRecord) (catalog.Input, string) {
	in := catalog.Input{Precedence: b.cfg.Precedence, Files: len(scan.Files)}
	var other []skill.Problem // problems no skill's digest covers
	in.Problems = append(in.Problems, scan.Problems...)
	other = append(other, scan.Problems...)

	registries := make(map[string]map[string]skill.RegistryEntry, len(roots))
	for _, r := range roots {
		entries, ok, problems := skillfs.ReadRegistry(r.Path)
		in.Problems = append(in.Problems, problems...)
		other = append(other, problems...)
		if !ok {
			entries = b.registries[r.Path] // keep the last good one
		}
		registries[r.Path] = entries
	}
	b.registries = registries

	if b.memo == nil || !sameFiles(b.lastMemoFiles, scan.Files) {
		// Another set of files: start a new memo (reusing entries) and
		// a new folder order.
		old := b.memo
		b.memo = make(map[string]*skillMemo, len(scan.Files))
		for _, f := range scan.Files {
			if m, ok := old[f.Path]; ok {
				b.memo[f.Path] = m
			}
		}
		order := make([]int, len(scan.Files))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, c int) int { return strings.Compare(scan.Files[a].Dir, scan.Files[c].Dir) })
		b.dirMemo = make([]*skillMemo, len(order))
		b.dirPos = make([]int, len(order))
		for i, k := range order {
			b.dirPos[k] = i
			b.dirMemo[i] = b.memo[scan.Files[k].Path]
		}
	}
	b.lastMemoFiles = scan.Files
	memo := b.memo
	fresh := b.freshMemos(scan.Files, recs, registries)
	used := make(map[string]map[string]bool)
	for i, f := range scan.Files {
		rec := recs[f.Path]
		in.Problems = append(in.Problems, rec.Problems...)
		if rec.Good == nil {
			in.Invalid++
			other = append(other, rec.Problems...)
			if _, ok := memo[f.Path]; ok {
				delete(memo, f.Path)
				b.dirMemo[b.dirPos[i]] = nil
			}
			continue
		}
		m := memo[f.Path] // made from this record, unless a fresh one is
		if fresh[i] != nil {
			m = fresh[i]
		}
		if m.hasReg {
			if used[f.Root.Path] == nil {
				used[f.Root.Path] = map[string]bool{}
			}
			used[f.Root.Path][m.key] = true
		}
		if memo[f.Path] != m {
			memo[f.Path] = m
			b.dirMemo[b.dirPos[i]] = m
		}
		if m.stale != nil {
			in.Problems = append(in.Problems, *m.stale)
		}
		in.Skills = append(in.Skills, m.skill)
	}
	for root, entries := range registries {
		for key, e := range entries {
			if !used[root][key] {
				p := skill.Problem{
					Severity: skill.SeverityWarning, Code: "registry-unknown-skill", File: e.Source,
					Message: fmt.Sprintf("registry names %q, but no skill of that name is in this root", key),
				}
				in.Problems = append(in.Problems, p)
				other = append(other, p)
			}
		}
	}
	skill.SortProblems(in.Problems)
	skill.SortProblems(other)

	// digestInput: every skill's part, in folder order, then the counts
	// and the problems no skill carries.
	h := sha256.New()
	for _, m := range b.dirMemo {
		if m != nil {
			h.Write(m.digestIn)
		}
	}
	_ = json.NewEncoder(h).Encode([]any{in.Files, in.Invalid, other})
	return in, hex.EncodeToString(h.Sum(nil))
}

// partMin is the fewest items inParts gives each of its goroutines.
var partMin = 1024

// inParts calls part on up to GOMAXPROCS goroutines, with consecutive
// ranges [lo, hi) that cover [0, n), each of at least partMin items but
// the only one, and returns when every call has.
func inParts(n int, part func(lo, hi int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), n/partMin))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { part(w*n/workers, (w+1)*n/workers) })
	}
	wg.Wait()
}

// freshMemos returns, by index in files, the memo of each valid file whose
// memo in b.memo is missing or was made from another record, listing or
// registry entry (nil for the others): its skill and its input digest. They
// are made on up to GOMAXPROCS goroutines, each with its own digester: at a
// restart that is every skill. It only reads b.memo, recs and registries.
func (b *Builder) freshMemos(files []skillfs.Found, recs map[string]*store.FileRecord, registries map[string]map[string]skill.RegistryEntry) []*skillMemo {
	fresh := make([]*skillMemo, len(files))
	inParts(len(files), func(lo, hi int) {
		var digests digester // one buffer for every skill's input digest
		for i := lo; i < hi; i++ {
			f := &files[i]
			rec := recs[f.Path]
			if rec.Good == nil {
				continue
			}
			g, m := rec.Good, b.memo[f.Path]
			var key string
			if m != nil && m.rec == rec {
				key = m.key
			} else {
				key = skillmd.FoldName(g.Name)
			}
			e, hasReg := registries[f.Root.Path][key]
			if hasReg {
				e.Source = path.Join(f.Root.Display, skillfs.RegistryFile)
			}
			if m != nil && m.same(rec, *f, e, hasReg) {
				continue
			}
			m = &skillMemo{rec: rec, hasReg: hasReg, key: key}
			s := &skill.Skill{
				Name: g.Name, Dir: f.Dir, RelPath: f.RelPath, Root: f.Root,
				Frontmatter: g.Frontmatter, BodyLine: g.BodyLine, BodyTokens: g.BodyTokens,
				ContentHash: g.ContentHash, FrontmatterHash: g.FrontmatterHash,
				Size: g.Size, ModTime: time.Unix(0, g.ModTimeNano),
				Resources: f.Resources, ResourcesTruncated: f.ResourcesTruncated,
				Problems: rec.Problems,
			}
			if g.ContentHash != rec.ContentHash {
				s.Problems = append(append([]skill.Problem(nil), rec.Problems...), skill.Problem{
					Severity: skill.SeverityWarning, Code: "serving-last-good", File: f.Path,
					Message: fmt.Sprintf("the file has errors; serving the last version that parsed (sha256 %.12s)", g.ContentHash),
				})
				m.stale = &s.Problems[len(s.Problems)-1]
			}
			if hasReg {
				s.Registry = e
			}
			m.skill = s
			m.digestIn = digests.input(s)
			fresh[i] = m
		}
	})
	return fresh
}

// toolsDigest extends a catalog input's digest with the tools of MCP
// servers: what the catalog and the index take from each.
func toolsDigest(digest string, tools []*skill.Skill) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(digest)
	for _, t := range tools {
		_ = enc.Encode([]any{t.Name, t.ContentHash, t.Tool.Trusted, t.Tool.Agents})
	}
	return hex.EncodeToString(h.Sum(nil))
}
