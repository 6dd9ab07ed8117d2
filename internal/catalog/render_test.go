package catalog

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

func fakeSkills(n int, desc func(i int) string) []*skill.Skill {
	var out []*skill.Skill
	for i := range n {
		out = append(out, &skill.Skill{Name: fmt.Sprintf("skill-%03d", i), Frontmatter: skill.Frontmatter{Description: desc(i)}})
	}
	return out
}

func TestRenderCatalog(t *testing.T) {
	skills := fakeSkills(50, func(i int) string { return strings.Repeat("word ", 10+i*3) + "<tag> & more" })
	for _, budget := range []int{0, 10, 90, 200, 1000, 3000, 10000, 100000} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			c := Render(skills, budget)
			if c.Chars > budget || c.Chars != utf8.RuneCountInString(c.Text) {
				t.Fatalf("chars %d (text %d) over budget %d", c.Chars, utf8.RuneCountInString(c.Text), budget)
			}
			if len(c.Included)+len(c.Cut) != len(skills) {
				t.Errorf("included %d + cut %d != %d", len(c.Included), len(c.Cut), len(skills))
			}
			if strings.Contains(c.Text, "<tag>") {
				t.Error("description text is not escaped")
			}
			for _, name := range c.Included {
				if !strings.Contains(c.Text, "- "+name) {
					t.Errorf("included %s is not in the text", name)
				}
			}
			for _, name := range c.Cut {
				if strings.Contains(c.Text, "- "+name+"\n") || strings.Contains(c.Text, "- "+name+":") {
					t.Errorf("cut %s is in the text", name)
				}
			}
			if budget == 100000 && (len(c.Shortened) > 0 || len(c.Cut) > 0) {
				t.Errorf("a large budget shortened %d and cut %d", len(c.Shortened), len(c.Cut))
			}
			if budget == 3000 && len(c.Cut) > 0 && len(c.Shortened) < len(c.Included) {
				t.Error("skills were cut before every description was shortened")
			}
		})
	}
}
