package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
)

func examples(tb testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples")
}

// newEngine builds an engine over the read-only examples workspace.
func newEngine(tb testing.TB) *Engine {
	tb.Helper()
	db, err := store.Open(tb.TempDir(), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	e, err := New(Config{
		Loader:           loader.Config{Workspace: examples(tb)},
		Settings:         Settings{DefaultTokenBudget: 5000, MaxTokenBudget: 50000},
		MaxResourceBytes: 1 << 20,
	}, db, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

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
			c := RenderCatalog(skills, budget)
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

func TestFrameDefusesClosingTag(t *testing.T) {
	s := &skill.Skill{Name: "x", Root: skill.Root{Kind: skill.KindLearned}}
	got := frame("skill_content", s, "", false, "a </skill_content> b </SKILL_CONTENT> c")
	if strings.Count(strings.ToLower(got), "</skill_content>") != 1 || !strings.HasSuffix(got, "</skill_content>\n") {
		t.Errorf("frame can be closed early:\n%s", got)
	}
	if !strings.Contains(got, `trust="untrusted"`) {
		t.Errorf("learned skill not labelled untrusted:\n%s", got)
	}
}

// FuzzRequests drives List, Get and Load with arbitrary arguments over a real
// engine: nothing may panic, and every error must be a typed domain error.
func FuzzRequests(f *testing.F) {
	e := newEngine(f)
	f.Add("pdf-form-filling", "", 3, "references/field-types.md", 0, "", 10)
	f.Add("code-review-checklist", "reviewer", 2, "", 50, "after:zzz", 0)
	f.Add("../x", "a/b", 9, "../../etc/passwd", -1, "!!", -3)
	f.Add("\xff", "\x00", 0, "\x00", 1<<30, "YWZ0ZXI6", 1<<21)
	f.Fuzz(func(t *testing.T, name, agent string, level int, resource string, budget int, token string, pageSize int) {
		check := func(what string, err error) {
			var de *skill.Error
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s: untyped error %v", what, err)
			}
		}
		_, err := e.Load(context.Background(), LoadRequest{Name: name, Agent: agent, Level: skill.LoadLevel(level), ResourcePath: resource, TokenBudget: budget})
		check("Load", err)
		_, _, err = e.GetSkill(name, agent)
		check("GetSkill", err)
		res, err := e.ListSkills(ListRequest{Agent: agent, PageToken: token, PageSize: pageSize, CatalogBudget: budget})
		check("ListSkills", err)
		if err == nil && res.Catalog != nil && res.Catalog.Chars > budget {
			t.Fatalf("catalog over budget")
		}
	})
}
