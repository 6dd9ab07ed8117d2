package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEntryNames(t *testing.T) {
	long := strings.Repeat("a", 200)
	names := []string{"read_file", "get-sum", "ns.tool", "has space", "reаd_file" /* Cyrillic а */, "tab\there", long, "ünïcode", "a/b:c"}
	got := EntryNames("fs", names)
	want := map[string]string{"read_file": "fs.read_file", "get-sum": "fs.get-sum", "ns.tool": "fs.ns.tool"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q -> %q, want %q", k, got[k], v)
		}
	}
	seen := map[string]string{}
	for _, n := range names {
		e := got[n]
		if !strings.HasPrefix(e, "fs.") || len(e) > 128 || !safeName(e) {
			t.Errorf("%q -> %q: not a safe entry name of at most 128 bytes", n, e)
		}
		if prev, dup := seen[e]; dup {
			t.Errorf("%q and %q both map to %q", prev, n, e)
		}
		seen[e] = n
	}
	if got["reаd_file"] == got["read_file"] || !strings.HasPrefix(got["reаd_file"], "fs.re_d_file_") {
		t.Errorf("look-alike maps to %q; want a rewritten name that differs from fs.read_file", got["reаd_file"])
	}
	// Stable: the same name maps the same way whatever else is listed.
	again := EntryNames("fs", []string{"has space"})
	if again["has space"] != got["has space"] {
		t.Errorf("mapping changed with the list: %q then %q", got["has space"], again["has space"])
	}
	// A kept name that looks like a rewritten one wins; the rewritten one
	// takes more digits.
	clash := EntryNames("fs", []string{"has space", strings.TrimPrefix(got["has space"], "fs.")})
	if clash["has space"] == got["has space"] || len(clash["has space"]) != len(got["has space"])+4 {
		t.Errorf("collision: %q; want %q with four more digits", clash["has space"], got["has space"])
	}
}

func TestClean(t *testing.T) {
	for _, c := range []struct {
		in, want string
		max      int
		cut      bool
	}{
		{"plain text", "plain text", 100, false},
		{"  a\t\tb  \r\n\n\n\nc ", "a b\n\nc", 100, false},
		{"ignore\u202eprevious\u200binstructions\x00\x1b[31m", "ignore previous instructions [31m", 100, false},
		{"tag\U000E0041chars", "tag chars", 100, false},
		{"abcdef", "abc…", 3, true},
		{"\xff\xfebad", "\uFFFDbad", 100, false},
	} {
		got, cut := Clean(c.in, c.max)
		if got != c.want || cut != c.cut {
			t.Errorf("Clean(%q, %d) = %q, %v; want %q, %v", c.in, c.max, got, cut, c.want, c.cut)
		}
	}
}

func rawTools(t *testing.T, tools ...any) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, v := range tools {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestNormalize(t *testing.T) {
	obj := map[string]any{"type": "object", "properties": map[string]any{
		"path":  map[string]any{"type": "string", "description": "the file\u202e to read"},
		"lines": map[string]any{"type": "integer"},
	}, "required": []string{"path"}}
	huge := strings.Repeat("word ", 1<<20/5)
	cfg := &ServerConfig{Name: "fs", DisabledTools: []string{"delete_*"}, EnabledTools: []string{"*"}, Trust: TrustTrusted}
	d := cfg.withDefaults()
	raw := rawTools(t,
		map[string]any{"name": "read_file", "description": "Read a file", "inputSchema": obj, "title": "Read"},
		map[string]any{"name": "read_file", "description": "again", "inputSchema": obj},
		map[string]any{"name": "delete_file", "description": "gone", "inputSchema": obj},
		map[string]any{"name": "has space", "description": "spaced", "inputSchema": obj},
		map[string]any{"name": "arr", "inputSchema": []int{1}},
		map[string]any{"name": "str", "inputSchema": "object"},
		map[string]any{"name": "typed", "inputSchema": map[string]any{"type": "string"}},
		map[string]any{"name": "noschema", "description": "none"},
		map[string]any{"name": "huge", "description": huge, "inputSchema": obj},
		map[string]any{"description": "nameless"},
		"not an object",
	)
	ts := normalize(&d, raw, 0)
	var names []string
	for _, e := range ts.tools {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); !strings.HasPrefix(got, "fs.has_space_") || !strings.Contains(got, "fs.huge,fs.noschema,fs.read_file") {
		t.Fatalf("served %s", got)
	}
	if ts.listed != 11 || ts.filtered != 1 || ts.bad != 6 || len(ts.tools) != 4 {
		t.Errorf("listed %d filtered %d bad %d served %d; want 11, 1, 6, 4", ts.listed, ts.filtered, ts.bad, len(ts.tools))
	}
	diag := strings.Join(ts.diag.result(), "\n")
	for _, want := range []string{
		`"read_file" is listed again as #2 (first #1)`, `"arr": its input schema is a array, not a JSON object`,
		`"str": its input schema is a string`, `"typed": its input schema's type is "string"`,
		`"noschema" has no input schema`, `"huge": its description is`, `tool #10 has no name`,
		`tool #11 is not a tool object`, `"has space" has a name hosts refuse`,
	} {
		if !strings.Contains(diag, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, diag)
		}
	}
	for _, e := range ts.tools {
		switch e.Tool.Name {
		case "read_file":
			if string(e.Tool.InputSchema) != string(raw[0][strings.Index(string(raw[0]), `{"properties"`):strings.LastIndex(string(raw[0]), `,"name"`)]) {
				t.Errorf("schema not verbatim: %s", e.Tool.InputSchema)
			}
			if len(e.Tool.Params) != 2 || e.Tool.Params[0].Name != "lines" || !e.Tool.Params[1].Required || e.Tool.Params[1].Description != "the file to read" {
				t.Errorf("params %+v", e.Tool.Params)
			}
			if !e.Trusted() || e.Tool.Title != "Read" || e.ContentHash == "" {
				t.Errorf("entry %+v", e)
			}
		case "huge":
			if n := utf8.RuneCountInString(e.Description()); n != MaxDescriptionChars+1 {
				t.Errorf("huge description kept %d characters", n)
			}
		case "noschema":
			if string(e.Tool.InputSchema) != `{"type":"object"}` {
				t.Errorf("noschema schema %s", e.Tool.InputSchema)
			}
		}
	}
	// The digest changes with the definitions, the trust and the agents.
	again := normalize(&d, raw, 0)
	d2 := d
	d2.Trust = TrustUntrusted
	other := normalize(&d2, raw, 0)
	if again.digest != ts.digest || other.digest == ts.digest {
		t.Errorf("digests: %s %s %s", ts.digest, again.digest, other.digest)
	}
}

