package skillmd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

func codes(ps []skill.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

func hasCode(ps []skill.Problem, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		dir       string
		in        string
		wantSkip  bool
		wantName  string
		wantDesc  string
		wantCodes []string // each must be present
		wantLine  map[string]int
	}{
		{
			name: "valid", dir: "pdf-forms",
			in:       "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# Body\n",
			wantName: "pdf-forms", wantDesc: "Fill PDF forms.",
		},
		{
			name: "BOM and CRLF", dir: "pdf-forms",
			in:       "\ufeff---\r\nname: pdf-forms\r\ndescription: Fill PDF forms.\r\n---\r\nbody\r\n",
			wantName: "pdf-forms", wantDesc: "Fill PDF forms.",
		},
		{
			name: "name differs from folder", dir: "other",
			in:       "---\nname: pdf-forms\ndescription: d\n---\n",
			wantName: "pdf-forms", wantCodes: []string{CodeNameMismatch}, wantLine: map[string]int{CodeNameMismatch: 2},
		},
		{
			name: "malformed name loads with warning", dir: "-Bad--Name",
			in:       "---\nname: -Bad--Name\ndescription: d\n---\n",
			wantName: "-Bad--Name", wantCodes: []string{CodeNameInvalid},
		},
		{
			name: "name with ESC skips", dir: "x",
			in:       "---\nname: \"x\\e[31mred\"\ndescription: d\n---\n",
			wantSkip: true, wantCodes: []string{CodeNameControl, CodeNameInvalid, CodeNameMismatch},
		},
		{
			name: "name with a right-to-left override skips", dir: "x",
			in:       "---\nname: \"rlo-\u202etxt\"\ndescription: d\n---\n",
			wantSkip: true, wantCodes: []string{CodeNameControl, CodeNameInvalid, CodeNameMismatch},
		},
		{
			name: "name with NUL skips", dir: "x",
			in:       "---\nname: \"a\\0b\"\ndescription: d\n---\n",
			wantSkip: true, wantCodes: []string{CodeNameControl, CodeNameInvalid, CodeNameMismatch},
		},
		{
			name: "folder name with ESC skips when the name is missing", dir: "esc\x1b[31m",
			in:       "---\ndescription: d\n---\n",
			wantSkip: true, wantCodes: []string{CodeNameMissing, CodeNameControl},
		},
		{
			name: "folder name that is no UTF-8 skips when the name is missing", dir: "bad\xff",
			in:       "---\ndescription: x\n---\nb\n",
			wantSkip: true, wantCodes: []string{CodeNameMissing, CodeInvalidUTF8},
		},
		{
			name: "folder name that is no UTF-8 under a named skill", dir: "bad\xff",
			in:       "---\nname: bad\ndescription: x\n---\nb\n",
			wantName: "bad", wantCodes: []string{CodeNameMismatch},
		},
		{
			name: "missing name falls back to folder", dir: "pdf-forms",
			in:       "---\ndescription: d\n---\n",
			wantName: "pdf-forms", wantCodes: []string{CodeNameMissing},
		},
		{
			name: "empty description skips", dir: "x",
			in:       "---\nname: x\ndescription: \"  \"\n---\n",
			wantSkip: true, wantCodes: []string{CodeDescriptionMissing},
		},
		{
			name: "missing frontmatter skips", dir: "x",
			in:       "# Just markdown\n",
			wantSkip: true, wantCodes: []string{CodeMissingFrontmatter},
		},
		{
			name: "unterminated frontmatter skips", dir: "x",
			in:       "---\nname: x\ndescription: d\n",
			wantSkip: true, wantCodes: []string{CodeUnterminated},
		},
		{
			name: "broken YAML skips with line", dir: "x",
			in:       "---\nname: x\ndescription: [unclosed\n---\n",
			wantSkip: true, wantCodes: []string{CodeYAMLSyntax},
		},
		{
			name: "unquoted colon is repaired", dir: "x",
			in:       "---\nname: x\ndescription: Use when: the user asks for PDFs\n---\n",
			wantName: "x", wantDesc: "Use when: the user asks for PDFs", wantCodes: []string{CodeUnquotedColon},
			wantLine: map[string]int{CodeUnquotedColon: 3},
		},
		{
			name: "duplicate key skips", dir: "x",
			in:       "---\nname: x\ndescription: a\ndescription: b\n---\n",
			wantSkip: true, wantCodes: []string{CodeDuplicateKey},
		},
		{
			name: "numeric name is read as text with warning", dir: "123",
			in:       "---\nname: 123\ndescription: d\n---\n",
			wantName: "123", wantCodes: []string{CodeWrongType},
		},
		{
			name: "binary tag is refused", dir: "hello",
			in:       "---\nname: !!binary aGVsbG8=\ndescription: d\n---\n",
			wantName: "hello", wantCodes: []string{CodeExplicitTag, CodeNameMissing},
		},
		{
			name: "list description skips", dir: "x",
			in:       "---\nname: x\ndescription: [a, b]\n---\n",
			wantSkip: true, wantCodes: []string{CodeWrongType, CodeDescriptionMissing},
		},
		{
			name: "nested metadata kept as JSON", dir: "x",
			in:       "---\nname: x\ndescription: d\nmetadata:\n  k: {n: 1}\n---\n",
			wantName: "x", wantCodes: []string{CodeMetadataNotString},
		},
		{
			name: "unknown field kept and reported", dir: "x",
			in:       "---\nname: x\ndescription: d\nfavourite-colour: blue\nversion: 2\n---\n",
			wantName: "x", wantCodes: []string{CodeUnknownField},
		},
		{
			name: "long description warns", dir: "x",
			in:       "---\nname: x\ndescription: " + strings.Repeat("a", 1100) + "\n---\n",
			wantName: "x", wantCodes: []string{CodeDescriptionTooLong},
		},
		{
			name: "frontmatter over the cap skips", dir: "x",
			in:       "---\nname: x\ndescription: d\nnotes: |\n" + strings.Repeat("  line of text\n", 6000) + "---\n",
			wantSkip: true, wantCodes: []string{CodeFrontmatterTooLarge},
		},
		{
			name: "empty frontmatter skips", dir: "x",
			in:       "---\n---\nbody\n",
			wantSkip: true, wantCodes: []string{CodeYAMLNotMapping},
		},
		{
			name: "scalar frontmatter skips", dir: "x",
			in:       "---\njust a string\n---\nbody\n",
			wantSkip: true, wantCodes: []string{CodeYAMLNotMapping},
		},
		{
			name: "invalid UTF-8 body is repaired", dir: "x",
			in:       "---\nname: x\ndescription: d\n---\nbad \xff byte\n",
			wantName: "x", wantCodes: []string{CodeInvalidUTF8},
		},
		{
			name: "closing fence with dots", dir: "x",
			in:       "---\nname: x\ndescription: d\n...\nbody\n",
			wantName: "x", wantDesc: "d",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := Parse([]byte(tc.in), tc.dir, DefaultLimits)
			if tc.wantSkip != (got == nil) {
				t.Fatalf("skipped = %v, want %v (problems %v)", got == nil, tc.wantSkip, problems)
			}
			if tc.wantSkip != skill.HasErrors(problems) {
				t.Errorf("HasErrors = %v, want %v (%v)", skill.HasErrors(problems), tc.wantSkip, problems)
			}
			for _, c := range tc.wantCodes {
				if !hasCode(problems, c) {
					t.Errorf("problems %v lack %q", codes(problems), c)
				}
			}
			for c, line := range tc.wantLine {
				for _, p := range problems {
					if p.Code == c && p.Line != line {
						t.Errorf("%s reported at line %d, want %d", c, p.Line, line)
					}
				}
			}
			if got == nil {
				return
			}
			if tc.wantName != "" && got.Name != tc.wantName {
				t.Errorf("Name = %q, want %q", got.Name, tc.wantName)
			}
			if tc.wantDesc != "" && got.Frontmatter.Description != tc.wantDesc {
				t.Errorf("Description = %q, want %q", got.Frontmatter.Description, tc.wantDesc)
			}
		})
	}
}

