package loader

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

func TestAlignedVectors(t *testing.T) {
	var old []*skill.Skill
	var vecs [][]float32
	for i := range 6 {
		old = append(old, &skill.Skill{Name: fmt.Sprintf("s%d", i), Dir: fmt.Sprintf("/ws/skills/s%d", i), ContentHash: fmt.Sprintf("h%d", i),
			Frontmatter: skill.Frontmatter{Name: fmt.Sprintf("s%d", i), Description: "does things"}})
		v := make([]float32, 4)
		v[i%4] = 1
		vecs = append(vecs, v)
	}
	base, err := match.Build(context.Background(), match.BuildInput{Skills: old, Vectors: vecs, UnitVectors: true, Config: match.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string][]float32{}
	base.EachVector(func(s *skill.Skill, v []float32) { held[s.Key()] = v })
	clone := func(s *skill.Skill) *skill.Skill { c := *s; return &c }
	edited := clone(old[2])
	edited.ContentHash = "edited"
	renamed := clone(old[3])
	renamed.Name = "other"
	added := &skill.Skill{Name: "new", Dir: "/ws/skills/new", ContentHash: "n"}

	for _, c := range []struct {
		name    string
		winners []*skill.Skill
		misses  []*skill.Skill
	}{
		{"the same catalog", []*skill.Skill{clone(old[0]), clone(old[1]), clone(old[2]), clone(old[3]), clone(old[4]), clone(old[5])}, nil},
		{"edits in place", []*skill.Skill{clone(old[0]), clone(old[1]), edited, renamed, clone(old[4]), clone(old[5])}, []*skill.Skill{edited, renamed}},
		{"a skill added in the middle", []*skill.Skill{clone(old[0]), added, clone(old[1])}, []*skill.Skill{added}},
		{"a skill removed", []*skill.Skill{clone(old[0]), clone(old[2])}, nil},
		{"another order", []*skill.Skill{clone(old[5]), clone(old[0])}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := map[*skill.Skill][]float32{}
			misses := alignedVectors(base, c.winners, out)
			for _, s := range c.winners {
				v, paired := out[s]
				missed := slices.Contains(misses, s)
				if paired == missed {
					t.Errorf("%s: paired %v, missed %v: want exactly one", s.Key(), paired, missed)
				}
				if paired && &v[0] != &held[s.Key()][0] {
					t.Errorf("%s: paired with another skill's vector", s.Key())
				}
			}
			if c.name == "the same catalog" && len(misses) > 0 {
				t.Errorf("%d misses in the catalog base was made of", len(misses))
			}
			for _, s := range c.misses {
				if _, ok := out[s]; ok {
					t.Errorf("%s changed, but kept the vector base holds", s.Key())
				}
			}
			if !slices.IsSortedFunc(misses, func(a, b *skill.Skill) int {
				return slices.Index(c.winners, a) - slices.Index(c.winners, b)
			}) {
				t.Errorf("misses out of catalog order")
			}
		})
	}
}
