package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// Limits on what one upstream tool may bring into the index. Tool metadata
// is untrusted text: it is cut to these lengths, stripped of control and
// invisible formatting characters, and never interpreted.
const (
	// MaxDescriptionChars caps a tool's description.
	MaxDescriptionChars = 2048
	// MaxTitleChars caps a title.
	MaxTitleChars = 200
	// MaxParamDescriptionChars caps one parameter's description.
	MaxParamDescriptionChars = 512
	// MaxParams caps the parameters indexed per tool.
	MaxParams = 100
	// MaxUpstreamNameBytes is the longest upstream tool name accepted.
	MaxUpstreamNameBytes = 512
	// MaxSchemaBytes caps a tool's input schema; a larger one leaves the
	// tool out (hosts would pay for it on every turn).
	MaxSchemaBytes = 64 << 10
	// maxDiagnostics caps the findings kept per server.
	maxDiagnostics = 50
)

// wireTool is a tool as tools/list sends it; fields the router does not use
// are ignored.
type wireTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  *struct {
		Title           string `json:"title"`
		ReadOnlyHint    bool   `json:"readOnlyHint"`
		IdempotentHint  bool   `json:"idempotentHint"`
		DestructiveHint *bool  `json:"destructiveHint"`
		OpenWorldHint   *bool  `json:"openWorldHint"`
	} `json:"annotations"`
}

// diagnostics collects findings about a server's tools, capped.
type diagnostics struct {
	list    []string
	dropped int
}

func (d *diagnostics) addf(format string, args ...any) {
	if len(d.list) < maxDiagnostics {
		d.list = append(d.list, fmt.Sprintf(format, args...))
		return
	}
	d.dropped++
}

func (d *diagnostics) result() []string {
	if d.dropped > 0 {
		return append(d.list, fmt.Sprintf("and %d more findings", d.dropped))
	}
	return d.list
}

// toolSet is the outcome of normalising one listing.
type toolSet struct {
	tools                 []*skill.Skill // sorted by entry name
	listed, filtered, bad int
	diag                  diagnostics
	digest                string
}

// normalize turns a server's raw tool list into index entries: it drops
// tools that cannot be served (not an object, no name, a name over
// MaxUpstreamNameBytes, a schema that is not a JSON object, duplicates),
// applies the allow and deny lists, cuts and cleans every text, maps names
// (EntryNames) and hashes each definition. Every drop and cut is a
// diagnostic.
func normalize(cfg *ServerConfig, raw []json.RawMessage, truncated int) *toolSet {
	ts := &toolSet{listed: len(raw) + truncated}
	if truncated > 0 {
		ts.diag.addf("the server lists more than %d tools (max_tools): the first %d are served, the rest left out", cfg.MaxTools, cfg.MaxTools)
	}
	var keep []keptTool
	seen := map[string]int{}
	for i, r := range raw {
		if k, ok := ts.admit(cfg, i+1, r, seen); ok {
			keep = append(keep, k)
		}
	}
	ts.addEntries(cfg, keep)
	return ts
}

// keptTool is a listed tool that normalize serves, with the schema to serve.
type keptTool struct {
	w      wireTool
	schema json.RawMessage
}

// admit decodes and checks the n-th raw tool, counting and explaining it in
// ts when it is left out; seen holds the names of the tools before it.
func (ts *toolSet) admit(cfg *ServerConfig, n int, r json.RawMessage, seen map[string]int) (keptTool, bool) {
	var w wireTool
	if err := json.Unmarshal(r, &w); err != nil {
		ts.bad++
		ts.diag.addf("tool #%d is not a tool object (%s); left out", n, clipErr(err))
		return keptTool{}, false
	}
	switch {
	case w.Name == "":
		ts.bad++
		ts.diag.addf("tool #%d has no name; left out", n)
		return keptTool{}, false
	case len(w.Name) > MaxUpstreamNameBytes || !utf8.ValidString(w.Name):
		ts.bad++
		ts.diag.addf("tool #%d: its name is %d bytes or not UTF-8 (the limit is %d); left out", n, len(w.Name), MaxUpstreamNameBytes)
		return keptTool{}, false
	}
	shown := quote(w.Name)
	if first, dup := seen[w.Name]; dup {
		ts.bad++
		ts.diag.addf("tool %s is listed again as #%d (first #%d); the first is served", shown, n, first)
		return keptTool{}, false
	}
	seen[w.Name] = n
	if !cfg.toolAllowed(w.Name) {
		ts.filtered++
		return keptTool{}, false
	}
	schema, problem := checkSchema(w.InputSchema)
	if problem != "" {
		ts.bad++
		ts.diag.addf("tool %s: %s; left out", shown, problem)
		return keptTool{}, false
	}
	if len(w.InputSchema) == 0 || string(bytes.TrimSpace(w.InputSchema)) == "null" {
		ts.diag.addf("tool %s has no input schema; served with an empty object schema", shown)
	}
	return keptTool{w, schema}, true
}

