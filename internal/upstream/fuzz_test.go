package upstream

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzNormalize feeds arbitrary tools/list entries to the normaliser: it must
// not panic, every served entry must have a safe unique name, a JSON object
// schema and clean bounded text, and every input is served, filtered or
// dropped.
func FuzzNormalize(f *testing.F) {
	f.Add(`{"name":"read_file","description":"Read","inputSchema":{"type":"object","properties":{"p":{"description":"x"}}}}`, "has space")
	f.Add(`{"name":"x","inputSchema":[1]}`, "x")
	f.Add(`{"name":"\u0000\u202e","description":"\u001b[31m","inputSchema":null}`, "")
	f.Add(`{"name":42}`, "tool")
	f.Add(`not json`, "a/b")
	f.Fuzz(func(t *testing.T, raw, other string) {
		cfg := (&ServerConfig{Name: "srv", DisabledTools: []string{"deny*"}}).withDefaults()
		second, _ := json.Marshal(map[string]any{"name": other, "description": raw, "inputSchema": map[string]any{"type": "object"}})
		ts := normalize(&cfg, []json.RawMessage{json.RawMessage(raw), second, json.RawMessage(raw)}, 0)
		if len(ts.tools)+ts.filtered+ts.bad != 3 {
			t.Fatalf("%d served + %d filtered + %d dropped != 3", len(ts.tools), ts.filtered, ts.bad)
		}
		seen := map[string]bool{}
		for _, e := range ts.tools {
			if !strings.HasPrefix(e.Name, "srv.") || len(e.Name) > 128 || !safeName(e.Name) || seen[e.Name] {
				t.Fatalf("entry name %q", e.Name)
			}
			seen[e.Name] = true
			var obj map[string]json.RawMessage
			if json.Unmarshal(e.Tool.InputSchema, &obj) != nil || obj == nil {
				t.Fatalf("schema %q is not an object", e.Tool.InputSchema)
			}
			for _, s := range []string{e.Description(), e.Tool.Title} {
				if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxDescriptionChars+1 {
					t.Fatalf("text %q", s)
				}
				for _, r := range s {
					if r != '\n' && invisible(r) {
						t.Fatalf("invisible %U kept in %q", r, s)
					}
				}
			}
		}
	})
}

// FuzzEntryNames checks the name mapping on arbitrary names: safe, bounded,
// unique, and a name that was already safe is kept.
func FuzzEntryNames(f *testing.F) {
	f.Add("read_file", "read file", "reаd_file")
	f.Add(strings.Repeat("x", 300), "", "\xff")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		in := []string{a, b, c}
		uniq := map[string]bool{}
		var names []string
		for _, n := range in {
			if !uniq[n] {
				uniq[n] = true
				names = append(names, n)
			}
		}
		got := EntryNames("srv", names)
		seen := map[string]bool{}
		for _, n := range names {
			e := got[n]
			if !safeName(e) || len(e) > 128 || !strings.HasPrefix(e, "srv.") || seen[e] {
				t.Fatalf("%q -> %q", n, e)
			}
			seen[e] = true
			if safeName(n) && len(n) <= 128-4 && e != "srv."+n {
				t.Fatalf("safe %q rewritten to %q", n, e)
			}
		}
	})
}
