package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// entryJSON is a Skills extension entry as a client decodes it.
type entryJSON struct {
	URI         string         `json:"uri"`
	Frontmatter map[string]any `json:"frontmatter"`
	Resources   []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"resources"`
}

func TestSkillsExtensionCapability(t *testing.T) {
	h := newHarness(t)
	caps := h.cs.InitializeResult().Capabilities
	ext, ok := caps.Extensions[skillsExtension].(map[string]any)
	if !ok || ext["directoryRead"] != true || caps.Resources == nil || !caps.Resources.Subscribe || caps.Completions == nil {
		t.Errorf("capabilities %+v, extensions %v", caps, caps.Extensions)
	}
	// Without group load there are no resources, so no extension either.
	h = newHarness(t, func(_ *Options, v *View) { v.Features = FeatureFind | FeatureList })
	if caps := h.cs.InitializeResult().Capabilities; caps.Extensions != nil || caps.Resources != nil || caps.Completions != nil {
		t.Errorf("a view without load declares %+v", caps)
	}
}

// TestSkillsListAndGet pages through skills/list, then reads every file of
// every entry through its manifest and checks the digests, as a host does.
func TestSkillsListAndGet(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *View) { o.PageSize = 2 })
	ctx := context.Background()
	entries, pages := listEntries(t, h)
	var names []string
	for _, e := range entries {
		names = append(names, e.Frontmatter["name"].(string))
		checkEntry(t, h, e)
	}
	// Hidden and disabled skills and other agents' skills are not served.
	want := []string{"data tools", "internal-lint", "kubernetes-debugging", "learned-trick", "pdf-form-filling", "release-notes"}
	if !slices.Equal(names, want) || pages != 3 {
		t.Errorf("skills/list over %d pages: %v, want %v", pages, names, want)
	}

	var got struct{ Skill entryJSON }
	if err := h.ext(methodSkillsGet, rawParams{URI: "skill://pdf-form-filling/SKILL.md"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Skill.Resources) != 4 || got.Skill.Frontmatter["description"] != "Fill in PDF forms from JSON data" {
		t.Errorf("skills/get: %+v", got.Skill)
	}
	for uri, why := range map[string]string{
		"skill://secret-helper/SKILL.md":                "hidden",
		"skill://legacy-ftp/SKILL.md":                   "disabled",
		"skill://reviewer-checklist/SKILL.md":           "no skill named",
		"skill://pdf-form-filling/scripts/fill.py":      "SKILL.md",
		"skill://pdf-form-filling/../x/SKILL.md":        "leaves the skill folder",
		"https://example.com/pdf-form-filling/SKILL.md": "not a skill:// URI",
	} {
		err := h.ext(methodSkillsGet, rawParams{URI: uri}, &got)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, why) {
			t.Errorf("skills/get %s: %v, want -32602 saying %q", uri, err, why)
		}
	}
	// A hidden skill's files are not served as resources either.
	if _, err := h.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://secret-helper/SKILL.md"}); err == nil {
		t.Error("a hidden skill's SKILL.md was served")
	}
}

// listEntries pages through skills/list, checking each page's shape.
func listEntries(t *testing.T, h *harness) (entries []entryJSON, pages int) {
	t.Helper()
	cursor := ""
	for {
		var page struct {
			ResultType string      `json:"resultType"`
			Skills     []entryJSON `json:"skills"`
			NextCursor string      `json:"nextCursor"`
			TTLMs      *int        `json:"ttlMs"`
			CacheScope string      `json:"cacheScope"`
		}
		if err := h.ext(methodSkillsList, rawParams{Cursor: cursor}, &page); err != nil {
			t.Fatal(err)
		}
		pages++
		if page.ResultType != "complete" || page.TTLMs == nil || page.CacheScope != "private" || page.Skills == nil {
			t.Errorf("page %d: %+v", pages, page)
		}
		entries = append(entries, page.Skills...)
		if cursor = page.NextCursor; cursor == "" {
			return entries, pages
		}
	}
}

// checkEntry checks an entry's URIs and reads each of its files, checking
// its size and digest.
func checkEntry(t *testing.T, h *harness, e entryJSON) {
	t.Helper()
	name := e.Frontmatter["name"].(string)
	if e.URI != skillURI(name, skill.FileName) {
		t.Errorf("%s: uri %s", name, e.URI)
	}
	if len(e.Resources) == 0 || e.Resources[0].URI != e.URI {
		t.Errorf("%s: the manifest does not start with SKILL.md: %+v", name, e.Resources)
	}
	for _, r := range e.Resources {
		res, err := h.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: r.URI})
		if err != nil {
			t.Fatalf("%s: %v", r.URI, err)
		}
		data := res.Contents[0].Blob
		if data == nil {
			data = []byte(res.Contents[0].Text)
		}
		sum := sha256.Sum256(data)
		if r.Digest != "sha256:"+hex.EncodeToString(sum[:]) || r.Size != int64(len(data)) {
			t.Errorf("%s: read %d bytes %x; the manifest says %d %s", r.URI, len(data), sum, r.Size, r.Digest)
		}
	}
}

// TestSkillsScopedToAgent: a view for agent reviewer lists, gets and reads
// its own skill, which the global view does not see.
func TestSkillsScopedToAgent(t *testing.T) {
	h := newHarness(t, func(_ *Options, v *View) { v.Agent = "reviewer" })
	var page struct{ Skills []entryJSON }
	if err := h.ext(methodSkillsList, rawParams{}, &page); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(page.Skills, func(e entryJSON) bool { return e.URI == "skill://reviewer-checklist/SKILL.md" }) {
		t.Errorf("reviewer does not list its skill: %+v", page.Skills)
	}
	var got struct{ Skill entryJSON }
	if err := h.ext(methodSkillsGet, rawParams{URI: "skill://reviewer-checklist/SKILL.md"}, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := h.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://reviewer-checklist/SKILL.md"}); err != nil {
		t.Error(err)
	}
}

func TestDirectoryRead(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *View) { o.PageSize = 2 })
	list := func(uri string) []*mcpsdk.Resource {
		t.Helper()
		var out []*mcpsdk.Resource
		cursor := ""
		for {
			var page struct {
				Resources  []*mcpsdk.Resource
				NextCursor string
			}
			if err := h.ext(methodDirectoryRead, rawParams{URI: uri, Cursor: cursor}, &page); err != nil {
				t.Fatalf("%s: %v", uri, err)
			}
			out = append(out, page.Resources...)
			if cursor = page.NextCursor; cursor == "" {
				return out
			}
		}
	}
	var got []string
	for _, r := range list("skill://pdf-form-filling") {
		got = append(got, r.Name+" "+r.MIMEType+" "+r.URI)
	}
	want := []string{
		"SKILL.md text/markdown skill://pdf-form-filling/SKILL.md",
		"assets inode/directory skill://pdf-form-filling/assets",
		"references inode/directory skill://pdf-form-filling/references",
		"scripts inode/directory skill://pdf-form-filling/scripts",
	}
	if !slices.Equal(got, want) {
		t.Errorf("root: %q\nwant %q", got, want)
	}
	if refs := list("skill://pdf-form-filling/references"); len(refs) != 1 || refs[0].URI != "skill://pdf-form-filling/references/field-types.md" ||
		refs[0].Size == 0 {
		t.Errorf("references: %+v", refs)
	}
	// A listing names a script's type as reading it does.
	if scripts := list("skill://pdf-form-filling/scripts"); len(scripts) == 0 || scripts[0].MIMEType != "text/x-python; charset=utf-8" {
		t.Errorf("scripts: %+v", scripts)
	}
	for _, uri := range []string{"skill://pdf-form-filling/SKILL.md", "skill://pdf-form-filling/nothing", "skill://secret-helper", "skill://no-such"} {
		var page struct{}
		err := h.ext(methodDirectoryRead, rawParams{URI: uri}, &page)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %v, want -32602", uri, err)
		}
	}
}

func TestCompletion(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	complete := func(ref *mcpsdk.CompleteReference, arg, value string, context map[string]string) []string {
		t.Helper()
		p := &mcpsdk.CompleteParams{Ref: ref, Argument: mcpsdk.CompleteParamsArgument{Name: arg, Value: value}}
		if context != nil {
			p.Context = &mcpsdk.CompleteContext{Arguments: context}
		}
		res, err := h.cs.Complete(ctx, p)
		if err != nil {
			t.Fatalf("%s=%q: %v", arg, value, err)
		}
		return res.Completion.Values
	}
	file := &mcpsdk.CompleteReference{Type: "ref/resource", URI: templateFile}
	if got := complete(&mcpsdk.CompleteReference{Type: "ref/resource", URI: templateSkill}, "name", "P", nil); !slices.Equal(got, []string{"pdf-form-filling"}) {
		t.Errorf("names from P: %v", got)
	}
	if got := complete(file, "name", "", nil); slices.Contains(got, "secret-helper") || slices.Contains(got, "reviewer-checklist") || len(got) != 6 {
		t.Errorf("every name: %v", got)
	}
	if got := complete(file, "path", "s", map[string]string{"name": "pdf-form-filling"}); !slices.Equal(got, []string{"scripts/fill.py"}) {
		t.Errorf("paths from s: %v", got)
	}
	if got := complete(file, "path", "", map[string]string{"name": "secret-helper"}); len(got) != 0 {
		t.Errorf("a hidden skill's paths: %v", got)
	}
	if got := complete(&mcpsdk.CompleteReference{Type: "ref/prompt", Name: "pdf-form-filling"}, "x", "", nil); len(got) != 0 {
		t.Errorf("a prompt's arguments: %v", got)
	}
}

// TestResourceSubscription: a subscriber of a skill hears when a file of it
// changes, and not after unsubscribing.
func TestResourceSubscription(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *View) { o.PollInterval = 20 * time.Millisecond })
	ctx := context.Background()
	for _, uri := range []string{"skill://pdf-form-filling/SKILL.md", "skill://pdf-form-filling/scripts/fill.py", "test://not-a-skill"} {
		if err := h.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
	}
	// On protocol 2026-07-28 a subscription rides the session's
	// subscriptions/listen stream, registered after Subscribe returns and
	// dropped after Unsubscribe returns, once the stream's cancellation
	// reaches the server.
	vw := h.front.viewList()[0]
	waitSubscribed := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(vw.subscribedURIs()) != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("subscriptions registered: %v, want %d", vw.subscribedURIs(), want)
			}
		}
	}
	waitSubscribed(3)
	h.cat.mu.Lock()
	h.cat.files[key("pdf-form-filling", "")]["references/field-types.md"] = []byte("# Field types, edited\n")
	h.cat.mu.Unlock()
	// The edit keeps the listing as it was: no new generation, found by
	// polling. Only the skill's subscription hears of it.
	select {
	case uri := <-h.updated:
		if uri != "skill://pdf-form-filling/SKILL.md" {
			t.Errorf("resources/updated for %s", uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated after a file of a subscribed skill changed")
	}
	if err := h.cs.Unsubscribe(ctx, &mcpsdk.UnsubscribeParams{URI: "skill://pdf-form-filling/SKILL.md"}); err != nil {
		t.Fatal(err)
	}
	waitSubscribed(2)
	h.cat.mu.Lock()
	h.cat.files[key("pdf-form-filling", "")]["scripts/fill.py"] = []byte("print('filled')\n")
	h.cat.mu.Unlock()
	select {
	case uri := <-h.updated:
		if uri != "skill://pdf-form-filling/scripts/fill.py" {
			t.Errorf("resources/updated for %s", uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated after a subscribed file changed")
	}
	select {
	case uri := <-h.updated:
		t.Errorf("resources/updated for %s after unsubscribing", uri)
	case <-time.After(100 * time.Millisecond):
	}
}