// addEntries makes the index entries of the kept tools, sorted by name, and
// the digest of the set.
func (ts *toolSet) addEntries(cfg *ServerConfig, keep []keptTool) {
	names := make([]string, len(keep))
	for i, k := range keep {
		names[i] = k.w.Name
	}
	entryNames := EntryNames(cfg.Name, names)
	h := sha256.New()
	for _, k := range keep {
		e := entry(cfg, k.w, k.schema, entryNames[k.w.Name], &ts.diag)
		ts.tools = append(ts.tools, e)
	}
	sort.Slice(ts.tools, func(i, j int) bool { return ts.tools[i].Name < ts.tools[j].Name })
	enc := json.NewEncoder(h)
	_ = enc.Encode([]any{cfg.Name, cfg.Trusted(), cfg.Agents})
	for _, t := range ts.tools {
		_ = enc.Encode([]string{t.Name, t.ContentHash})
	}
	ts.digest = hex.EncodeToString(h.Sum(nil))
}

// checkSchema returns the schema to serve: the raw bytes when they are a
// JSON object whose "type", if any, is "object"; an empty object schema when
// there is none. Otherwise it says what is wrong.
func checkSchema(raw json.RawMessage) (json.RawMessage, string) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return json.RawMessage(`{"type":"object"}`), ""
	}
	if len(t) > MaxSchemaBytes {
		return nil, fmt.Sprintf("its input schema is %d bytes (the limit is %d)", len(t), MaxSchemaBytes)
	}
	if t[0] != '{' {
		kind := "a " + jsonKind(t[0])
		return nil, fmt.Sprintf("its input schema is %s, not a JSON object", kind)
	}
	var s struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(t, &s); err != nil {
		return nil, fmt.Sprintf("its input schema does not parse (%s)", clipErr(err))
	}
	if len(s.Type) > 0 {
		var typ string
		if json.Unmarshal(s.Type, &typ) != nil || typ != "object" {
			return nil, fmt.Sprintf("its input schema's type is %s, not \"object\"", skill.Clip(string(s.Type), 40))
		}
	}
	return json.RawMessage(t), ""
}

func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "array"
	case c == '"':
		return "string"
	case c == 't' || c == 'f':
		return "boolean"
	case c == '-' || c >= '0' && c <= '9':
		return "number"
	}
	return "value that is not JSON"
}

