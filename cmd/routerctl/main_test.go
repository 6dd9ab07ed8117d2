package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/slowtest"
)

// binary is the routerctl built by TestMain; the tests run it as a user
// would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "routerctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "routerctl")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build routerctl:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// ctl runs the routerctl binary with args and no MCPSAG_* variables.
func ctl(t *testing.T, args ...string) result {
	t.Helper()
	return ctlEnv(t, nil, args...)
}

// ctlEnv runs the routerctl binary with args and the MCPSAG_* variables in
// env.
func ctlEnv(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	cmd, out, errb := command(env, args...)
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run routerctl %v: %v", args, err)
	}
	return res
}

func command(env map[string]string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPSAG_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	return cmd, &out, &errb
}

// jsonDoc parses stdout as one JSON object.
func jsonDoc(t *testing.T, res result) map[string]any {
	t.Helper()
	var v map[string]any
	dec := json.NewDecoder(strings.NewReader(res.stdout))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not a JSON object (exit %d): %v\n%s\nstderr: %s", res.code, err, res.stdout, res.stderr)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON document:\n%s", res.stdout)
	}
	return v
}

// field walks a decoded JSON document along a dotted path.
func field(t *testing.T, doc map[string]any, path string) any {
	t.Helper()
	var cur any = doc
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not an object", path, cur)
		}
		if cur, ok = m[k]; !ok {
			t.Fatalf("%s: key %q missing in %v", path, k, m)
		}
	}
	return cur
}

