package router

import (
	"context"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// Generation is what the router serves of one index generation: its
// identity, its catalog, its match index and the reader of its files. It
// is immutable once published. The router does not know how one is made:
// the daemon adapts the loader's generations to it.
type Generation struct {
	// ID and ContentID identify the generation (loader.Generation's).
	ID        uint64
	ContentID string
	Catalog   *catalog.Catalog
	Index     *match.Index
	Files     Files
}

// Files reads what a generation serves beyond its catalog: a skill's body
// as the generation indexed it and the manifest of its files on disk now.
type Files interface {
	// Body returns the SKILL.md body of s. ok is false when the body is
	// gone (a newer generation replaced it). Its errors are a
	// *skill.Error (Unavailable while the cache is rebuilt) or an
	// internal error.
	Body(s *skill.Skill) (body string, ok bool, err error)
	// Manifest reads every file of s as a level-3 load of at most
	// maxResourceBytes a file would, and describes it (see
	// skill.Manifest). Its errors are a *skill.Error (FailedPrecondition
	// for a tool, a refused skill or a SKILL.md that no longer parses;
	// those of skillfs.ReadResource) or an internal error.
	Manifest(s *skill.Skill, maxResourceBytes int64) (*skill.Manifest, error)
}

// Source makes the generations the router serves; the daemon adapts
// loader.Loader to it.
type Source interface {
	// Start builds the first generation and hands it to publish, then
	// every later one, until Close. It returns the first build's error.
	Start(ctx context.Context, publish func(*Generation)) error
	// Reindex rescans the roots now (full: parsing every file again) and
	// publishes a new generation when anything changed. Before Start it
	// answers Unavailable.
	Reindex(ctx context.Context, full bool) (skill.ReindexStats, error)
	// Describe fills in what a Status says of the builds, the model and
	// the cache.
	Describe(st *skill.Status)
	// Close stops the builds.
	Close() error
}
