package loader

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
)

// Config says where skills are and how to read them.
type Config struct {
	Workspace  string
	Roots      []RootSpec // DefaultRoots when empty
	Precedence []skill.SourceKind
	Limits     Limits
	Scan       ScanLimits
	// Workers parse files in parallel; 0 means GOMAXPROCS.
	Workers int
}

// Stats describe one reindex pass.
type Stats struct {
	Scanned, Added, Changed, Removed, Unchanged, Invalid int
	// Parsed counts files read and parsed in this pass; a warm restart
	// parses none.
	Parsed int
	// Embedded counts embeddings computed in this pass (filled in by the
	// engine); a restart with unchanged skills computes none.
	Embedded   int
	Duration   time.Duration
	Generation uint64
	FinishedAt time.Time
	// Published is false when nothing changed and the previous catalog
	// was kept.
	Published bool
}

// Progress is a snapshot of a running reindex.
type Progress struct {
	Running     bool
	Phase       string
	Done, Total int
}

// Indexer turns the skill folders into catalogs. It keeps the store in step
// with the disk: unchanged files (same size and modification time) are never
// read again, changed ones are re-parsed, deleted ones dropped. One reindex
// runs at a time.
type Indexer struct {
	cfg   Config
	db    *store.DB
	log   *slog.Logger
	mu    sync.Mutex // serialises Reindex
	state struct {
		records    map[string]*store.FileRecord
		registries map[string]map[string]skill.RegistryEntry // root -> last good registry
		current    *Catalog
		digest     string
		generation uint64
	}
	parsedTotal atomic.Int64
	progress    atomic.Pointer[Progress]
}