func TestCommandsAgainstRouter(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{})
	env := map[string]string{"MCPSAG_ADDR": r.Addr}

	tests := []struct {
		args     []string
		code     int
		contains []string // in stdout
	}{
		{[]string{"list"}, 0, []string{"pdf-form-filling", "project:skills", "7 skills"}},
		{[]string{"list", "--agent", "reviewer"}, 0, []string{"code-review-checklist", "8 skills"}},
		{[]string{"list", "--shadowed"}, 0, []string{"no name collisions"}},
		{[]string{"list", "--budget", "500"}, 0, []string{"<available_skills", "of 500 characters"}},
		{[]string{"show", "pdf-form-filling"}, 0, []string{
			"owner:             docs-team", "scripts/fill_form.py", "enabled:           yes",
			"model-invocable:   yes", "metadata.version:  1.3", "metadata.owner:    docs-team"}},
		{[]string{"show", "legacy-ftp-upload"}, 0, []string{"enabled:          no: disabled by skills/registry.json"}},
		{[]string{"load", "release-notes", "--level", "1"}, 0, []string{"release-notes (project:skills)"}},
		{[]string{"load", "release-notes"}, 0, []string{"<skill_content", "</skill_content>"}},
		{[]string{"load", "--raw", "release-notes", "--budget", "20"}, 0, []string{"# Release notes"}},
		{[]string{"load", "pdf-form-filling", "--resource", "references/field-types.md"}, 0, []string{"AcroForm field types"}},
		{[]string{"match", "fill in a PDF form from a JSON file"}, 0, []string{"confident: the task names pdf-form-filling", "pdf-form-filling"}},
		{[]string{"match", "my pod is stuck in CrashLoopBackOff"}, 0, []string{"confident: the calibrated classifier gives", "kubernetes-debugging"}},
		{[]string{"match", "what is the capital of France"}, 0, []string{"no skill fits"}},
		{[]string{"reindex"}, 0, []string{"scanned 9:", "parsed 0"}},
		{[]string{"status"}, 0, []string{"serving", "7 skills served", "flags: skills_v1=true skills_exec=false"}},
		{[]string{"model", "info"}, 0, []string{"mcpsag-static-v1", "threshold:"}},
		{[]string{"show", "nope"}, 1, nil},
		{[]string{"load", "pdf-form-filling", "--resource", "../../etc/passwd"}, 1, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := ctlEnv(t, env, tc.args...)
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

	t.Run("show aligns its rows", func(t *testing.T) {
		checkRowsAligned(t, ctlEnv(t, env, "show", "pdf-form-filling").stdout)
	})

	t.Run("errors name the gRPC code and fail at once", func(t *testing.T) {
		res := ctlEnv(t, env, "load", "pdf-form-filling", "--resource", "../../etc/passwd")
		if !strings.Contains(res.stderr, "PermissionDenied") {
			t.Errorf("stderr = %q", res.stderr)
		}
		res = ctlEnv(t, env, "show", "nope")
		if !strings.Contains(res.stderr, "NotFound") || res.took > 5*time.Second {
			t.Errorf("NotFound after %s: %q", res.took, res.stderr)
		}
	})

	t.Run("global flags anywhere on the line", func(t *testing.T) {
		for _, args := range [][]string{
			{"list", "--json", "--addr", r.Addr},
			{"--json", "list", "--addr", r.Addr},
			{"--addr", r.Addr, "list", "--json"},
			{"list", "--addr=" + r.Addr, "--timeout", "10s", "--json"},
		} {
			res := ctl(t, args...)
			if res.code != 0 || len(field(t, jsonDoc(t, res), "skills").([]any)) != 7 {
				t.Errorf("%v: exit %d, stderr %s", args, res.code, res.stderr)
			}
		}
		res := ctl(t, "match", "--json", "fill in a PDF form", "--addr", r.Addr, "--top-k", "2")
		doc := jsonDoc(t, res)
		if c := field(t, doc, "candidates").([]any); res.code != 0 || len(c) == 0 {
			t.Errorf("match --json after the command: exit %d, %v", res.code, doc)
		}
		// A token given after the command is sent: an open router ignores it.
		if res := ctl(t, "status", "--addr", r.Addr, "--token", "whatever"); res.code != 0 {
			t.Errorf("--token after the command: exit %d: %s", res.code, res.stderr)
		}
	})

	t.Run("json output keeps zero values", func(t *testing.T) {
		for _, args := range [][]string{
			{"list"}, {"show", "pdf-form-filling"}, {"load", "release-notes"}, {"match", "what is the capital of France"},
			{"status"}, {"reindex"}, {"list", "--shadowed"}, {"model", "info"},
		} {
			jsonDoc(t, ctlEnv(t, env, append(args, "--json")...))
		}
		st := jsonDoc(t, ctlEnv(t, env, "status", "--json"))
		for path, want := range map[string]any{
			"skills_hidden": 0.0, "skills_shadowed": 0.0, "files_invalid": 0.0, "degraded": false, "degraded_reason": "",
			"validation.errors": 0.0, "validation.warnings": 0.0, "last_reindex_error": "", "shadowed": []any{},
		} {
			if got := field(t, st, path); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("status --json %s = %v, want %v", path, got, want)
			}
		}
		field(t, st, "model.embeddings_computed") // present whatever its value
		ri := jsonDoc(t, ctlEnv(t, env, "reindex", "--json"))
		for _, path := range []string{"stats.parsed", "stats.added", "stats.removed", "stats.embedded"} {
			if got := field(t, ri, path); got != 0.0 {
				t.Errorf("reindex --json %s = %v, want 0", path, got)
			}
		}
		// Keys are the .proto names, and output is stable byte for byte.
		a, b := ctlEnv(t, env, "show", "pdf-form-filling", "--json"), ctlEnv(t, env, "show", "pdf-form-filling", "--json")
		if !strings.Contains(a.stdout, `"content_sha256": "`) || !strings.Contains(a.stdout, "\n  \"skill\": {") || a.stdout != b.stdout {
			t.Errorf("show --json is not in the stable layout:\n%s", a.stdout)
		}
	})

	t.Run("router down", func(t *testing.T) {
		res := ctl(t, "--addr", daemontest.FreeAddr(t), "--timeout", "1s", "status")
		if res.code != 1 || !strings.Contains(res.stderr, "is the router running") || !strings.Contains(res.stderr, "gave up after") {
			t.Errorf("exit %d stderr %q", res.code, res.stderr)
		}
		if res.took < time.Second || res.took > 10*time.Second {
			t.Errorf("gave up after %s, want about --timeout 1s", res.took)
		}
	})
}

