package loader

import (
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

// Validate resolves a name collision by the precedence it is given: the
// project copy by default, the user copy when user ranks first.
func TestValidateFollowsPrecedence(t *testing.T) {
	ws := t.TempDir()
	project, user := filepath.Join(ws, "project"), filepath.Join(ws, "user")
	writeSkill(t, project, "pdf", "pdf", "Fill PDF forms (project copy).")
	writeSkill(t, user, "pdf", "pdf", "Fill PDF forms (user copy).")
	roots := []skill.Root{
		{Path: project, Display: "project", Kind: skill.KindProject, Order: 0},
		{Path: user, Display: "user", Kind: skill.KindUser, Order: 1},
	}
	for _, tc := range []struct {
		precedence []skill.SourceKind
		winner     string
	}{
		{nil, project},
		{[]skill.SourceKind{skill.KindUser, skill.KindProject}, user},
	} {
		rep := Validate(roots, tc.precedence, skillmd.DefaultLimits, skillfs.DefaultScanLimits)
		if rep.Files != 2 || rep.Valid != 2 || rep.Served != 1 || len(rep.Shadows) != 1 {
			t.Fatalf("precedence %v: %d files, %d valid, %d served, %d shadows", tc.precedence, rep.Files, rep.Valid, rep.Served, len(rep.Shadows))
		}
		if got := rep.Shadows[0].Winner.Root.Path; got != tc.winner {
			t.Errorf("precedence %v: the copy in %s wins, want %s", tc.precedence, got, tc.winner)
		}
	}
}
