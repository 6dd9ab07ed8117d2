package loader

import (
	"bytes"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

// TestSkillDigestsIgnoreWhatCameBefore checks that a digester reused
// across skills, as a build reuses one, gives each skill the digest a
// fresh one gives it, and that the digest follows the skill's content.
func TestSkillDigestsIgnoreWhatCameBefore(t *testing.T) {
	root := skill.Root{Path: "/ws/skills", Display: "skills", Kind: skill.SourceKind("project")}
	a := &skill.Skill{Name: "alpha", Dir: "/ws/skills/alpha", RelPath: "alpha/SKILL.md", Root: root, ContentHash: skill.Hash([]byte("a")),
		Resources: []skill.Resource{{Path: "scripts/run.sh", Size: 12}}}
	b := &skill.Skill{Name: "beta", Dir: "/ws/skills/beta", RelPath: "beta/SKILL.md", Root: root, ContentHash: skill.Hash([]byte("b"))}
	for name, digest := range map[string]func(*digester, *skill.Skill) []byte{
		"input": (*digester).input,
		"skill": (*digester).skill,
	} {
		var reused digester
		digest(&reused, a)
		after := digest(&reused, b)
		var fresh digester
		if want := digest(&fresh, b); !bytes.Equal(after, want) {
			t.Errorf("%s digest of a skill after another: %x, alone: %x", name, after, want)
		}
		if bytes.Equal(after, digest(&fresh, a)) {
			t.Errorf("%s digest: two different skills give the same", name)
		}
		edited := *b
		edited.ContentHash = skill.Hash([]byte("b, edited"))
		if bytes.Equal(after, digest(&fresh, &edited)) {
			t.Errorf("%s digest did not change with the content", name)
		}
	}
}
