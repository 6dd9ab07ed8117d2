package skill

import "fmt"

// SizeLimits bound one skill: the files of its folder the router lists
// (SKILL.md included) and their bytes. A skill over either is served by no
// front and no method: it is not listed, matched, loaded or read, and every
// refusal gives the same reason (ReasonSkillTooLarge). The defaults are the
// MCP Skills extension's, the sizes every conforming host accepts.
type SizeLimits struct {
	MaxFiles int
	MaxBytes int64
}

// DefaultSizeLimits are the Skills extension's per-skill limits: 512 files
// and 16 MiB.
var DefaultSizeLimits = SizeLimits{MaxFiles: 512, MaxBytes: 16 << 20}

// ReasonSkillTooLarge is the reason of every refusal of a skill over the
// size limits.
const ReasonSkillTooLarge = "SKILL_TOO_LARGE"

// Oversize says how s exceeds l ("" when it does not): counted over SKILL.md
// and the resources the folder's listing holds. s.ResourcesTruncated says
// the listing stopped at its cap (the loader makes it l.MaxFiles files
// besides SKILL.md): the folder holds more.
func (l SizeLimits) Oversize(s *Skill) string {
	files := 1 + len(s.Resources)
	bytes := s.Size
	for _, r := range s.Resources {
		bytes += r.Size
	}
	switch {
	case s.ResourcesTruncated || l.MaxFiles > 0 && files > l.MaxFiles:
		held := fmt.Sprintf("%d files", files)
		if s.ResourcesTruncated {
			held = fmt.Sprintf("at least %d files", files+1) // the listing stopped at its cap
		}
		return fmt.Sprintf("its folder holds %s, more than the %d a skill may hold (limits.max_skill_files)", held, l.MaxFiles)
	case l.MaxBytes > 0 && bytes > l.MaxBytes:
		return fmt.Sprintf("its files hold %d bytes, more than the %d a skill may hold (limits.max_skill_bytes)", bytes, l.MaxBytes)
	}
	return ""
}
