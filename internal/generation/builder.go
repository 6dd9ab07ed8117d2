// Package generation builds index generations. A build scans the skill roots,
// parses the SKILL.md files that changed, keeps the store in step with the
// disk, resolves the catalog, embeds the skills through the store's vector
// cache and builds the match index. The result, a Generation, is immutable.
// The router serves one Generation at a time, and evaluation builds its
// Generation through the same Builder, so it measures exactly what is served.
package generation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"runtime"
	"sort"
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
	Tools  ToolSource
	Logger *slog.Logger
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
	// ID numbers the catalog; it grows whenever the catalog changes and
	// survives restarts. A generation that only changed its model or its
	// match configuration keeps its catalog's ID.
	ID      uint64
	Catalog *catalog.Catalog
	Index   *match.Index
	// Model is the identity of the model that embedded the skills; zero
	// when matching is keyword-only.
	Model embed.Identity

	vectors map[*skill.Skill][]float32 // by winning skill; nil when keyword-only
	digest  string                     // fingerprint of the catalog input
	db      *store.DB
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
	// vectors came from the cache and those computed in this pass.
	DocumentsCached, DocumentsEmbedded int
}

// Builder turns the skill folders into generations. It keeps the store in
// step with the disk: unchanged files (same size and modification time) are
// never read again, changed ones are parsed again, deleted ones dropped. One
// build runs at a time.
type Builder struct {
	cfg Config
	db  *store.DB
	log *slog.Logger

	mu         sync.Mutex // serialises builds; guards the fields below
	records    map[string]*store.FileRecord
	registries map[string]map[string]skill.RegistryEntry // root -> last good registry
	lastID     uint64

	parsedTotal atomic.Int64
	progress    atomic.Pointer[skill.Progress]
}

// NewBuilder loads the cached records from db.
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
	recs, err := db.Files()
	if err != nil {
		return nil, err
	}
	id, err := db.Generation()
	if err != nil {
		return nil, fmt.Errorf("read generation: %w", err)
	}
	b := &Builder{cfg: cfg, db: db, log: cfg.Logger, records: recs,
		registries: make(map[string]map[string]skill.RegistryEntry), lastID: id}
	b.progress.Store(&skill.Progress{})
	return b, nil
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
func (b *Builder) Build(ctx context.Context, prev *Generation, full bool, matchCfg match.Config) (*Generation, Pass, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	defer b.progress.Store(&skill.Progress{})

	cat, digest, pass, err := b.refreshCatalog(ctx, prev, full)
	if err != nil {
		return nil, pass, err
	}
	b.setProgress("embed", 0, len(cat.Winners()))
	vectors, model, err := b.vectors(ctx, prev, cat, &pass)
	if err != nil {
		return nil, pass, err
	}
	if prev != nil && cat == prev.Catalog && sameVectors(prev, vectors, model) {
		pass.Stats.Generation = prev.ID
		pass.Stats.Duration = time.Since(start)
		return prev, pass, nil
	}
	b.setProgress("index", 0, len(cat.Winners()))
	g := &Generation{ID: cat.Generation, Catalog: cat, Model: model, vectors: vectors, digest: digest, db: b.db}
	if g.Index, err = b.buildIndex(ctx, g, matchCfg); err != nil {
		return nil, pass, err
	}
	pass.Stats.Generation = g.ID
	pass.Stats.Published = true
	pass.Stats.Duration = time.Since(start)
	return g, pass, nil
}

// WithMatchConfig returns a generation serving g's catalog and vectors under
// another match configuration: over g's index data when only query-time
// settings changed, else over a rebuilt index.
func (b *Builder) WithMatchConfig(ctx context.Context, g *Generation, cfg match.Config) (*Generation, error) {
	next := *g
	var err error
	if next.Index, err = g.Index.WithConfig(b.modelConfig(cfg, g)); err != nil {
		if next.Index, err = b.buildIndex(ctx, g, cfg); err != nil {
			return nil, err
		}
	}
	return &next, nil
}

