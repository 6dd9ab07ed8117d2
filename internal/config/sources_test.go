package config

import (
	"strings"
	"testing"
)

// TestErrorsNameTheirSource: a bad value is blamed on the layer that set it,
// never on a config file that did not.
func TestErrorsNameTheirSource(t *testing.T) {
	ws := t.TempDir()
	file := writeConfig(t, ws, "match:\n  fusion:\n    rule: rrf\n")
	for _, tc := range []struct {
		name  string
		flags Overrides
		env   map[string]string
		want  string
	}{
		{"flag", Overrides{Workspace: ws, LogLevel: "bogus"}, nil, "flag --log-level: log_level \"bogus\""},
		{"env", Overrides{Workspace: ws}, map[string]string{"MCPSAG_LOG_LEVEL": "bogus"}, "env MCPSAG_LOG_LEVEL: log_level \"bogus\""},
		{"flag over env", Overrides{Workspace: ws, MCPAddr: "nope"}, map[string]string{"MCPSAG_MCP_ADDR": "127.0.0.1:1"}, "flag --mcp-addr: mcp.addr \"nope\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.flags, envOf(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), file) {
				t.Errorf("error %q blames the config file, which set nothing wrong", err)
			}
		})
	}
	writeConfig(t, ws, "log_level: loud\n")
	_, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "file "+file+": log_level \"loud\"") {
		t.Errorf("a bad file value: %v, want the file named", err)
	}
}

// TestExplainNamesEverySource: print-config's rendering gives each setting
// its source, and the effective values.
func TestExplainNamesEverySource(t *testing.T) {
	ws := t.TempDir()
	file := writeConfig(t, ws, "flags:\n  skills_exec: true\nmatch:\n  top_k: 5\n")
	cfg, err := Resolve(Overrides{Workspace: ws, Addr: "127.0.0.1:9999"},
		func(k string) string { return map[string]string{"MCPSAG_LOG_LEVEL": "debug"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	out, err := cfg.Explain(map[string]string{"model.dir": "the bundled model"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# config file: " + file,
		"addr: 127.0.0.1:9999 # flag --addr",
		"log_level: debug # env MCPSAG_LOG_LEVEL",
		"skills_exec: true # file " + file,
		"top_k: 5 # file " + file,
		"skills_v1: true # default",
		"dir: \"\" # default; the bundled model",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestEmptyListenerAddressTurnsItOff: an empty --admin-addr or --mcp-addr,
// or MCPSAG_ADMIN_ADDR / MCPSAG_MCP_ADDR set to "", turns off a listener
// the config file sets; an unset variable leaves the file's value.
func TestEmptyListenerAddressTurnsItOff(t *testing.T) {
	ws := t.TempDir()
	writeConfig(t, ws, "admin_addr: 127.0.0.1:9464\nmcp:\n  addr: 127.0.0.1:7444\n")
	lookup := func(env map[string]string) LookupEnv {
		return func(k string) (string, bool) {
			v, ok := env[k]
			return v, ok
		}
	}
	for _, tc := range []struct {
		name             string
		flags            Overrides
		env              map[string]string
		admin, mcp       string
		adminSrc, mcpSrc string
	}{
		{"file", Overrides{}, nil, "127.0.0.1:9464", "127.0.0.1:7444", "file", "file"},
		{"flags", Overrides{Off: []string{OffAdmin, OffMCP}}, nil, "", "", "flag --admin-addr", "flag --mcp-addr"},
		{"variables", Overrides{}, map[string]string{"MCPSAG_ADMIN_ADDR": "", "MCPSAG_MCP_ADDR": ""}, "", "", "env MCPSAG_ADMIN_ADDR", "env MCPSAG_MCP_ADDR"},
		{"flag over variable", Overrides{AdminAddr: "127.0.0.1:1"}, map[string]string{"MCPSAG_ADMIN_ADDR": ""}, "127.0.0.1:1", "127.0.0.1:7444", "flag --admin-addr", "file"},
		{"off flag over variable", Overrides{Off: []string{OffMCP}}, map[string]string{"MCPSAG_MCP_ADDR": "127.0.0.1:2"}, "127.0.0.1:9464", "", "file", "flag --mcp-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.flags.Workspace = ws
			cfg, err := ResolveEnv(tc.flags, lookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AdminAddr != tc.admin || cfg.MCP.Addr != tc.mcp {
				t.Errorf("admin %q, mcp %q; want %q, %q", cfg.AdminAddr, cfg.MCP.Addr, tc.admin, tc.mcp)
			}
			if got := cfg.SourceOf("admin_addr").String(); !strings.HasPrefix(got, tc.adminSrc) {
				t.Errorf("admin_addr from %q, want %q", got, tc.adminSrc)
			}
			if got := cfg.SourceOf("mcp.addr").String(); !strings.HasPrefix(got, tc.mcpSrc) {
				t.Errorf("mcp.addr from %q, want %q", got, tc.mcpSrc)
			}
		})
	}
	// Resolve's getenv cannot tell "" from unset: the file's value stays.
	cfg, err := Resolve(Overrides{Workspace: ws}, func(string) string { return "" })
	if err != nil || cfg.AdminAddr != "127.0.0.1:9464" {
		t.Errorf("Resolve with empty getenv: admin %q, %v", cfg.AdminAddr, err)
	}
}
