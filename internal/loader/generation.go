package loader

import (
	"time"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

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
	files   *skillFiles
	// scan is the scan behind the catalog, of scanRoots; the snapshot
	// writer saves it with the index (statedir.ScanFile).
	scan      *skillfs.ScanResult
	scanRoots []skill.Root
}

// Pass describes one pass of the loader: the generation it built.
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
	// Full is set when every skill file was read and parsed again:
	// Reindex with full, or a pass after the cache file was replaced.
	Full bool
	// FoldersReused counts the folders a full scan did not read, since
	// their listings from the last full scan still held.
	FoldersReused int
	// Restored is set when the skill files came from the scan behind the
	// index snapshot, not from the roots (Config.ServeLastScan).
	Restored bool
	// Skills and Tools count the skills (winners of their names) and the
	// tools of MCP servers the generation published serves.
	Skills, Tools int
}

// Phase is one step of a pass and its duration.
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

// ServedModel returns the fingerprint of the model whose vectors g serves;
// empty when its matching is keyword-only.
func (g *Generation) ServedModel() string {
	if g.vectors == nil {
		return ""
	}
	return g.space.model.Fingerprint
}