// TestStatusPointsToTheProblems checks that status says where to read the
// warnings it counts.
func TestStatusPointsToTheProblems(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	bad := filepath.Join(ws, "skills", "odd", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("---\nname: odd\ndescription: An odd skill. Use when testing.\ncolour: blue\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, ws, daemontest.Options{})
	res := ctl(t, "status", "--addr", r.Addr)
	if res.code != 0 || !strings.Contains(res.stdout, "warnings") || !strings.Contains(res.stdout, "routerctl validate WORKSPACE") {
		t.Errorf("exit %d:\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// commandPaths lists every command of the tree, as arguments.
func commandPaths() [][]string {
	root := newRoot(&env{getenv: func(string) string { return "" }})
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			p := append(append([]string(nil), path...), sub.Name())
			out = append(out, p)
			walk(sub, p)
		}
	}
	walk(root, nil)
	return out
}

func TestHelp(t *testing.T) {
	paths := commandPaths()
	if len(paths) < 20 {
		t.Fatalf("only %d commands: %v", len(paths), paths)
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		res := ctl(t, append(p, "--help")...)
		if res.code != 0 || res.stderr != "" || !strings.Contains(res.stdout, "Usage:") {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", name, res.code, res.stdout, res.stderr)
			continue
		}
		if p[0] != "completion" && p[0] != "help" && !strings.Contains(res.stdout, "Examples:\n  routerctl ") {
			t.Errorf("%s --help has no examples:\n%s", name, res.stdout)
		}
		if p[0] != "help" {
			if h := ctl(t, append([]string{"help"}, p...)...); h.code != 0 || h.stdout != res.stdout {
				t.Errorf("help %s differs from %s --help (exit %d)", name, name, h.code)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		res := ctl(t, args...)
		if res.code != 0 || !strings.Contains(res.stdout, "Commands that ask a running router:") || !strings.Contains(res.stdout, "Exit codes") {
			t.Errorf("%v: exit %d, stdout %q", args, res.code, res.stdout)
		}
	}
	// Flag tables are aligned: in each, every description starts in one
	// column.
	for _, args := range [][]string{{"calibrate", "--help"}, {"match", "--help"}, {"--help"}} {
		checkAligned(t, ctl(t, args...).stdout)
	}
	// A bare routerctl prints the help on stderr and exits 2.
	if res := ctl(t); res.code != 2 || res.stdout != "" || !strings.Contains(res.stderr, "Usage:") {
		t.Errorf("bare routerctl: exit %d, stdout %q", res.code, res.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the first line
		see  string // the command whose help the second line names
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "routerctl"},
		{[]string{"lsit"}, "did you mean list?", "routerctl"},
		{[]string{"model"}, "model needs a subcommand: info or verify", "routerctl model"},
		{[]string{"model", "frob"}, `unknown command "frob"`, "routerctl model"},
		{[]string{"completion"}, "needs a subcommand", "routerctl completion"},
		{[]string{"help", "frob"}, `no help for "frob"`, "routerctl help"},
		{[]string{"--bogus", "status"}, "unknown flag: --bogus", "routerctl"},
		{[]string{"list", "--bogus"}, "unknown flag: --bogus", "routerctl list"},
		{[]string{"list", "-json"}, "did you mean --json?", "routerctl list"},
		{[]string{"validate", "-strict", "x"}, "did you mean --strict?", "routerctl validate"},
		{[]string{"status", "extra"}, "status takes no arguments", "routerctl status"},
		{[]string{"show"}, "show takes one skill NAME, got 0 arguments", "routerctl show"},
		{[]string{"show", "a", "b"}, "got 2 arguments", "routerctl show"},
		{[]string{"authorize-exec", "a"}, "a skill NAME and a SCRIPT path", "routerctl authorize-exec"},
		{[]string{"validate"}, "validate needs at least one DIR", "routerctl validate"},
		{[]string{"status", "--timeout", "soon"}, `invalid argument "soon" for "--timeout"`, "routerctl status"},
		{[]string{"status", "--timeout", "0s"}, "--timeout 0s: want a positive duration", "routerctl status"},
		{[]string{"load", "x", "--level", "7"}, "--level 7: want 1, 2 or 3", "routerctl load"},
		{[]string{"load", "x", "--level", "two"}, `invalid argument "two"`, "routerctl load"},
		{[]string{"match", "x", "--mode", "fuzzy"}, `--mode "fuzzy": want hybrid, dense or bm25`, "routerctl match"},
		{[]string{"list", "--tls-cert", "c.pem"}, "--tls-cert and --tls-key go together", "routerctl list"},
		{[]string{"token"}, "token needs --id", "routerctl token"},
		{[]string{"token", "--id", "ci", "--groups", "read,bogus"}, `would refuse this token: unknown group "bogus"`, "routerctl token"},
		{[]string{"token", "--id", "two words"}, `id "two words" must be`, "routerctl token"},
		{[]string{"token", "--id", "ci", "--agents", "a/b"}, `--agents: "a/b" is not a valid agent name`, "routerctl token"},
		{[]string{"match", "x", "--top-k", "-1"}, "--top-k -1: want 1 or more", "routerctl match"},
		{[]string{"eval", "--skills", "x"}, "--skills and --queries are required", "routerctl eval"},
		{[]string{"eval", "--skills", "x", "--queries", "y", "--mode", "fast"}, `--mode "fast"`, "routerctl eval"},
		{[]string{"calibrate", "--skills", "x", "--queries", "y", "--mode", "dense"}, `want hybrid or bm25`, "routerctl calibrate"},
		{[]string{"calibrate", "--skills", "x", "--queries", "y", "--in-place"}, "--in-place needs --config", "routerctl calibrate"},
		{[]string{"calibrate", "--skills", "x", "--queries", "y", "--config", "c.yaml", "--in-place", "--out", "o.yaml"}, "exclude each other", "routerctl calibrate"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := ctl(t, append(tc.args, "--addr", "127.0.0.1:1")...)
			lines := strings.Split(strings.TrimRight(res.stderr, "\n"), "\n")
			if res.code != 2 || res.stdout != "" || len(lines) != 2 {
				t.Fatalf("exit %d, want 2 and two lines on stderr\nstdout: %q\nstderr: %q", res.code, res.stdout, res.stderr)
			}
			if !strings.HasPrefix(lines[0], "routerctl: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("first line %q, want it to contain %q", lines[0], tc.want)
			}
			if want := "see " + tc.see + " --help"; lines[1] != want {
				t.Errorf("second line %q, want %q", lines[1], want)
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "complete -o default -F __start_routerctl routerctl", "zsh": "#compdef routerctl",
		"fish": "complete -c routerctl", "powershell": "Register-ArgumentCompleter",
	} {
		res := ctl(t, "completion", shell)
		if res.code != 0 || !strings.Contains(res.stdout, marker) {
			t.Errorf("completion %s: exit %d, no %q in %d bytes (stderr %q)", shell, res.code, marker, len(res.stdout), res.stderr)
		}
	}
	// The completion scripts ask routerctl itself; it must list commands and flags.
	res := ctl(t, "__complete", "s")
	if res.code != 0 || !strings.Contains(res.stdout, "show") || !strings.Contains(res.stdout, "status") {
		t.Errorf("__complete s: exit %d: %s", res.code, res.stdout)
	}
	res = ctl(t, "__complete", "calibrate", "--in")
	if !strings.Contains(res.stdout, "--in-place") {
		t.Errorf("__complete calibrate --in: %s", res.stdout)
	}
}

func TestVersion(t *testing.T) {
	a, b := ctl(t, "version"), ctl(t, "--version")
	if a.code != 0 || b.code != 0 || !strings.HasPrefix(a.stdout, "routerctl ") || !strings.HasPrefix(b.stdout, "routerctl ") {
		t.Fatalf("version: %q (exit %d), --version: %q (exit %d)", a.stdout, a.code, b.stdout, b.code)
	}
	doc := jsonDoc(t, ctl(t, "version", "--json"))
	for _, k := range []string{"version", "module_version", "revision", "modified", "go_version"} {
		field(t, doc, k)
	}
	if v := field(t, doc, "version").(string); v == "" || !strings.Contains(a.stdout, v) || !strings.HasPrefix(b.stdout, "routerctl "+v) {
		t.Errorf("version %q, text %q, %q", v, a.stdout, b.stdout)
	}
}

func TestHealth(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	addr := r.Addr
	if res := ctl(t, "health", "--addr", addr); res.code != 0 || !strings.Contains(res.stdout, "serving") {
		t.Errorf("serving router: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	doc := jsonDoc(t, ctl(t, "health", "--json", "--addr", addr))
	if field(t, doc, "status") != "SERVING" || field(t, doc, "serving") != true || field(t, doc, "service") != "mcpsag.router.v1.SkillRouter" {
		t.Errorf("health --json: %v", doc)
	}
	r.Stop(t)
	res := ctl(t, "health", "--addr", addr)
	if res.code != 1 || !strings.Contains(res.stdout, "unreachable") || res.took > 5*time.Second {
		t.Errorf("stopped router: exit %d after %s: %s%s", res.code, res.took, res.stdout, res.stderr)
	}
	res = ctl(t, "health", "--addr", addr, "--json")
	if doc := jsonDoc(t, res); res.code != 1 || field(t, doc, "serving") != false || field(t, doc, "error") == "" {
		t.Errorf("stopped router --json: exit %d: %v", res.code, doc)
	}
	res = ctl(t, "health", "--addr", addr, "--wait", "--timeout", "1s")
	if res.code != 1 || res.took < time.Second {
		t.Errorf("--wait on a stopped router: exit %d after %s", res.code, res.took)
	}
}

func TestTokens(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	res := ctl(t, "token", "--json", "--id", "ops", "--groups", "*")
	if res.code != 0 {
		t.Fatalf("token: exit %d: %s", res.code, res.stderr)
	}
	var tok struct {
		ID, Token, SHA256, Entry string
		Groups, Agents           []string
		Rate                     *float64
	}
	if err := json.Unmarshal([]byte(res.stdout), &tok); err != nil || !strings.HasPrefix(tok.Token, "mcpsag_") ||
		tok.ID != "ops" || len(tok.Groups) != 1 || tok.Agents == nil || tok.Rate == nil {
		t.Fatalf("token output %q: %v", res.stdout, err)
	}
	if text := ctl(t, "token", "--id", "ci"); text.code != 0 || !strings.Contains(text.stdout, "token (shown once): mcpsag_") {
		t.Errorf("token text: %s", text.stdout)
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

	t.Run("messages", func(t *testing.T) {
		tests := []struct {
			env  map[string]string
			args []string
			want string
		}{
			{nil, nil, "the router requires a token: set MCPSAG_TOKEN or pass --token"},
			{map[string]string{"MCPSAG_TOKEN": "mcpsag_wrong"}, nil, "the router rejected the token from MCPSAG_TOKEN"},
			{nil, []string{"--token", "mcpsag_wrong"}, "the router rejected the token from --token"},
			{map[string]string{"MCPSAG_TOKEN": tok.Token}, []string{"--token", "mcpsag_wrong"}, "the router rejected the token from --token"},
		}
		for _, tc := range tests {
			res := ctlEnv(t, tc.env, append([]string{"status", "--addr", r.Addr}, tc.args...)...)
			if res.code != 1 || !strings.Contains(res.stderr, tc.want) || strings.Contains(res.stderr, tok.Token) {
				t.Errorf("env %v args %v: exit %d, stderr %q, want %q", tc.env, tc.args, res.code, res.stderr, tc.want)
			}
		}
	})
	env := map[string]string{"MCPSAG_TOKEN": tok.Token, "MCPSAG_ADDR": r.Addr}
	if res := ctlEnv(t, env, "status"); res.code != 0 {
		t.Errorf("with MCPSAG_TOKEN: exit %d: %s", res.code, res.stderr)
	}
	if res := ctlEnv(t, env, "authorize-exec", "csv-data-cleaning", "scripts/profile_csv.py"); res.code != 0 || !strings.HasPrefix(res.stdout, "ALLOW") {
		t.Errorf("allowed script: exit %d: %s%s", res.code, res.stdout, res.stderr)
	}
	if res := ctlEnv(t, env, "authorize-exec", "pdf-form-filling", "scripts/fill_form.py"); res.code != 1 || !strings.Contains(res.stdout, "[not_allowlisted]") {
		t.Errorf("denied script: exit %d: %s", res.code, res.stdout)
	}
	if res := ctlEnv(t, env, "authorize-exec", "--json", "pdf-form-filling", "../x"); res.code != 1 || !strings.Contains(res.stdout, "EXEC_DENY_REASON_PATH_ESCAPE") {
		t.Errorf("json deny: exit %d: %s", res.code, res.stdout)
	}
}

// TestRetriesWhileTheRouterStarts starts a command first and the router a
// moment later on the address the command dials.
func TestRetriesWhileTheRouterStarts(t *testing.T) {
	addr := daemontest.FreeAddr(t)
	ws := daemontest.CopyExamples(t)
	cmd, out, errb := command(nil, "list", "--json", "--addr", addr, "--timeout", "60s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(700 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("routerctl ended before the router started: %v\n%s", err, errb)
	default:
	}
	daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.Addr = addr }})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("routerctl failed: %v\n%s", err, errb)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("routerctl still waits 30s after the router started")
	}
	res := result{stdout: out.String()}
	if n := len(field(t, jsonDoc(t, res), "skills").([]any)); n != 7 {
		t.Errorf("%d skills listed, want 7", n)
	}
}

// loadingRouter is a router front that answers as a real one does while it
// builds its first index, until ready.
type loadingRouter struct {
	routerv1.UnimplementedSkillRouterServer
	ready       time.Time
	lists, gets atomic.Int32
}

func (l *loadingRouter) ListSkills(context.Context, *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	l.lists.Add(1)
	if time.Now().Before(l.ready) {
		return nil, status.Error(codes.Unavailable, "the skill index is still loading; retry shortly")
	}
	return &routerv1.ListSkillsResponse{Skills: []*routerv1.SkillSummary{{Name: "late-skill"}}, TotalSize: 1}, nil
}

func (l *loadingRouter) GetSkill(context.Context, *routerv1.GetSkillRequest) (*routerv1.GetSkillResponse, error) {
	l.gets.Add(1)
	return nil, status.Error(codes.NotFound, "no skill named nope")
}

func serveLoading(t *testing.T, loadFor time.Duration) (*loadingRouter, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &loadingRouter{ready: time.Now().Add(loadFor)}
	s := grpc.NewServer()
	routerv1.RegisterSkillRouterServer(s, l)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	return l, lis.Addr().String()
}

func TestRetriesWhileTheIndexLoads(t *testing.T) {
	l, addr := serveLoading(t, 800*time.Millisecond)
	res := ctl(t, "list", "--addr", addr, "--timeout", "20s")
	if res.code != 0 || !strings.Contains(res.stdout, "late-skill") || l.lists.Load() < 3 {
		t.Errorf("exit %d after %d calls: %s%s", res.code, l.lists.Load(), res.stdout, res.stderr)
	}
	if res.stderr != "" {
		t.Errorf("retries wrote to stderr outside a terminal: %q", res.stderr)
	}

	res = ctl(t, "show", "nope", "--addr", addr)
	if res.code != 1 || l.gets.Load() != 1 || !strings.Contains(res.stderr, "NotFound: no skill named nope") {
		t.Errorf("NotFound: exit %d after %d calls: %q", res.code, l.gets.Load(), res.stderr)
	}

	l, addr = serveLoading(t, time.Hour)
	res = ctl(t, "list", "--addr", addr, "--timeout", "1500ms")
	if res.code != 1 || !strings.Contains(res.stderr, "Unavailable: the skill index is still loading; retry shortly") ||
		!strings.Contains(res.stderr, "gave up after 1.5s (--timeout)") {
		t.Errorf("never ready: exit %d after %d calls: %q", res.code, l.lists.Load(), res.stderr)
	}
	// Backoff: a few calls a second, not a busy loop.
	if n := l.lists.Load(); n < 3 || n > 20 {
		t.Errorf("%d calls in 1.5s", n)
	}
}

func TestValidate(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	res := ctl(t, "validate", ws)
	if res.code != 0 || !strings.Contains(res.stdout, "9 SKILL.md files, 9 valid, 8 would be served; 0 errors") {
		t.Fatalf("examples: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	doc := jsonDoc(t, ctl(t, "validate", "--json", ws))
	for path, want := range map[string]any{"errors": 0.0, "problems": []any{}, "shadows": []any{}, "by_code": map[string]any{}} {
		if got := field(t, doc, path); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("validate --json %s = %v, want %v", path, got, want)
		}
	}

	bad := filepath.Join(ws, "skills", "broken", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("---\nname: broken\ndescription: \"\"\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = ctl(t, "validate", filepath.Join(ws, "skills"))
	if res.code != 1 || !strings.Contains(res.stdout, "broken/SKILL.md:3: error: description is missing") {
		t.Errorf("broken skill: exit %d\n%s", res.code, res.stdout)
	}
	res = ctl(t, "validate", filepath.Join(ws, "skills", "broken"), "--json")
	var out validateOutput
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Errors != 1 || out.Problems[0].Line != 3 || res.code != 1 {
		t.Errorf("json: %+v, %v, exit %d", out, err, res.code)
	}
}

// TestValidateCorpora runs validate over every real-world tree: it must report
// their problems without crashing, and only known warts.
func TestValidateCorpora(t *testing.T) {
	slowtest.Skip(t, "validates the corpora of ../shared")
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
			res := ctl(t, args...)
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

func TestEvalAndCalibrate(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	queries, _ := filepath.Abs(filepath.Join("testdata", "queries.jsonl"))

	res := ctl(t, "eval", "--skills", ws, "--queries", queries, "--mode", "bm25", "--json", "--per-query")
	doc := jsonDoc(t, res)
	if res.code != 0 || field(t, doc, "queries") != 12.0 || field(t, doc, "model") != "" || field(t, doc, "fusion") != "" {
		t.Errorf("eval --json: exit %d: %v", res.code, doc)
	}
	if got := len(field(t, doc, "per_query").([]any)); got != 12 {
		t.Errorf("%d per-query outcomes, want 12", got)
	}
	field(t, doc, "notes")
	if strings.ContainsAny(res.stderr, "\r\x1b") {
		t.Errorf("progress drawn into a pipe: %q", res.stderr)
	}
	res = ctl(t, "eval", "--skills", ws, "--queries", queries, "--mode", "bm25")
	if res.code != 0 || !strings.Contains(res.stdout, "NDCG@10") || strings.Contains(res.stdout, "n/a%") {
		t.Errorf("eval: exit %d:\n%s", res.code, res.stdout)
	}

	cfgFile := filepath.Join(ws, ".mcp", ".mcp-config.yaml")
	before, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	calibrate := func(extra ...string) result {
		return ctl(t, append([]string{"calibrate", "--skills", ws, "--queries", queries, "--mode", "bm25", "--config", cfgFile, "--folds", "2"}, extra...)...)
	}
	res = calibrate()
	written := filepath.Join(ws, ".mcp", ".mcp-config.calibrated.yaml")
	got, _ := os.ReadFile(written)
	if res.code != 0 || !strings.Contains(string(got), "keyword_threshold:") || !strings.Contains(string(got), "calibrated_on:") ||
		!strings.Contains(res.stderr, "wrote "+written) {
		t.Fatalf("calibrate: exit %d\n%s\nwritten:\n%s", res.code, res.stderr, got)
	}
	if now, _ := os.ReadFile(cfgFile); !bytes.Equal(now, before) {
		t.Fatal("calibrate without --in-place changed its --config file")
	}
	if !strings.Contains(string(got), "skills_exec:") {
		t.Errorf("the calibrated config lost the settings of its input:\n%s", got)
	}

	out := filepath.Join(t.TempDir(), "out.yaml")
	if res = calibrate("--out", out); res.code != 0 {
		t.Fatalf("--out: exit %d: %s", res.code, res.stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "calibrated_on:") {
		t.Errorf("--out wrote:\n%s", b)
	}
	res = calibrate("--out", "-")
	if res.code != 0 || !strings.Contains(res.stdout, "calibrated_on:") || strings.Contains(res.stdout, "cutoff  abstained") {
		t.Errorf("--out -: exit %d, stdout:\n%s", res.code, res.stdout)
	}
	if res = calibrate("--out", cfgFile); res.code != 2 || !strings.Contains(res.stderr, "use --in-place") {
		t.Errorf("--out naming the config: exit %d: %s", res.code, res.stderr)
	}
	if now, _ := os.ReadFile(cfgFile); !bytes.Equal(now, before) {
		t.Fatal("calibrate without --in-place changed its --config file")
	}

	res = calibrate("--in-place", "--json")
	doc = jsonDoc(t, res)
	field(t, doc, "classifier_cv.precision")
	if now, _ := os.ReadFile(cfgFile); res.code != 0 || bytes.Equal(now, before) || !strings.Contains(string(now), "calibrated_on:") {
		t.Errorf("--in-place: exit %d, config:\n%s", res.code, now)
	}
}

// checkAligned checks that the rows of each flag table and of the
// "label: value" blocks of help text start their text in one column.
func checkAligned(t *testing.T, text string) {
	t.Helper()
	col, rows := -1, 0
	defer func() {
		if rows < 3 {
			t.Errorf("only %d flag rows in:\n%s", rows, text)
		}
	}()
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "  ") || !strings.Contains(strings.TrimSpace(line), "--") || !strings.HasPrefix(strings.TrimSpace(line), "-") {
			col = -1 // a new table starts after any other line
			continue
		}
		rest := strings.TrimSpace(line)
		gap := strings.Index(rest, "   ")
		if gap < 0 {
			t.Errorf("flag row without a description: %q", line)
			continue
		}
		c := len(line) - len(strings.TrimLeft(rest[gap:], " "))
		rows++
		if col == -1 {
			col = c
		} else if c != col {
			t.Errorf("misaligned flag row %q (column %d, want %d)", line, c, col)
		}
	}
}

// checkRowsAligned checks that the "label: value" rows of show's output
// start their values in one column.
func checkRowsAligned(t *testing.T, text string) {
	t.Helper()
	col := -1
	for _, line := range strings.Split(text, "\n") {
		label, value, ok := strings.Cut(line, ": ")
		if !ok || strings.HasPrefix(line, " ") || strings.Contains(label, " ") && !strings.HasPrefix(label, "shadowed by") {
			continue
		}
		c := len(line) - len(strings.TrimLeft(value, " "))
		if col == -1 {
			col = c
		} else if c != col {
			t.Errorf("misaligned row %q (value at column %d, want %d)", line, c, col)
		}
	}
	if col == -1 {
		t.Error("no label: value rows")
	}
}

// TestValidatePrintsNoControlCharacters: folder names and skill names with
// control characters (ESC sequences, NUL, a right-to-left override) come
// out of validate's text on a terminal as escapes, never raw; piped, the
// text is exact, and so is the JSON.
func TestValidatePrintsNoControlCharacters(t *testing.T) {
	root := t.TempDir()
	for dir, name := range map[string]string{
		"esc\x1b[31mred":    "esc",
		"rlo-\u202etxt.exe": "rlo",
		"plain":             "nul\\x00\\u001b]0;title\\u0007x",
	} {
		p := filepath.Join(root, dir, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nname: \""+name+"\"\ndescription: d\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := ctlOnTerminal(t, "validate", root)
	if strings.ContainsAny(res.stdout, "\x00\x07\x1b\u202e") {
		t.Errorf("validate printed control characters raw:\n%q", res.stdout)
	}
	if !strings.Contains(res.stdout, `esc\u001b[31mred`) || !strings.Contains(res.stdout, `rlo-\u202etxt.exe`) {
		t.Errorf("validate's text does not show the escaped folder names:\n%s", res.stdout)
	}
	if res = ctl(t, "validate", root); !strings.Contains(res.stdout, "esc\x1b[31mred") || !strings.Contains(res.stdout, "rlo-\u202etxt.exe") {
		t.Errorf("validate piped: the folder names are not exact:\n%q", res.stdout)
	}
	var out validateOutput
	if err := json.Unmarshal([]byte(ctl(t, "validate", "--json", root).stdout), &out); err != nil {
		t.Fatalf("validate --json: %v", err)
	}
}

// TestControlCharacterNamesAreNotServed puts skills named with ESC, NUL and
// a right-to-left override, and one without a name in a folder named with
// ESC, beside the examples: the router serves none of them (list shows the
// examples' 7 skills only) and validate reports each as an error.
func TestControlCharacterNamesAreNotServed(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	for dir, frontmatter := range map[string]string{
		"esc-red":    `name: "esc\e[31mred"`,
		"nul-byte":   `name: "nul\0byte"`,
		"rlo-txt":    `name: "rlo-\u202etxt"`,
		"bel\x1b[2J": ``,
	} {
		p := filepath.Join(ws, "skills", dir, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\n"+frontmatter+"\ndescription: Paints the terminal red.\n---\nbody\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := daemontest.Start(t, ws, daemontest.Options{})
	res := ctl(t, "list", "--addr", r.Addr)
	if res.code != 0 || !strings.Contains(res.stdout, "7 skills") {
		t.Errorf("list: exit %d, want the examples' 7 skills only:\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, name := range []string{"esc", "nul", "rlo", "bel"} {
		if strings.Contains(res.stdout, name) {
			t.Errorf("list serves the skill %s named with a control character:\n%s", name, res.stdout)
		}
	}
	res = ctl(t, "validate", "--json", filepath.Join(ws, "skills"))
	var out validateOutput
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, res.stdout)
	}
	if res.code == 0 || out.ByCode["name-control"] != 4 {
		t.Errorf("validate: exit %d, %d name-control problems, want a failure and 4:\n%s", res.code, out.ByCode["name-control"], res.stdout)
	}
	for _, p := range out.Problems {
		if p.Code == "name-control" && p.Severity != "error" {
			t.Errorf("validate: %+v, want severity error", p)
		}
	}
}
