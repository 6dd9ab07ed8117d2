package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzConfigFile decodes arbitrary config files the way the router reads
// them: decoding and validation must never panic, and a configuration they
// accept must render (--print-config) to YAML that reads back to the same
// configuration.
func FuzzConfigFile(f *testing.F) {
	for _, p := range []string{
		filepath.Join("..", "..", "examples", ".mcp", ".mcp-config.yaml"),
		filepath.Join("..", "..", "deploy", "config", "production.yaml"),
	} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("addr: 127.0.0.1:1\nroots:\n  - {path: 'agents/*/skills', kind: project, agent: '*'}\nprecedence: [user, project]\n"))
	f.Add([]byte("watch:\n  debounce: -1s\nmatch:\n  fusion: {rule: rrf}\n"))
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a]\n"))
	f.Add([]byte("# only a comment\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Default()
		if err := decodeFile(data, "fuzz.yaml", &cfg); err != nil {
			return
		}
		cfg.Workspace = "/ws"
		if err := cfg.finish(); err != nil {
			return
		}
		out := cfg.Redacted()
		again := Default()
		if err := decodeFile([]byte(out), "printed.yaml", &again); err != nil {
			t.Fatalf("printed config does not read back: %v\n%s", err, out)
		}
		if err := again.finish(); err != nil {
			t.Fatalf("printed config does not validate: %v\n%s", err, out)
		}
		if again.Redacted() != out {
			t.Fatalf("printed config reads back differently:\n%s\nvs\n%s", out, again.Redacted())
		}
	})
}
