package router

import (
	"errors"
	"fmt"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

// manifest reads every file of s as a level-3 load would and describes it:
// the frontmatter as written and each file's size and digest. Files a load
// refuses are left out; a SKILL.md that cannot be read or whose frontmatter
// no longer parses fails the manifest.
func (r *Router) manifest(s *skill.Skill) (*skill.Manifest, error) {
	if s.IsTool() {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "%s is a tool of MCP server %s: it has no files", s.Name, s.Tool.Server)
	}
	if err := s.Refusal(); err != nil {
		return nil, err
	}
	lim := r.cfg.Limits
	f, err := skillfs.ReadResource(s.Dir, skillfs.SkillFile, max(lim.MaxFileBytes, r.cfg.MaxResourceBytes))
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
		rf, err := skillfs.ReadResource(s.Dir, res.Path, r.cfg.MaxResourceBytes)
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
