package mcp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

func TestResourcesListPaged(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *View) { o.PageSize = 2 })
	ctx := context.Background()
	var uris []string
	pages := 0
	cursor := ""
	for {
		res, err := h.cs.ListResources(ctx, &mcpsdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(res.Resources) > 2 {
			t.Errorf("page of %d, want at most 2", len(res.Resources))
		}
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
			if r.MIMEType != "text/markdown" || r.Description == "" {
				t.Errorf("resource %+v", r)
			}
		}
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	// Hidden and disabled skills are not listed; "data tools" cannot be a
	// listed URI (Go's URL parser refuses an escaped space in a host) but
	// reads through the template.
	want := []string{"skill://internal-lint/SKILL.md", "skill://kubernetes-debugging/SKILL.md", "skill://learned-trick/SKILL.md",
		"skill://pdf-form-filling/SKILL.md", "skill://release-notes/SKILL.md"}
	if !slices.Equal(uris, want) || pages != 3 {
		t.Errorf("resources over %d pages = %v, want %v", pages, uris, want)
	}

	tmpls, err := h.cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tm := range tmpls.ResourceTemplates {
		got = append(got, tm.URITemplate)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"skill://{name}/SKILL.md", "skill://{name}/{+path}"}) {
		t.Errorf("templates = %v", got)
	}
}

func TestReadResource(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	read := func(uri string) *mcpsdk.ResourceContents {
		t.Helper()
		res, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			t.Fatalf("%s: contents %+v", uri, res.Contents)
		}
		return res.Contents[0]
	}
	// Every file reads as it is on disk, SKILL.md included, so that a host
	// can check it against the digests of skills/get.
	body := read("skill://pdf-form-filling/SKILL.md")
	if body.Text != h.cat.sources[key("pdf-form-filling", "")] || body.MIMEType != "text/markdown" {
		t.Errorf("SKILL.md = %q (%s)", body.Text, body.MIMEType)
	}
	ref := read("skill://pdf-form-filling/references/field-types.md")
	if ref.Text != string(h.cat.files[key("pdf-form-filling", "")]["references/field-types.md"]) {
		t.Errorf("file = %q", ref.Text)
	}
	py := read("skill://pdf-form-filling/scripts/fill.py")
	if py.Text != "print('fill')\n" || py.MIMEType != "text/x-python; charset=utf-8" {
		t.Errorf("script = %q (%s)", py.Text, py.MIMEType)
	}
	png := read("skill://pdf-form-filling/assets/logo.png")
	if png.Text != "" || len(png.Blob) != 6 || png.MIMEType != "image/png" {
		t.Errorf("binary = %+v", png)
	}
	// An empty file is an empty blob: an empty text would be left out, and
	// a client's schema needs one of the two.
	if empty := read("skill://data%20tools/notes/empty.txt"); empty.Blob == nil || len(empty.Blob) != 0 || empty.Text != "" {
		t.Errorf("empty file = %+v", empty)
	}
	spaced := read("skill://data%20tools/notes/a%20b.md")
	if !strings.Contains(spaced.Text, "spaced") {
		t.Errorf("escaped name and path = %q", spaced.Text)
	}

	// Not found, per the spec, with a message that says what is missing.
	for _, uri := range []string{"skill://no-such-skill/SKILL.md", "skill://pdf-form-filling/references/none.md", "file:///etc/passwd"} {
		_, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != mcpsdk.CodeResourceNotFound || !strings.HasPrefix(je.Message, "Resource not found") {
			t.Errorf("%s: err %v, want resource not found", uri, err)
		}
	}
	// Disabled skills are refused with the reason.
	_, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://legacy-ftp/SKILL.md"})
	if err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("disabled skill: %v", err)
	}
}

func TestReadResourceTraversal(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	uris := []string{
		"skill://pdf-form-filling/../kubernetes-debugging/SKILL.md",
		"skill://pdf-form-filling/references/../../x",
		"skill://pdf-form-filling/%2e%2e/%2e%2e/etc/passwd",
		"skill://pdf-form-filling/%2E%2E%2Fsecret",
		"skill://pdf-form-filling/%2Fetc%2Fpasswd",
		"skill://pdf-form-filling/references%5C..%5C..%5Cx",
		"skill://pdf-form-filling/a%00b",
		"skill://pdf-form-filling/C:%5Cwindows",
		"skill://pdf-form-filling/references//field-types.md",
		"skill://pdf-form-filling/./references/field-types.md",
		"skill://%2e%2e/SKILL.md/..",
		"skill://pdf-form-filling/SKILL.md?x=1",
		"skill://pdf-form-filling/%ff%fe",
		"skill://pdf%2Fform/SKILL.md",
	}
	for _, uri := range uris {
		_, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		// The SDK's resource-not-found shares this code, so the message
		// shows which check answered.
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(je.Message, "resource URI ") {
			t.Errorf("%q: err %v, want the URI refused as invalid params", uri, err)
		}
	}
	// A malformed escape does not even match the template: not found.
	_, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/references/%zz"})
	if err == nil || !strings.Contains(err.Error(), "Resource not found") {
		t.Errorf("malformed escape: %v", err)
	}
	h.cat.mu.Lock()
	defer h.cat.mu.Unlock()
	for _, l := range h.cat.loads {
		if strings.Contains(l.ResourcePath, "..") || strings.ContainsAny(l.ResourcePath, "\\\x00") || strings.HasPrefix(l.ResourcePath, "/") {
			t.Errorf("a refused URI reached the router: %+v", l)
		}
	}
}

func TestParseSkillURIRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, file string }{
		{"pdf-form-filling", "SKILL.md"},
		{"data tools", "notes/a b.md"},
		{"Ünïcode_skill", "réf/ç.md"},
		{"a~b.c", "x/y/z.txt"},
		{"100%", "50%/off?#.md"},
	} {
		uri := skillURI(c.name, c.file)
		name, file, err := parseSkillURI(uri)
		if err != nil || name != c.name || file != c.file {
			t.Errorf("%q -> %q -> (%q, %q, %v)", c.name+"/"+c.file, uri, name, file, err)
		}
	}
}

func TestPrompts(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	res, err := h.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
		if p.Description == "" {
			t.Errorf("prompt %s has no description", p.Name)
		}
	}
	// Hidden and disabled skills have no prompt, nor does a skill marked
	// user-invocable: false; release-notes (disable-model-invocation) has
	// one: users invoke prompts.
	want := []string{"data tools", "kubernetes-debugging", "learned-trick", "pdf-form-filling", "release-notes"}
	if !slices.Equal(names, want) {
		t.Errorf("prompts = %v, want %v", names, want)
	}
	got, err := h.cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "release-notes"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := h.cat.lookup("release-notes", "")
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" {
		t.Fatalf("messages = %+v", got.Messages)
	}
	if tc, ok := got.Messages[0].Content.(*mcpsdk.TextContent); !ok || tc.Text != fakeFrame("skill_content", s, "", h.cat.bodies[key(s.Name, "")]) {
		t.Errorf("prompt text is not exactly the router's framed body: %+v", got.Messages[0].Content)
	}
	if got.Description != s.Description() {
		t.Errorf("description %q", got.Description)
	}
	for _, name := range []string{"internal-lint", "secret-helper", "nope"} {
		if _, err := h.cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: name}); err == nil {
			t.Errorf("prompt %s served", name)
		}
	}
}

func TestPromptsOfAgentView(t *testing.T) {
	h := newHarness(t, func(_ *Options, v *View) { v.Agent = "reviewer" })
	res, err := h.cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Prompts, func(p *mcpsdk.Prompt) bool { return p.Name == "reviewer-checklist" }) {
		t.Errorf("the reviewer view lacks its own skill: %v", res.Prompts)
	}
	var out findOutput
	h.ok(toolFind, map[string]any{"task": "review pull requests"}, &out)
	if len(out.Candidates) == 0 || out.Candidates[0].Name != "reviewer-checklist" {
		t.Errorf("find_skills does not default to the view's agent: %+v", out)
	}
}

func TestListChangedAfterGeneration(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.cat.publish(func(c *catalog) {
		c.skills = slices.DeleteFunc(c.skills, func(s *skill.Skill) bool { return s.Name == "kubernetes-debugging" })
		c.skills = append(c.skills, newSkill("csv-cleanup", "Clean CSV files"))
		c.bodies[key("csv-cleanup", "")] = "Trim cells.\n"
	})
	h.waitChanged("prompts", "resources")
	h.quiet(100 * time.Millisecond) // one notification per list, and none for tools

	prompts, err := h.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "csv-cleanup") || slices.Contains(names, "kubernetes-debugging") {
		t.Errorf("prompts after the change = %v", names)
	}
	if _, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://csv-cleanup/SKILL.md"}); err != nil {
		t.Errorf("new skill does not read: %v", err)
	}
	res, _ := h.cs.ListResources(ctx, nil)
	for _, r := range res.Resources {
		if r.URI == "skill://kubernetes-debugging/SKILL.md" {
			t.Error("removed skill still listed")
		}
	}

	// A generation that changes nothing this view sees is silent.
	h.cat.publish(nil)
	h.quiet(200 * time.Millisecond)

	// A changed description is a changed list.
	h.cat.publish(func(c *catalog) {
		for _, s := range c.skills {
			if s.Name == "pdf-form-filling" {
				s.Frontmatter.Description = "Fill PDF forms, now with signatures"
			}
		}
	})
	h.waitChanged("prompts", "resources")
}