func TestNormalizeCapsDiagnostics(t *testing.T) {
	cfg := (&ServerConfig{Name: "x"}).withDefaults()
	var tools []any
	for i := range 200 {
		tools = append(tools, map[string]any{"name": fmt.Sprint("t", i%2), "inputSchema": map[string]any{"type": "object"}})
	}
	ts := normalize(&cfg, rawTools(t, tools...), 0)
	res := ts.diag.result()
	if len(ts.tools) != 2 || len(res) != maxDiagnostics+1 || !strings.HasPrefix(res[maxDiagnostics], "and 148 more") {
		t.Errorf("served %d, %d diagnostics, last %q", len(ts.tools), len(res), res[len(res)-1])
	}
}

func TestValidate(t *testing.T) {
	no := false
	for _, c := range []struct {
		cfg  ServerConfig
		want string
	}{
		{ServerConfig{Name: "ok", Command: "srv"}, ""},
		{ServerConfig{Name: "ok", URL: "https://mcp.example.com/mcp", BearerToken: &Value{FromEnv: "TOKEN"}}, ""},
		{ServerConfig{Name: "off", Enabled: &no}, "set command"},
		{ServerConfig{Name: "a.b", Command: "x"}, "server name \"a.b\""},
		{ServerConfig{Name: "x", Command: "srv", URL: "http://h/"}, "url, headers and bearer_token are for transport http"},
		{ServerConfig{Name: "x", URL: "ftp://h/"}, "want an http:// or https:// URL"},
		{ServerConfig{Name: "x", URL: "https://u:p@h/"}, "holds credentials"},
		{ServerConfig{Name: "x", URL: "http://mcp.example.com/", Headers: map[string]Value{"X-Team": {Literal: "a"}}}, "clear text"},
		{ServerConfig{Name: "x", URL: "http://127.0.0.1:9/", Headers: map[string]Value{"X-Team": {Literal: "a"}}}, ""},
		{ServerConfig{Name: "x", Command: "srv", Env: map[string]Value{"GITHUB_TOKEN": {Literal: "ghp_x"}}}, "looks like a secret"},
		{ServerConfig{Name: "x", URL: "https://h/", Headers: map[string]Value{"Authorization": {Literal: "Bearer x"}}}, "looks like a secret"},
		{ServerConfig{Name: "x", Command: "srv", Env: map[string]Value{"A": {Literal: "a", FromEnv: "B"}}}, "set one of"},
		{ServerConfig{Name: "x", Command: "srv", Env: map[string]Value{"A": {FromFile: "rel"}}}, "not absolute"},
		{ServerConfig{Name: "x", Command: "srv", EnabledTools: []string{"[bad"}}, "not a name pattern"},
		{ServerConfig{Name: "x", Command: "srv", Trust: "yes"}, "want trusted or untrusted"},
		{ServerConfig{Name: "x", Command: "srv", Agents: []string{"bad agent"}}, "not an agent name"},
		{ServerConfig{Name: "x", Command: "srv", MaxTools: -1}, "max_tools"},
		{ServerConfig{Name: "x", Transport: "sse", URL: "https://h/"}, "want stdio or http"},
	} {
		err := c.cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		case err != nil && !strings.HasPrefix(err.Error(), "mcp_servers"):
			t.Errorf("error does not name the setting: %v", err)
		}
	}
}

func TestToolAllowed(t *testing.T) {
	cfg := &ServerConfig{EnabledTools: []string{"read_*", "write_file"}, DisabledTools: []string{"read_secret*"}}
	for name, want := range map[string]bool{"read_file": true, "write_file": true, "read_secrets": false, "delete": false} {
		if got := cfg.toolAllowed(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
