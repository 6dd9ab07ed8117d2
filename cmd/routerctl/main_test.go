package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

type result struct {
	code           int
	stdout, stderr string
}

func ctl(t *testing.T, addr string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"--addr", addr}, args...), &out, &errb, func(string) string { return "" })
	return result{code, out.String(), errb.String()}
}

func TestCommandsAgainstRouter(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{})

	tests := []struct {
		args     []string
		code     int
		contains []string // in stdout
	}{
		{[]string{"list"}, 0, []string{"pdf-form-filling", "project:skills", "7 skills"}},
		{[]string{"list", "--agent", "reviewer"}, 0, []string{"code-review-checklist", "8 skills"}},
		{[]string{"list", "--shadowed"}, 0, []string{"no name collisions"}},
		{[]string{"list", "--budget", "500"}, 0, []string{"<available_skills", "of 500 characters"}},
		{[]string{"show", "pdf-form-filling"}, 0, []string{"owner:        docs-team", "scripts/fill_form.py", "enabled:      yes"}},
		{[]string{"show", "legacy-ftp-upload"}, 0, []string{"enabled:      no: disabled by skills/registry.json"}},
		{[]string{"load", "release-notes", "--level", "1"}, 0, []string{"release-notes (project:skills)"}},
		{[]string{"load", "release-notes"}, 0, []string{"<skill_content", "</skill_content>"}},
		{[]string{"load", "--raw", "release-notes", "--budget", "20"}, 0, []string{"# Release notes"}},
		{[]string{"load", "pdf-form-filling", "--resource", "references/field-types.md"}, 0, []string{"AcroForm field types"}},
		{[]string{"reindex"}, 0, []string{"scanned 9:", "parsed 0"}},
		{[]string{"status"}, 0, []string{"serving", "7 skills served", "flags: skills_v1=true skills_exec=false"}},
		{[]string{"show", "nope"}, 1, nil},
		{[]string{"load", "pdf-form-filling", "--resource", "../../etc/passwd"}, 1, nil},
		{[]string{"show"}, 2, nil},
		{[]string{"frobnicate"}, 2, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := ctl(t, r.Addr, tc.args...)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tc.code, res.stdout, res.stderr)
			}
			for _, s := range tc.contains {
				if !strings.Contains(res.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, res.stdout)
				}
			}
			if tc.code != 0 && res.stderr == "" {
				t.Error("failure without a message on stderr")
			}
		})
	}

	t.Run("errors name the gRPC code", func(t *testing.T) {
		res := ctl(t, r.Addr, "load", "pdf-form-filling", "--resource", "../../etc/passwd")
		if !strings.Contains(res.stderr, "PermissionDenied") {
			t.Errorf("stderr = %q", res.stderr)
		}
	})

	t.Run("json output parses", func(t *testing.T) {
		for _, args := range [][]string{
			{"--json", "list"}, {"--json", "show", "pdf-form-filling"}, {"--json", "load", "release-notes"},
			{"--json", "status"}, {"--json", "reindex"}, {"--json", "list", "--shadowed"},
		} {
			res := ctl(t, r.Addr, args...)
			var v map[string]any
			if res.code != 0 || json.Unmarshal([]byte(res.stdout), &v) != nil {
				t.Errorf("%v: exit %d, not JSON: %s", args, res.code, res.stdout)
			}
		}
		res := ctl(t, r.Addr, "--json", "show", "pdf-form-filling")
		var v struct {
			Skill struct {
				Name   string `json:"name"`
				Source struct {
					Kind string `json:"kind"`
				} `json:"source"`
			} `json:"skill"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &v); err != nil || v.Skill.Name != "pdf-form-filling" || v.Skill.Source.Kind != "SOURCE_KIND_PROJECT" {
			t.Errorf("show --json = %+v, %v", v, err)
		}
	})

	t.Run("router down", func(t *testing.T) {
		res := ctl(t, "127.0.0.1:1", "--timeout", "2s", "status")
		if res.code != 1 || !strings.Contains(res.stderr, "is the router running") {
			t.Errorf("exit %d stderr %q", res.code, res.stderr)
		}
	})
}

func TestHelp(t *testing.T) {
	for _, c := range commands() {
		res := ctl(t, "127.0.0.1:1", c.name, "--help")
		if res.code != 0 || !strings.Contains(res.stderr, "Usage") {
			t.Errorf("%s --help: exit %d, stderr %q", c.name, res.code, res.stderr)
		}
	}
	for _, args := range [][]string{{"--help"}} {
		res := ctl(t, "127.0.0.1:1", args...)
		if res.code != 0 || !strings.Contains(res.stderr, "Usage") {
			t.Errorf("%v: exit %d, stderr %q", args, res.code, res.stderr)
		}
	}
}

func TestValidate(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	res := ctl(t, "x", "validate", ws)
	if res.code != 0 || !strings.Contains(res.stdout, "9 SKILL.md files, 9 valid, 8 would be served; 0 errors") {
		t.Fatalf("examples: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	bad := filepath.Join(ws, "skills", "broken", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("---\nname: broken\ndescription: \"\"\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = ctl(t, "x", "validate", filepath.Join(ws, "skills"))
	if res.code != 1 || !strings.Contains(res.stdout, "broken/SKILL.md:3: error: description is missing") {
		t.Errorf("broken skill: exit %d\n%s", res.code, res.stdout)
	}
	res = ctl(t, "x", "--json", "validate", filepath.Join(ws, "skills", "broken"))
	var out validateOutput
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Errors != 1 || out.Problems[0].Line != 3 || res.code != 1 {
		t.Errorf("json: %+v, %v, exit %d", out, err, res.code)
	}
	if res := ctl(t, "x", "validate"); res.code != 2 {
		t.Errorf("validate without DIR: exit %d, want 2", res.code)
	}
}

// TestValidateCorpora runs validate over every real-world tree: it must report
// their problems without crashing, and only known warts.
func TestValidateCorpora(t *testing.T) {
	shared, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "corpora"))
	entries, err := os.ReadDir(shared)
	if err != nil {
		t.Skipf("../shared/corpora not found (%v); skipping the corpus check", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(shared, e.Name())
			args := []string{"--json", "validate", dir}
			if e.Name() == "openai-skills" { // skills live in dot-folders, named directly
				args = append(args, filepath.Join(dir, "skills", ".curated"), filepath.Join(dir, "skills", ".experimental"), filepath.Join(dir, "skills", ".system"))
			}
			res := ctl(t, "x", args...)
			var out validateOutput
			if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
				t.Fatalf("not JSON (exit %d): %v\n%s", res.code, err, res.stderr)
			}
			if out.Files == 0 || out.Valid == 0 {
				t.Errorf("found %d files, %d valid", out.Files, out.Valid)
			}
			for _, p := range out.Problems {
				if p.File == "" || p.Code == "" || p.Message == "" {
					t.Errorf("incomplete problem %+v", p)
				}
			}
			t.Logf("%d files, %d valid, %d errors, %d warnings: %v", out.Files, out.Valid, out.Errors, out.Warnings, out.ByCode)
		})
	}
}

func TestTokenAuthorizeExec(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	var out, errb bytes.Buffer
	if code := run([]string{"--json", "token", "--id", "ops", "--groups", "*"}, &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("token: exit %d: %s", code, errb.String())
	}
	var tok struct{ Token, SHA256, Entry string }
	if err := json.Unmarshal(out.Bytes(), &tok); err != nil || !strings.HasPrefix(tok.Token, "mcpsag_") {
		t.Fatalf("token output %q: %v", out.String(), err)
	}
	tokens := filepath.Join(ws, ".mcp", "tokens.yaml")
	if err := os.WriteFile(tokens, []byte("tokens:\n"+tok.Entry+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "skills", "ALLOWLIST.txt"), []byte("csv-data-cleaning scripts/profile_csv.py\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.Auth = config.Auth{Enabled: true, TokensFile: tokens}
		c.Flags.SkillsExec = true
	}})

	if res := ctl(t, r.Addr, "status"); res.code != 1 || !strings.Contains(res.stderr, "MCPSAG_TOKEN") {
		t.Errorf("without token: exit %d, %q", res.code, res.stderr)
	}
	withToken := func(args ...string) result {
		var out, errb bytes.Buffer
		env := func(k string) string {
			if k == "MCPSAG_TOKEN" {
				return tok.Token
			}
			return ""
		}
		code := run(append([]string{"--addr", r.Addr}, args...), &out, &errb, env)
		return result{code, out.String(), errb.String()}
	}
	if res := withToken("status"); res.code != 0 {
		t.Errorf("with MCPSAG_TOKEN: exit %d: %s", res.code, res.stderr)
	}
	if res := withToken("authorize-exec", "csv-data-cleaning", "scripts/profile_csv.py"); res.code != 0 || !strings.HasPrefix(res.stdout, "ALLOW") {
		t.Errorf("allowed script: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	if res := withToken("authorize-exec", "pdf-form-filling", "scripts/fill_form.py"); res.code != 1 || !strings.Contains(res.stdout, "[not_allowlisted]") {
		t.Errorf("denied script: exit %d: %s", res.code, res.stdout)
	}
	if res := withToken("--json", "authorize-exec", "pdf-form-filling", "../x"); res.code != 1 || !strings.Contains(res.stdout, "EXEC_DENY_REASON_PATH_ESCAPE") {
		t.Errorf("json deny: exit %d: %s", res.code, res.stdout)
	}
}
