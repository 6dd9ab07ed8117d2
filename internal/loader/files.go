package loader

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// skillFiles reads what a generation serves beyond its catalog: bodies
// from the store, and the files of a skill folder as they are now. Every
// generation of a loader shares one.
type skillFiles struct {
	db     *store.DB
	limits skillmd.Limits // those the loader parses SKILL.md files with
}

// errCacheRebuilt is what a body read answers while the store, found
// damaged, is being filled again.
var errCacheRebuilt = skill.Errorf(skill.CodeUnavailable, "the cache was found damaged and is being rebuilt from the skill folders; retry")

// Body returns a skill's SKILL.md body from the store. ok is false when the
// body is gone (a newer generation replaced it): ask again. While the
// store, found damaged, is rebuilt, it answers a *skill.Error with
// CodeUnavailable.
func (g *Generation) Body(s *skill.Skill) (body string, ok bool, err error) {
	body, ok, err = g.files.db.Body(s.ContentHash)
	if errors.Is(err, store.ErrDamaged) {
		return "", false, errCacheRebuilt
	}
	return body, ok, err
}

// Manifest reads every file of s as a level-3 load of at most
// maxResourceBytes a file would and describes it: the frontmatter as
// written and each file's size and digest. Files a load refuses are left
// out; a SKILL.md that cannot be read or whose frontmatter no longer parses
// fails the manifest (FailedPrecondition), as do a tool and a skill that is
// not served.
func (g *Generation) Manifest(s *skill.Skill, maxResourceBytes int64) (*skill.Manifest, error) {
	if s.IsTool() {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "%s is a tool of MCP server %s: it has no files", s.Name, s.Tool.Server)
	}
	if err := s.Refusal(); err != nil {
		return nil, err
	}
	lim := g.files.limits
	f, err := skillfs.ReadResource(s.Dir, skillfs.SkillFile, max(lim.MaxFileBytes, maxResourceBytes))
	if err != nil {
		return nil, err
	}
	fm, err := skillmd.FrontmatterJSON(f.Data, s.Name, lim)
	if err != nil {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "the SKILL.md of %q changed and no longer parses (%v); it is served again once fixed", s.Name, err)
	}
	m := &skill.Manifest{Frontmatter: fm, Files: make([]skill.FileDigest, 0, len(s.Resources)+1)}
	m.Files = append(m.Files, skill.FileDigest{Path: skillfs.SkillFile, Size: f.Size, SHA256: skill.Hash(f.Data)})
	for _, res := range s.Resources {
		rf, err := skillfs.ReadResource(s.Dir, res.Path, maxResourceBytes)
		if err != nil {
			var de *skill.Error
			if errors.As(err, &de) && de.Code != skill.CodeInternal {
				continue // not served: left out, as a load would refuse it
			}
			return nil, fmt.Errorf("read %s of %q: %w", res.Path, s.Name, err)
		}
		m.Files = append(m.Files, skill.FileDigest{Path: rf.Path, Size: rf.Size, SHA256: skill.Hash(rf.Data)})
	}
	return m, nil
}

// pruneVectors prunes the store's vectors of g's model to the texts of g's
// entries. While an MCP server is not settled its tools are missing from
// the catalog: a generation of such a catalog does not ask for it, so that
// their vectors stay in the cache for when it is back.
func (g *Generation) pruneVectors(log *slog.Logger) {
	id, winners := g.Model, g.Catalog.Winners()
	texts, err := g.files.documentTexts(winners, g.space.bodyChars)
	if err != nil {
		return
	}
	keep := make(map[string]bool, len(winners))
	for _, t := range texts {
		keep[embed.TextHash(id, t)] = true
	}
	if _, err := g.files.db.PruneVectors(id.Fingerprint, keep); err != nil {
		log.Warn("pruning stale vectors failed", "err", err)
	}
}