// NewIndexer loads the cached records from db.
func NewIndexer(cfg Config, db *store.DB, log *slog.Logger) (*Indexer, error) {
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	if cfg.Scan == (ScanLimits{}) {
		cfg.Scan = DefaultScanLimits
	}
	if len(cfg.Roots) == 0 {
		cfg.Roots = DefaultRoots()
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ix := &Indexer{cfg: cfg, db: db, log: log}
	recs, err := db.Files()
	if err != nil {
		return nil, err
	}
	gen, err := db.Generation()
	if err != nil {
		return nil, fmt.Errorf("read generation: %w", err)
	}
	ix.state.records = recs
	ix.state.registries = make(map[string]map[string]skill.RegistryEntry)
	ix.state.generation = gen
	ix.progress.Store(&Progress{})
	return ix, nil
}

// ParsedTotal returns how many files were parsed since the indexer started.
func (ix *Indexer) ParsedTotal() int64 { return ix.parsedTotal.Load() }

// Progress returns the state of the running reindex, if any.
func (ix *Indexer) Progress() Progress { return *ix.progress.Load() }

// Current returns the last published catalog, nil before the first reindex.
func (ix *Indexer) Current() *Catalog {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.state.current
}

// Roots expands the configured roots as they are on disk now.
func (ix *Indexer) Roots() ([]skill.Root, error) {
	return ExpandRoots(ix.cfg.Workspace, ix.cfg.Roots)
}

// Reindex scans the roots and returns the catalog that reflects the disk. With
// full, every file is read and parsed again. When nothing changed it returns
// the current catalog and Stats.Published is false. The returned ScanResult
// lists the folders visited, for watching.
func (ix *Indexer) Reindex(ctx context.Context, full bool) (*Catalog, Stats, ScanResult, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	start := time.Now()
	defer ix.progress.Store(&Progress{})
	ix.setProgress("scan", 0, 0)

	roots, err := ix.Roots()
	if err != nil {
		return nil, Stats{}, ScanResult{}, err
	}
	scan := Scan(roots, ix.cfg.Scan)
	if err := ctx.Err(); err != nil {
		return nil, Stats{}, scan, err
	}

	st := Stats{Scanned: len(scan.Files)}
	records := ix.state.records
	todo := make([]int, 0)
	for i, f := range scan.Files {
		old := records[f.Path]
		if !full && old != nil && old.ModTimeNano == f.ModTime.UnixNano() && old.Size == f.Size {
			continue
		}
		todo = append(todo, i)
	}

	ix.setProgress("parse", 0, len(todo))
	parsed, err := ix.parseAll(ctx, scan.Files, todo)
	if err != nil {
		return nil, Stats{}, scan, err
	}
	st.Parsed = len(todo)
	ix.parsedTotal.Add(int64(len(todo)))

	changes := store.FileChanges{Bodies: map[string]string{}}
	next := make(map[string]*store.FileRecord, len(scan.Files))
	for _, f := range scan.Files {
		next[f.Path] = records[f.Path]
	}
	for j, i := range todo {
		f := scan.Files[i]
		old := records[f.Path]
		rec, body := parsed[j].record, parsed[j].body
		if old != nil && rec.Good == nil {
			rec.Good = old.Good // a bad edit keeps the last good version
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
			changes.Bodies[rec.Good.ContentHash] = body
		}
		changes.Put = append(changes.Put, rec)
	}
	st.Unchanged += len(scan.Files) - len(todo)
	for p := range records {
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
		ix.setProgress("store", 0, len(changes.Put)+len(changes.Delete))
		keep := make(map[string]bool, len(next))
		for _, rec := range next {
			if rec.Good != nil {
				keep[rec.Good.ContentHash] = true
			}
		}
		changes.KeepBodies = keep
		if err := ix.db.ApplyFiles(changes); err != nil {
			return nil, Stats{}, scan, fmt.Errorf("update cache: %w", err)
		}
	}
	ix.state.records = next

	ix.setProgress("index", 0, len(scan.Files))
	in := ix.catalogInput(roots, scan, next)
	digest := digestInput(in)
	st.Duration = time.Since(start)
	st.FinishedAt = time.Now()
	if ix.state.current != nil && digest == ix.state.digest {
		st.Generation = ix.state.generation
		return ix.state.current, st, scan, nil
	}
	ix.state.generation++
	if err := ix.db.SetGeneration(ix.state.generation); err != nil {
		return nil, Stats{}, scan, fmt.Errorf("store generation: %w", err)
	}
	in.Generation = ix.state.generation
	cat := NewCatalog(in)
	ix.state.current, ix.state.digest = cat, digest
	st.Generation, st.Published = cat.Generation, true
	st.Duration = time.Since(start)
	return cat, st, scan, nil
}

func (ix *Indexer) setProgress(phase string, done, total int) {
	ix.progress.Store(&Progress{Running: true, Phase: phase, Done: done, Total: total})
}

type parseResult struct {
	record *store.FileRecord
	body   string
	ok     bool
}

// parseAll reads and parses scan.Files[todo[j]] in parallel.
func (ix *Indexer) parseAll(ctx context.Context, files []Found, todo []int) ([]parseResult, error) {
	out := make([]parseResult, len(todo))
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range min(ix.cfg.Workers, max(len(todo), 1)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1) - 1)
				if j >= len(todo) || ctx.Err() != nil {
					return
				}
				out[j] = parseFound(files[todo[j]], ix.cfg.Limits)
				d := done.Add(1)
				if d%64 == 0 {
					ix.setProgress("parse", int(d), len(todo))
				}
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// parseFound reads and parses one found SKILL.md into a cache record.
func parseFound(f Found, lim Limits) parseResult {
	rec := &store.FileRecord{Path: f.Path, ModTimeNano: f.ModTime.UnixNano(), Size: f.Size}
	data, err := readLimited(f.Path, lim.MaxFileBytes)
	if err != nil {
		rec.Problems = []skill.Problem{{Severity: skill.SeverityError, Code: "file-unreadable", File: f.Path, Message: err.Error()}}
		return parseResult{record: rec}
	}
	sum := sha256.Sum256(data)
	rec.ContentHash = hex.EncodeToString(sum[:])
	p, problems := Parse(data, filepath.Base(f.Dir), lim)
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

// readLimited reads at most max+1 bytes of a regular file, without blocking
// on FIFOs or devices swapped in after the scan.
func readLimited(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return data, nil
}

// catalogInput assembles skills from the good versions, the scan's resource
// listings and the registries.
func (ix *Indexer) catalogInput(roots []skill.Root, scan ScanResult, recs map[string]*store.FileRecord) CatalogInput {
	in := CatalogInput{Precedence: ix.cfg.Precedence, Files: len(scan.Files)}
	in.Problems = append(in.Problems, scan.Problems...)

	registries := make(map[string]map[string]skill.RegistryEntry, len(roots))
	for _, r := range roots {
		entries, ok, problems := ReadRegistry(r.Path)
		in.Problems = append(in.Problems, problems...)
		if !ok {
			entries = ix.state.registries[r.Path] // keep the last good one
		}
		registries[r.Path] = entries
	}
	ix.state.registries = registries

	used := make(map[string]map[string]bool)
	for _, f := range scan.Files {
		rec := recs[f.Path]
		in.Problems = append(in.Problems, rec.Problems...)
		if rec.Good == nil {
			in.Invalid++
			continue
		}
		g := rec.Good
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
			in.Problems = append(in.Problems, s.Problems[len(s.Problems)-1])
		}
		key := FoldName(s.Name)
		if e, ok := registries[f.Root.Path][key]; ok {
			e.Source = path.Join(f.Root.Display, RegistryFile)
			s.Registry = e
			if used[f.Root.Path] == nil {
				used[f.Root.Path] = map[string]bool{}
			}
			used[f.Root.Path][key] = true
		}
		in.Skills = append(in.Skills, s)
	}
	for root, entries := range registries {
		for key, e := range entries {
			if !used[root][key] {
				in.Problems = append(in.Problems, skill.Problem{
					Severity: skill.SeverityWarning, Code: "registry-unknown-skill", File: e.Source,
					Message: fmt.Sprintf("registry names %q, but no skill of that name is in this root", key),
				})
			}
		}
	}
	sortProblems(in.Problems)
	return in
}

// digestInput fingerprints everything a catalog is built from, to tell
// whether a rescan changed anything.
func digestInput(in CatalogInput) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	skills := append([]*skill.Skill(nil), in.Skills...)
	sort.Slice(skills, func(i, j int) bool { return skills[i].Dir < skills[j].Dir })
	for _, s := range skills {
		_ = enc.Encode([]any{s.Dir, s.Root, s.ContentHash, s.Resources, s.ResourcesTruncated, s.Registry, s.Problems})
	}
	_ = enc.Encode([]any{in.Files, in.Invalid, in.Problems})
	return hex.EncodeToString(h.Sum(nil))
}
