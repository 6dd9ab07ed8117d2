package loader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/store"
)

// assembly turns what a pass found and parsed into a generation: the
// catalog (with the tools of MCP servers), the vectors, the identity and
// the match index, each taken from the previous generation where its input
// did not change. It works on its caller's goroutine (spreading a step over
// the cores, and waiting for it, when every skill needs it) and touches no
// file: the store's bodies and vector cache are all it reads and writes.
type assembly struct {
	workspace  string // absolute
	precedence []skill.SourceKind
	size       skill.SizeLimits
	embedder   *embed.Manager // the primary model; nil: none
	fast       *embed.Manager // the fast model; nil: none
	syncDocs   int            // texts a pass embeds with embedder itself; negative: any number
	backfill   *backfill      // embeds embedder's texts past syncDocs; nil: a pass embeds them all
	tools      ToolSource     // nil: none
	db         *store.DB
	files      *skillFiles // what its generations read files through
	log        *slog.Logger
	progress   *progress

	memo          map[string]*skillMemo   // SKILL.md path -> the skill built from it, for reuse
	lastMemoFiles []skillfs.Found         // the scan files memo was made for
	dirMemo       []*skillMemo            // memo of lastMemoFiles' paths, in folder order
	dirPos        []int                   // by index in lastMemoFiles: its place in dirMemo
	cids          map[*skill.Skill][]byte // per-skill content digests of the last generation
	recorded      [2]string               // the fingerprints of the models last recorded in the store (recordModels)
}

// newAssembly returns the assembly of a loader configured by cfg, over db;
// with cfg.Background, the encoder's texts past cfg.SyncDocuments are
// embedded by its backfill (runBackfill).
func newAssembly(cfg Config, workspace string, db *store.DB, progress *progress) *assembly {
	a := &assembly{workspace: workspace, precedence: cfg.Precedence, size: cfg.Size, embedder: cfg.Embedder, fast: cfg.Fast,
		syncDocs: -1, tools: cfg.Tools, db: db, files: &skillFiles{db: db, limits: cfg.Limits}, log: cfg.Logger, progress: progress}
	if cfg.Background && cfg.Embedder != nil {
		a.syncDocs = max(0, cfg.SyncDocuments)
		a.backfill = newBackfill(cfg.Embedder, db, cfg.Logger.With("component", "backfill"))
	}
	return a
}

// runBackfill runs the backfill until ctx ends, if there is one, and
// returns a channel that has a value when the texts it was asked for are
// all embedded (nil without a backfill) and a function that waits for it
// to stop.
func (a *assembly) runBackfill(ctx context.Context) (ready <-chan struct{}, wait func()) {
	if a.backfill == nil {
		return nil, func() {}
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.backfill.run(ctx) })
	return a.backfill.ready, wg.Wait
}

// backfillStatus says how far the backfill is, for Status; ok is false
// without one.
func (a *assembly) backfillStatus() (_ skill.Backfill, ok bool) {
	if a.backfill == nil {
		return skill.Backfill{}, false
	}
	bs := a.backfill.status()
	return skill.Backfill{Model: bs.Model, Done: bs.Done, Total: bs.Total, Started: bs.Started}, true
}

// cataloged is what the catalog step of a pass made: the catalog, its
// winning entries (Catalog.Winners), and the digest of its input.
type cataloged struct {
	cat     *catalog.Catalog
	winners []*skill.Skill
	digest  string
}

// catalog returns the catalog of f's files, their records and the tools of
// MCP servers: prev's when the digest of its input is prev's. built says a
// new catalog was made.
func (a *assembly) catalog(prev *Generation, f *found, recs map[string]*store.FileRecord) (c cataloged, built bool) {
	in, digest := a.catalogInput(f, recs)
	if a.tools != nil {
		in.Tools, _ = a.tools.Tools()
		if len(in.Tools) > 0 {
			digest = toolsDigest(digest, in.Tools)
		}
	}
	if prev != nil && digest == prev.digest {
		c.cat = prev.Catalog
	} else {
		c.cat, built = catalog.New(in), true
	}
	c.digest, c.winners = digest, c.cat.Winners()
	return c, built
}

// assemble returns the generation of c's catalog under matchCfg: prev when neither the catalog nor the vectors changed.
// base is the index the new one is updated from (prev's, or at a start the
// index snapshot's, made in baseSpace; nil builds it from scratch). It
// records its steps and counts in pass.
func (a *assembly) assemble(ctx context.Context, prev *Generation, base *match.Index, baseSpace vectorSpace, c cataloged, matchCfg match.Config, pass *Pass) (_ *Generation, prune bool, _ error) {
	t := time.Now()
	cat, winners, digest := c.cat, c.winners, c.digest
	a.progress.set("embed", 0, len(winners))
	vectors, space, prune, err := a.vectors(ctx, prev, base, baseSpace, cat, winners, pass)
	if err != nil {
		return nil, false, err
	}
	pass.phase("embed", &t)
	if prev != nil && cat == prev.Catalog && sameVectors(prev, vectors, space) {
		return prev, prune, nil
	}
	a.progress.set("index", 0, len(winners))
	g := &Generation{Catalog: cat, Model: space.model, space: space, vectors: vectors, digest: digest, files: a.files}
	cfg := g.modelConfig(matchCfg)
	if a.cids == nil || !pass.Partial {
		a.cids = make(map[*skill.Skill][]byte, len(cat.Entries())) // a full scan drops the digests of skills gone
	}
	g.ContentID, g.ID = contentID(cat, g.Model, vectors != nil, cfg, a.workspace, a.cids)
	pass.phase("identity", &t)
	var us match.UpdateStats
	if g.Index, us, err = a.buildIndex(ctx, base, g, winners, cfg); err != nil {
		return nil, false, err
	}
	pass.phase("index", &t)
	pass.Analyzed, pass.Reused = us.Changed+us.Added, us.Kept
	return g, prune, nil
}

// withMatchConfig returns a generation serving g's catalog and vectors
// under another match configuration: over g's index data when only
// query-time settings changed, else over an updated index.
func (a *assembly) withMatchConfig(ctx context.Context, g *Generation, cfg match.Config) (*Generation, error) {
	next := *g
	cfg = g.modelConfig(cfg)
	if a.cids == nil {
		a.cids = map[*skill.Skill][]byte{}
	}
	next.ContentID, next.ID = contentID(g.Catalog, g.Model, g.vectors != nil, cfg, a.workspace, a.cids)
	var err error
	if next.Index, err = g.Index.WithConfig(cfg); err != nil {
		if next.Index, _, err = a.buildIndex(ctx, g.Index, &next, g.Catalog.Winners(), cfg); err != nil {
			return nil, err
		}
	}
	return &next, nil
}