func TestParseFields(t *testing.T) {
	in := `---
name: pdf-forms
description: Fill and flatten PDF forms.
license: Apache-2.0
compatibility: Needs python3
metadata:
  author: docs-team
  version: "1.2"
allowed-tools: Bash(python3:*) Read
triggers:
  - fill a pdf form
  - flatten pdf
tags: pdf, documents
hidden: true
disable-model-invocation: false
user-invocable: true
when_to_use: forms
---
# PDF forms

Body text.
`
	got, problems := Parse([]byte(in), "pdf-forms", DefaultLimits)
	if got == nil {
		t.Fatalf("skipped: %v", problems)
	}
	if len(problems) != 0 {
		t.Errorf("problems = %v, want none", problems)
	}
	fm := got.Frontmatter
	checks := []struct {
		what      string
		got, want any
	}{
		{"license", fm.License, "Apache-2.0"},
		{"compatibility", fm.Compatibility, "Needs python3"},
		{"metadata.version", fm.Metadata["version"], "1.2"},
		{"allowed-tools", strings.Join(fm.AllowedTools, "|"), "Bash(python3:*)|Read"},
		{"triggers", strings.Join(fm.Triggers, "|"), "fill a pdf form|flatten pdf"},
		{"tags", strings.Join(fm.Tags, "|"), "pdf|documents"},
		{"hidden", fm.Hidden, true},
		{"disable-model-invocation", fm.DisableModelInvocation, false},
		{"user-invocable", fm.UserInvocable != nil && *fm.UserInvocable, true},
		{"extra when_to_use", fm.Extra["when_to_use"], `"forms"`},
		{"body line", got.BodyLine, 19},
		{"body", got.Body, "# PDF forms\n\nBody text.\n"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if len(got.ContentHash) != 64 || len(got.FrontmatterHash) != 64 {
		t.Errorf("hashes %q %q are not hex sha256", got.ContentHash, got.FrontmatterHash)
	}
}

// TestFrontmatterHashIgnoresBody: editing only the body keeps the frontmatter
// hash, so metadata consumers (embeddings of name+description) are not redone.
func TestFrontmatterHashIgnoresBody(t *testing.T) {
	a, _ := Parse([]byte("---\nname: x\ndescription: d\n---\nbody one\n"), "x", DefaultLimits)
	b, _ := Parse([]byte("---\nname: x\ndescription: d\n---\nbody two\n"), "x", DefaultLimits)
	if a.FrontmatterHash != b.FrontmatterHash {
		t.Error("frontmatter hash changed with the body")
	}
	if a.ContentHash == b.ContentHash {
		t.Error("content hash did not change with the body")
	}
}

func TestParseRejectsHostileYAMLFast(t *testing.T) {
	bomb := "---\nname: x\ndescription: d\n" +
		"a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" +
		"b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n" +
		"e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n" +
		"f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n---\n"
	deep := "---\nname: x\ndescription: d\nx: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n---\n"
	for name, in := range map[string]string{"billion laughs": bomb, "deep nesting": deep} {
		t.Run(name, func(t *testing.T) {
			lim := DefaultLimits
			lim.MaxFrontmatterBytes = 1 << 20
			start := time.Now()
			got, problems := Parse([]byte(in), "x", lim)
			if got != nil {
				t.Errorf("hostile YAML was accepted")
			}
			if !skill.HasErrors(problems) {
				t.Errorf("no error reported: %v", problems)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v; hostile input must be rejected fast", d)
			}
		})
	}
}

// TestAliasesCountAsExpanded: a 33 KB file whose description (30,000
// characters) is anchored and named again 1,100 times in its tags reads as
// 33 MB of frontmatter; it must be refused as too large by Parse and by
// FrontmatterJSON alike, while a frontmatter that uses an alias and stays
// under the limit expanded is read by both.
func TestAliasesCountAsExpanded(t *testing.T) {
	amplified := "---\nname: x\ndescription: &x " + strings.Repeat("a", 30000) + "\ntags:\n" + strings.Repeat("  - *x\n", 1100) + "---\nbody\n"
	if len(amplified) > 40000 {
		t.Fatalf("the file is %d bytes; the case is a small one", len(amplified))
	}
	got, problems := Parse([]byte(amplified), "x", DefaultLimits)
	if got != nil || !hasCode(problems, CodeFrontmatterTooLarge) {
		t.Errorf("Parse of a frontmatter 33 MB once expanded: %v, %v; want it skipped with %s", got != nil, codes(problems), CodeFrontmatterTooLarge)
	}
	for _, p := range problems {
		if p.Code == CodeFrontmatterTooLarge && !strings.Contains(p.Message, "aliases") {
			t.Errorf("the problem does not say why: %q", p.Message)
		}
	}
	if _, err := FrontmatterJSON([]byte(amplified), "x", DefaultLimits); err == nil {
		t.Error("FrontmatterJSON read the amplified frontmatter; it must refuse what Parse refuses")
	}

	reused := "---\nname: x\ndescription: &d Fills PDF forms from a CSV file.\nwhen_to_use: *d\nmetadata:\n  summary: *d\n---\nbody\n"
	got, problems = Parse([]byte(reused), "x", DefaultLimits)
	if got == nil || got.Frontmatter.Extra["when_to_use"] != `"Fills PDF forms from a CSV file."` {
		t.Fatalf("Parse of a frontmatter that reuses a value: %+v, %v", got, problems)
	}
	if _, err := FrontmatterJSON([]byte(reused), "x", DefaultLimits); err != nil {
		t.Errorf("FrontmatterJSON of a frontmatter that reuses a value: %v", err)
	}
	lim := DefaultLimits
	lim.MaxFrontmatterBytes = len("name") + len("x") + len("description") + 10
	if got, problems = Parse([]byte(reused), "x", lim); got != nil || !hasCode(problems, CodeFrontmatterTooLarge) {
		t.Errorf("Parse under a limit the expanded text passes: %v, %v; want it skipped", got != nil, codes(problems))
	}
}

// TestOneNestingRule: Parse and FrontmatterJSON (GetSkill's frontmatter)
// accept and refuse the same nesting, in a field Parse reads and in one it
// keeps as extra metadata. Frontmatter nested 9,999 levels deep was indexed
// and served while GetSkill refused it.
func TestOneNestingRule(t *testing.T) {
	for _, depth := range []int{1, 30, 31, 32, 33, 40, 9999} {
		for _, field := range []string{"tags", "metadata", "custom"} {
			in := "---\nname: x\ndescription: d\n" + field + ": " + strings.Repeat("[", depth) + "v" + strings.Repeat("]", depth) + "\n---\n"
			got, problems := Parse([]byte(in), "x", DefaultLimits)
			_, err := FrontmatterJSON([]byte(in), "x", DefaultLimits)
			if (got != nil) != (err == nil) {
				t.Errorf("%s nested %d deep: Parse accepted %v (%v), FrontmatterJSON %v; want the same answer", field, depth, got != nil, codes(problems), err)
			}
			if depth > 32 && got != nil {
				t.Errorf("%s nested %d deep: accepted; the limit is 32 levels", field, depth)
			}
			if depth > 32 && !hasCode(problems, CodeYAMLTooComplex) {
				t.Errorf("%s nested %d deep: problems %v; want %s", field, depth, codes(problems), CodeYAMLTooComplex)
			}
		}
	}
}

func TestParseFileTooLarge(t *testing.T) {
	lim := Limits{MaxFileBytes: 100, MaxFrontmatterBytes: 50}
	got, problems := Parse([]byte("---\nname: x\ndescription: d\n---\n"+strings.Repeat("x", 200)), "x", lim)
	if got != nil || !hasCode(problems, CodeFileTooLarge) {
		t.Fatalf("got %v, %v; want skip with %s", got, problems, CodeFileTooLarge)
	}
}

func TestFoldName(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{"PDF", "pdf"}, {"ſkill", "skill"}, {" pdf ", "pdf"}} {
		if FoldName(tc.a) != FoldName(tc.b) {
			t.Errorf("FoldName(%q) = %q, FoldName(%q) = %q; want equal", tc.a, FoldName(tc.a), tc.b, FoldName(tc.b))
		}
	}
}

func FuzzParse(f *testing.F) {
	seeds := []string{
		"---\nname: x\ndescription: d\n---\nbody",
		"\ufeff---\r\nname: x\r\ndescription: d\r\n---\r\n",
		"---\nname: x\n",
		"---\n---\n---\n",
		"---\nname: x\ndescription: Use when: asked\n---\n",
		"---\nname: !!binary aGVsbG8=\ndescription: !!python/object x\n---\n",
		"---\na: &a [1,2]\nb: [*a,*a]\nmetadata: *a\ndescription: *a\n---\n",
		"---\nname: x\ndescription: d\nmetadata: {a: {b: {c: [1, {d: e}]}}}\n---\n",
		"---\n\tname: x\n---\n",
		"---\nname: \x00\ndescription: \xff\xfe\n---\n",
		"---\nname: x\ndescription: d\ntriggers: [a, [b], {c: d}]\ntags: 5\nhidden: maybe\n---\n",
		"---\nname: x\ndescription: &x aaaa\ntags: [*x, *x, *x]\nextra: [[[[[[*x]]]]]]\n---\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, problems := Parse(data, "x", DefaultLimits)
		if fm, err := FrontmatterJSON(data, "x", DefaultLimits); err == nil {
			var obj map[string]any
			if json.Unmarshal(fm, &obj) != nil || obj["name"] == nil {
				t.Fatalf("FrontmatterJSON gave %s: not an object with a name", fm)
			}
		} else if got != nil && !strings.Contains(err.Error(), "cannot be written as JSON") {
			// Only values JSON has no form for (.inf, .nan) may part them.
			t.Fatalf("FrontmatterJSON failed (%v) on a file Parse accepted (problems %v)", err, codes(problems))
		}
		if got == nil && !skill.HasErrors(problems) {
			t.Fatalf("skipped without an error problem: %v", problems)
		}
		if got != nil {
			if skill.HasErrors(problems) {
				t.Fatalf("accepted with errors: %v", problems)
			}
			if got.Name == "" || got.Frontmatter.Description == "" {
				t.Fatalf("accepted without name or description: %+v", got)
			}
		}
	})
}