// refreshCatalog scans, parses what changed, updates the store and returns
// the catalog: prev's when its input did not change.
func (b *Builder) refreshCatalog(ctx context.Context, prev *Generation, full bool) (*catalog.Catalog, string, Pass, error) {
	var pass Pass
	b.setProgress("scan", 0, 0)
	roots, err := skillfs.ExpandRoots(b.cfg.Workspace, b.cfg.Roots)
	if err != nil {
		return nil, "", pass, err
	}
	scan := skillfs.Scan(roots, b.cfg.Scan)
	pass.Dirs = scan.Dirs
	if err := ctx.Err(); err != nil {
		return nil, "", pass, err
	}

	st := &pass.Stats
	st.Scanned = len(scan.Files)
	var todo []int
	for i, f := range scan.Files {
		old := b.records[f.Path]
		if !full && old != nil && old.ModTimeNano == f.ModTime.UnixNano() && old.Size == f.Size {
			continue
		}
		todo = append(todo, i)
	}

	b.setProgress("parse", 0, len(todo))
	parsed, err := b.parseAll(ctx, scan.Files, todo)
	if err != nil {
		return nil, "", pass, err
	}
	st.Parsed = len(todo)
	b.parsedTotal.Add(int64(len(todo)))

	changes := store.FileChanges{Bodies: map[string]string{}}
	next := make(map[string]*store.FileRecord, len(scan.Files))
	for _, f := range scan.Files {
		next[f.Path] = b.records[f.Path]
	}
	for j, i := range todo {
		f := scan.Files[i]
		old := b.records[f.Path]
		rec := parsed[j].record
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
		keep := make(map[string]bool, len(next))
		for _, rec := range next {
			if rec.Good != nil {
				keep[rec.Good.ContentHash] = true
			}
		}
		changes.KeepBodies = keep
		if err := b.db.ApplyFiles(changes); err != nil {
			return nil, "", pass, fmt.Errorf("update cache: %w", err)
		}
	}
	b.records = next

	in := b.catalogInput(roots, scan, next)
	if b.cfg.Tools != nil {
		in.Tools, _ = b.cfg.Tools.Tools()
	}
	digest := digestInput(in)
	st.FinishedAt = time.Now()
	if prev != nil && digest == prev.digest {
		return prev.Catalog, digest, pass, nil
	}
	b.lastID++
	if err := b.db.SetGeneration(b.lastID); err != nil {
		return nil, "", pass, fmt.Errorf("store generation: %w", err)
	}
	in.Generation = b.lastID
	return catalog.New(in), digest, pass, nil
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

// catalogInput assembles skills from the good versions, the scan's resource
// listings and the registries.
func (b *Builder) catalogInput(roots []skill.Root, scan skillfs.ScanResult, recs map[string]*store.FileRecord) catalog.Input {
	in := catalog.Input{Precedence: b.cfg.Precedence, Files: len(scan.Files)}
	in.Problems = append(in.Problems, scan.Problems...)

	registries := make(map[string]map[string]skill.RegistryEntry, len(roots))
	for _, r := range roots {
		entries, ok, problems := skillfs.ReadRegistry(r.Path)
		in.Problems = append(in.Problems, problems...)
		if !ok {
			entries = b.registries[r.Path] // keep the last good one
		}
		registries[r.Path] = entries
	}
	b.registries = registries

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
		key := skillmd.FoldName(s.Name)
		if e, ok := registries[f.Root.Path][key]; ok {
			e.Source = path.Join(f.Root.Display, skillfs.RegistryFile)
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
	skill.SortProblems(in.Problems)
	return in
}

// digestInput fingerprints everything a catalog is built from, to tell
// whether a rescan changed anything.
func digestInput(in catalog.Input) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	skills := append([]*skill.Skill(nil), in.Skills...)
	sort.Slice(skills, func(i, j int) bool { return skills[i].Dir < skills[j].Dir })
	for _, s := range skills {
		_ = enc.Encode([]any{s.Dir, s.Root, s.ContentHash, s.Resources, s.ResourcesTruncated, s.Registry, s.Problems})
	}
	_ = enc.Encode([]any{in.Files, in.Invalid, in.Problems})
	for _, t := range in.Tools {
		_ = enc.Encode([]any{t.Name, t.ContentHash, t.Tool.Trusted, t.Tool.Agents})
	}
	return hex.EncodeToString(h.Sum(nil))
}