// entry builds the index entry of one tool.
func entry(cfg *ServerConfig, w wireTool, schema json.RawMessage, name string, diag *diagnostics) *skill.Skill {
	shown := quote(w.Name)
	if name != cfg.Name+"."+w.Name {
		diag.addf("tool %s has a name hosts refuse (spaces, look-alike or control characters, or too long); served as %s", shown, name)
	}
	desc, cut := Clean(w.Description, MaxDescriptionChars)
	if cut {
		diag.addf("tool %s: its description is %d characters; cut to %d", shown, utf8.RuneCountInString(w.Description), MaxDescriptionChars)
	}
	title, _ := Clean(w.Title, MaxTitleChars)
	t := &skill.Tool{
		Server: cfg.Name, Name: w.Name, Title: title, InputSchema: schema,
		Params: params(schema), Trusted: cfg.Trusted(), Agents: cfg.Agents,
	}
	if out := bytes.TrimSpace(w.OutputSchema); len(out) > 0 && string(out) != "null" {
		if _, problem := checkSchema(out); problem != "" {
			diag.addf("tool %s: its output schema is not used (%s)", shown, strings.Replace(problem, "input schema", "output schema", 1))
		} else {
			t.Results = params(out)
		}
	}
	if a := w.Annotations; a != nil {
		t.Hints = skill.ToolHints{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint, Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
		t.Hints.Title, _ = Clean(a.Title, MaxTitleChars)
		if t.Title == "" {
			t.Title = t.Hints.Title
		}
	}
	s := &skill.Skill{
		Name: name, Kind: skill.EntryTool, Tool: t,
		Frontmatter: skill.Frontmatter{Name: name, Description: desc},
		Root:        skill.Root{Kind: skill.KindServer, Display: cfg.Name},
		RelPath:     w.Name,
	}
	s.ContentHash = DefinitionHash(t, desc, w.OutputSchema)
	s.FrontmatterHash = s.ContentHash
	s.Size = int64(len(schema) + len(desc) + len(title))
	return s
}

// DefinitionHash is the hex sha256 of what defines a tool: its upstream
// name, title, description (as served), input and output schemas and
// hints. Allowlist pins name it: a server that changes a tool's definition
// no longer matches a pinned entry.
func DefinitionHash(t *skill.Tool, description string, outputSchema json.RawMessage) string {
	out := bytes.TrimSpace(outputSchema)
	if len(out) == 0 {
		out = []byte("null")
	}
	b, _ := json.Marshal([]any{t.Name, t.Title, description, t.InputSchema, json.RawMessage(out), t.Hints})
	return skill.Hash(b)
}

// params reads the top-level properties of an object schema in the order
// they appear, with cleaned descriptions and the required flags.
func params(schema json.RawMessage) []skill.ToolParam {
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(s.Properties))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []skill.ToolParam
	for dec.More() && len(out) < MaxParams {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		key, _ := tok.(string)
		var prop struct {
			Description string          `json:"description"`
			Title       string          `json:"title"`
			Type        json.RawMessage `json:"type"`
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out
		}
		_ = json.Unmarshal(raw, &prop)
		p := skill.ToolParam{}
		p.Name, _ = Clean(key, 128)
		desc := prop.Description
		if desc == "" {
			desc = prop.Title
		}
		p.Description, _ = Clean(desc, MaxParamDescriptionChars)
		var typ string
		if json.Unmarshal(prop.Type, &typ) == nil {
			p.Type = typ
		}
		for _, r := range s.Required {
			if r == key {
				p.Required = true
			}
		}
		if p.Name != "" {
			out = append(out, p)
		}
	}
	return out
}

// Clean normalises untrusted text for the index: control characters and
// invisible formatting characters (bidirectional overrides, zero-width
// characters, Unicode tags) become spaces, runs of spaces within a line
// collapse, at most two newlines separate paragraphs, and the text is cut
// to max characters with "…". It reports whether it cut.
func Clean(s string, max int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space, newlines := false, 0
	n, cut := 0, false
	for _, r := range s {
		switch {
		case r == '\n':
			space = false
			newlines++
			continue
		case r == '\t' || r == '\r' || unicode.IsSpace(r) || invisible(r):
			space = true
			continue
		}
		if n >= max {
			cut = true
			break
		}
		if b.Len() > 0 {
			switch {
			case newlines > 0:
				b.WriteString(strings.Repeat("\n", min(newlines, 2)))
				n += min(newlines, 2)
			case space:
				b.WriteByte(' ')
				n++
			}
		}
		space, newlines = false, 0
		b.WriteRune(r)
		n++
	}
	out := b.String()
	if cut {
		out = strings.TrimSpace(out) + "…"
	}
	return out, cut
}

// invisible reports control and formatting characters that hide or reorder
// text: C0/C1 controls, bidirectional marks and overrides, zero-width
// characters, the byte order mark and Unicode tag characters.
func invisible(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x200e || r == 0x200f || r == 0x2060 || r == 0xfeff:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// quote shows an untrusted name in a diagnostic: quoted, escaped, clipped.
func quote(s string) string { return fmt.Sprintf("%q", skill.Clip(s, 80)) }

func clipErr(err error) string {
	if err == io.ErrUnexpectedEOF {
		return "truncated JSON"
	}
	return skill.Clip(err.Error(), 120)
}
