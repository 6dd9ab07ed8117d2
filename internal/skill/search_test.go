package skill_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

func TestDocumentText(t *testing.T) {
	tests := []struct {
		name, skill, desc, body string
		chars                   int
		want                    string
	}{
		{"name and description", "fill-pdf_forms", "Fill PDF forms.", "body", 0, "fill pdf forms: Fill PDF forms."},
		{"no description", "git-helper", "  ", "", 0, "git helper"},
		{"body start", "x", "Does x.", "First words of the body here", 15, "x: Does x.\n\nFirst words of"},
		{"body cut at space", "x", "d", "abc defgh", 6, "x: d\n\nabc"},
		{"body shorter than limit", "x", "d", "  short  ", 100, "x: d\n\nshort"},
		{"multibyte body", "x", "d", "héllo wörld", 7, "x: d\n\nhéllo"},
		{"body only", "", "", "body", 10, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &skill.Skill{Name: tt.skill, Frontmatter: skill.Frontmatter{Description: tt.desc}}
			if got := s.DocumentText(tt.body, tt.chars); got != tt.want {
				t.Errorf("DocumentText = %q, want %q", got, tt.want)
			}
		})
	}
}

// A tool's embedded text spells its name as words and holds its title and
// parameters; its server's name and the body are left out.
func TestToolDocumentText(t *testing.T) {
	s := &skill.Skill{Name: "gh.getPM2.5Level", Kind: skill.EntryTool, Frontmatter: skill.Frontmatter{Description: "Reads the level."},
		Tool: &skill.Tool{Server: "gh", Name: "getPM2.5Level", Title: "Air quality",
			Params: []skill.ToolParam{{Name: "city", Description: "where"}}}}
	want := "get PM2 5Level: Air quality. Reads the level.\n\ncity: where"
	if got := s.DocumentText("a body", 100); got != want {
		t.Errorf("DocumentText = %q, want %q", got, want)
	}
}

// Keyword matching and the embedded text both hold when_to_use after the
// description.
func TestWhenToUse(t *testing.T) {
	w, _ := json.Marshal("when a form needs filling")
	s := &skill.Skill{Name: "pdf", Frontmatter: skill.Frontmatter{Description: "Fill PDF forms.", Extra: map[string]string{"when_to_use": string(w)}}}
	if got, want := s.SearchDescription(), "Fill PDF forms. when a form needs filling"; got != want {
		t.Errorf("SearchDescription = %q, want %q", got, want)
	}
	if got, want := s.DocumentText("", 0), "pdf: Fill PDF forms. when a form needs filling"; got != want {
		t.Errorf("DocumentText = %q, want %q", got, want)
	}
}

func ExampleSkill_DocumentText() {
	s := &skill.Skill{Name: "fill-pdf-forms", Frontmatter: skill.Frontmatter{Description: "Fill in and sign PDF forms."}}
	fmt.Printf("%q\n", s.DocumentText("Use pdftk to ...", 0))
	fmt.Printf("%q\n", s.DocumentText("Use pdftk to fill fields.", 12))
	// Output:
	// "fill pdf forms: Fill in and sign PDF forms."
	// "fill pdf forms: Fill in and sign PDF forms.\n\nUse pdftk to"
}
