package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/models"
)

func writeConfig(t *testing.T, ws, content string) string {
	t.Helper()
	p := filepath.Join(ws, DefaultFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestPrecedence(t *testing.T) {
	ws := t.TempDir()
	writeConfig(t, ws, "addr: 127.0.0.1:1111\nadmin_addr: 127.0.0.1:2222\nlog_level: warn\nwatch:\n  debounce: 1s\nflags:\n  skills_exec: true\n")

	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:1111" || cfg.Watch.Debounce != time.Second || !cfg.Flags.SkillsExec || !cfg.Flags.SkillsV1 {
		t.Errorf("file values not applied over defaults: %+v", cfg)
	}
	if cfg.StateDir != filepath.Join(ws, ".mcp", "state") || cfg.File == "" {
		t.Errorf("state dir %q, file %q", cfg.StateDir, cfg.File)
	}

	cfg, err = Resolve(Overrides{Workspace: ws}, envOf(map[string]string{"MCPSAG_ADDR": "127.0.0.1:3333", "MCPSAG_LOG_LEVEL": "debug"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:3333" || cfg.LogLevel != "debug" || cfg.AdminAddr != "127.0.0.1:2222" {
		t.Errorf("env does not override the file: %+v", cfg)
	}

	st := filepath.Join(t.TempDir(), "st")
	cfg, err = Resolve(Overrides{Workspace: ws, Addr: "127.0.0.1:4444", StateDir: st}, envOf(map[string]string{"MCPSAG_ADDR": "127.0.0.1:3333"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:4444" || cfg.StateDir != st {
		t.Errorf("flags do not override env: addr %s state %s", cfg.Addr, cfg.StateDir)
	}
}

// TestRelativePathsResolve checks where relative paths point: flags and
// environment variables against the working directory, like any command;
// the config file's values against the workspace.
func TestRelativePathsResolve(t *testing.T) {
	ws := t.TempDir()
	wd := t.TempDir()
	t.Chdir(wd)
	wd, _ = os.Getwd() // the working directory as the OS spells it
	writeConfig(t, ws, "state_dir: file-state\nmodel:\n  dir: file-model\nexec:\n  allowlist_file: allow.txt\n")

	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != filepath.Join(ws, "file-state") || cfg.Model.Dir != filepath.Join(ws, "file-model") || cfg.Exec.AllowlistFile != filepath.Join(ws, "allow.txt") {
		t.Errorf("config-file paths: state %s, model %s, allowlist %s; want them under the workspace %s", cfg.StateDir, cfg.Model.Dir, cfg.Exec.AllowlistFile, ws)
	}

	cfg, err = Resolve(Overrides{Workspace: ws}, envOf(map[string]string{"MCPSAG_STATE_DIR": "env-state", "MCPSAG_MODEL_DIR": "env-model"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != filepath.Join(wd, "env-state") || cfg.Model.Dir != filepath.Join(wd, "env-model") {
		t.Errorf("environment paths: state %s, model %s; want them under the working directory %s", cfg.StateDir, cfg.Model.Dir, wd)
	}

	cfg, err = Resolve(Overrides{Workspace: ws, StateDir: "state", ModelDir: "../m"}, envOf(map[string]string{"MCPSAG_STATE_DIR": "env-state"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StateDir != filepath.Join(wd, "state") || cfg.Model.Dir != filepath.Join(filepath.Dir(wd), "m") {
		t.Errorf("flag paths: state %s, model %s; want them under the working directory %s", cfg.StateDir, cfg.Model.Dir, wd)
	}

	// A relative workspace flag is relative to the working directory too,
	// and the file's paths follow the workspace.
	rel, err := filepath.Rel(wd, ws)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err = Resolve(Overrides{Workspace: rel}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workspace != ws || cfg.StateDir != filepath.Join(ws, "file-state") {
		t.Errorf("relative workspace %s: workspace %s, state %s", rel, cfg.Workspace, cfg.StateDir)
	}
}

func TestCommentsOnlyFile(t *testing.T) {
	ws := t.TempDir()
	writeConfig(t, ws, "# nothing set yet\n# flags:\n#   skills_v1: false\n")
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil || !cfg.Flags.SkillsV1 || cfg.File == "" {
		t.Errorf("comments-only config: %v, %+v", err, cfg.Flags)
	}
}

func TestDefaultsWithoutFile(t *testing.T) {
	cfg, err := Resolve(Overrides{Workspace: t.TempDir()}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if cfg.Addr != d.Addr || cfg.Load != d.Load || cfg.File != "" {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestErrors(t *testing.T) {
	tests := map[string]string{
		"unknown key":        "adress: x\n",
		"bad kind":           "roots:\n  - {path: skills, kind: team}\n",
		"duplicate kind":     "precedence: [user, user]\n",
		"bad log level":      "log_level: loud\n",
		"budgets":            "load:\n  default_token_budget: 10\n  max_token_budget: 5\n",
		"negative limit":     "limits:\n  max_resource_bytes: -1\n",
		"limit over the cap": "limits:\n  max_frontmatter_bytes: 33554432\n",
		"not yaml":           "addr: [\n",
		"wrong type":         "flags:\n  skills_v1: maybe\n",
		"bad duration":       "watch:\n  debounce: soon\n",
		"empty root path":    "roots:\n  - {kind: user}\n",
		"negative debounce":  "watch:\n  debounce: -1s\n",
		"empty addr in file": "addr: \"\"\nworkspace: .\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			ws := t.TempDir()
			p := writeConfig(t, ws, content)
			_, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	if _, err := Resolve(Overrides{ConfigFile: filepath.Join(t.TempDir(), "missing.yaml")}, envOf(nil)); err == nil {
		t.Error("a named config file that does not exist must be an error")
	}
}

// TestProductionExample keeps the shipped production example valid.
func TestProductionExample(t *testing.T) {
	ws := t.TempDir()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "config", "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, ws, string(data))
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil {
		t.Fatalf("production example does not resolve: %v", err)
	}
	if !cfg.Auth.Enabled || !cfg.TLS.Enabled() || cfg.Flags.SkillsExec {
		t.Errorf("production example: auth %v tls %v exec %v", cfg.Auth.Enabled, cfg.TLS.Enabled(), cfg.Flags.SkillsExec)
	}
}

func TestMerge(t *testing.T) {
	ws := t.TempDir()
	p := writeConfig(t, ws, "# router config\nflags:\n  skills_v1: true # routing\nmatch:\n  abstain:\n    threshold: 0.4\n    relative: 0.5\n")
	err := Merge(p, []Setting{
		{Key: "model.match_threshold", Value: 0.31},
		{Key: "match.fusion.convex_weight", Value: 0.2},
		{Key: "match.abstain.threshold", Value: nil},
		{Key: "match.calibrated_on", Value: "abc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	out := string(data)
	for _, want := range []string{"# router config", "# routing", "match_threshold: 0.31", "convex_weight: 0.2", "relative: 0.5", "calibrated_on: abc"} {
		if !strings.Contains(out, want) {
			t.Errorf("merged file lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "threshold: 0.4") {
		t.Errorf("removed key still present:\n%s", out)
	}
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil || cfg.Model.MatchThreshold != 0.31 || cfg.Match.Fusion.ConvexWeight != 0.2 || cfg.Match.Abstain.Relative != 0.5 {
		t.Errorf("merged config: %v, threshold %v weight %v", err, cfg.Model.MatchThreshold, cfg.Match.Fusion.ConvexWeight)
	}
	if err := Merge(p, []Setting{{Key: "match.nonsense", Value: 1}}); err == nil {
		t.Error("merging an unknown key succeeded")
	}
	commentsOnly := writeConfig(t, t.TempDir(), "# only a comment\n")
	if err := Merge(commentsOnly, []Setting{{Key: "flags.skills_exec", Value: true}}); err != nil {
		t.Errorf("merge into a comments-only file: %v", err)
	}
	if data, _ := os.ReadFile(commentsOnly); !strings.Contains(string(data), "# only a comment") || !strings.Contains(string(data), "skills_exec: true") {
		t.Errorf("comments-only merge result:\n%s", data)
	}
	fresh := filepath.Join(t.TempDir(), "new.yaml")
	if err := Merge(fresh, []Setting{{Key: "model.match_threshold", Value: 0.3}}); err != nil {
		t.Errorf("merge into a new file: %v", err)
	}
}

// TestBundledCalibration: the bundled model's calibration parses into the
// default configuration and is valid.
func TestBundledCalibration(t *testing.T) {
	var cfg Config
	if err := yaml.Unmarshal(models.Calibration, &cfg); err != nil {
		t.Fatalf("models.Calibration: %v", err)
	}
	d := Default()
	if len(d.Match.Abstain.Classifiers) == 0 || d.Match.CalibratedOn == "" {
		t.Fatalf("default config lacks the bundled calibration: %+v", d.Match.Abstain)
	}
	if err := d.Match.Validate(); err != nil {
		t.Errorf("default match config: %v", err)
	}
	// Each bundled model (the default and the fast one) brings its own
	// hybrid classifier, fitted on its scores.
	fitted := map[string]bool{}
	for _, c := range d.Match.Abstain.Classifiers {
		if c.Mode == skill.ModeHybrid && c.Model != "" {
			fitted[c.Model] = true
		}
	}
	if len(fitted) != 2 {
		t.Errorf("the bundled calibration has hybrid classifiers for %d models, want 2 (default and fast)", len(fitted))
	}
	// A config file that sets classifiers replaces the bundled ones.
	ws := t.TempDir()
	writeConfig(t, ws, "match:\n  abstain:\n    classifiers: []\n")
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil || len(cfg.Match.Abstain.Classifiers) != 0 {
		t.Errorf("override: %v, %d classifiers", err, len(cfg.Match.Abstain.Classifiers))
	}
}

func TestMCPServers(t *testing.T) {
	ws := t.TempDir()
	file := writeConfig(t, ws, `flags: {tools_call: true}
mcp_servers:
  gh:
    command: bin/gh-mcp
    args: [--stdio]
    cwd: work
    env:
      LOG_LEVEL: warn
      GITHUB_TOKEN: {from_env: GH_TOKEN}
      API_KEY: {from_file: secrets/key}
  docs:
    url: https://mcp.example.com/mcp
    bearer_token: {from_env: DOCS_TOKEN}
    enabled: false
`)
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	servers := cfg.Servers()
	if len(servers) != 2 || servers[0].Name != "docs" || servers[1].Name != "gh" || !cfg.Flags.ToolsCall {
		t.Fatalf("servers %+v", servers)
	}
	gh := servers[1]
	if gh.Command != filepath.Join(ws, "bin", "gh-mcp") || gh.Cwd != filepath.Join(ws, "work") ||
		gh.Env["API_KEY"].FromFile != filepath.Join(ws, "secrets", "key") || gh.Env["LOG_LEVEL"].Literal != "warn" {
		t.Errorf("paths not resolved against the workspace: %+v", gh)
	}
	if servers[0].IsEnabled() {
		t.Error("enabled: false not read")
	}
	if out := cfg.Redacted(); strings.Contains(out, "warn") || !strings.Contains(out, "from_env: GH_TOKEN") {
		t.Errorf("rendered config shows a literal value or hides a variable name:\n%s", out)
	}
	if src := cfg.SourceOf("mcp_servers.gh.command"); src.Kind != SourceFile || src.Name != file {
		t.Errorf("source %v", src)
	}

	for content, want := range map[string]string{
		"mcp_servers:\n  gh:\n    command: x\n    env: {GITHUB_TOKEN: ghp_inline}\n":                           "mcp_servers.gh.env.GITHUB_TOKEN: looks like a secret",
		"mcp_servers:\n  gh:\n    command: x\n    comand: y\n":                                                 "field comand not found",
		"mcp_servers:\n  bad.name:\n    command: x\n":                                                          `server name "bad.name"`,
		"mcp_servers:\n  gh:\n    url: http://mcp.example.com/\n    headers: {Authorization: {from_env: T}}\n": "clear text",
	} {
		writeConfig(t, ws, content)
		_, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", content, err, want)
		}
	}
}

// TestTrustedProxies: trusted_proxies takes IP addresses and networks,
// refuses anything else naming the entry, and applies after a restart.
func TestTrustedProxies(t *testing.T) {
	ws := t.TempDir()
	writeConfig(t, ws, "trusted_proxies: [127.0.0.1, 10.0.0.0/8, \"::1\"]\n")
	cfg, err := Resolve(Overrides{Workspace: ws}, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.TrustedProxies, " "); got != "127.0.0.1 10.0.0.0/8 ::1" {
		t.Errorf("trusted_proxies = %q", got)
	}
	if got := RestartNeeded(cfg, Config{}); !slices.Contains(got, "trusted_proxies") {
		t.Errorf("RestartNeeded = %v, want trusted_proxies in it", got)
	}
	writeConfig(t, ws, "trusted_proxies: [127.0.0.1, nginx.internal]\n")
	if _, err := Resolve(Overrides{Workspace: ws}, envOf(nil)); err == nil || !strings.Contains(err.Error(), `trusted_proxies[1]: "nginx.internal" is no IP address or CIDR network`) {
		t.Errorf("a host name in trusted_proxies: %v", err)
	}
}

// TestModelRestartNeeded: the model settings read only at start are named
// as needing a restart; the model's folder and its tuning apply on reload.
func TestModelRestartNeeded(t *testing.T) {
	old := Default()
	for _, c := range []struct {
		key     string
		change  func(*Config)
		restart bool
	}{
		{"model.disabled", func(c *Config) { c.Model.Disabled = true }, true},
		{"model.fast", func(c *Config) { c.Model.Fast.Disabled = true }, true},
		{"model.sync_documents", func(c *Config) { c.Model.SyncDocuments = -1 }, true},
		{"model.dir", func(c *Config) { c.Model.Dir = "/models/other" }, false},
		{"model.match_threshold", func(c *Config) { c.Model.MatchThreshold = 0.5 }, false},
	} {
		changed := Default()
		c.change(&changed)
		got := RestartNeeded(old, changed)
		if slices.Contains(got, c.key) != c.restart {
			t.Errorf("changing %s: RestartNeeded = %v, want it named: %v", c.key, got, c.restart)
		}
	}
}
