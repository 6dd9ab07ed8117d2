package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/models"
)

// routerBin is the router built once for these tests: they run the real
// binary, as users do.
var routerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "router-cli-")
	if err != nil {
		panic(err)
	}
	routerBin = filepath.Join(dir, "router")
	if out, err := exec.Command("go", "build", "-o", routerBin, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func runRouter(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(routerBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

func examples(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

func TestHelpVersionAndUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"mcp", "--help"}, {"help", "version"}} {
		if r := runRouter(t, nil, args...); r.code != 0 || !strings.Contains(r.stdout, "Usage:") || r.stderr != "" {
			t.Errorf("%v: exit %d, stdout %.80q, stderr %q; want the help on stdout", args, r.code, r.stdout, r.stderr)
		}
	}
	r := runRouter(t, nil, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); r.code != 0 || err != nil || v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") {
		t.Errorf("version --json: exit %d %q: %v", r.code, r.stdout, err)
	}
	if r := runRouter(t, nil, "--version"); r.code != 0 || !strings.HasPrefix(r.stdout, "router ") {
		t.Errorf("--version: exit %d %q", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"mcp", "extra"}, {"mcp", "--agent", "a/b"}} {
		if r := runRouter(t, nil, args...); r.code != 2 || !strings.Contains(r.stderr, "see router --help") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error (2)", args, r.code, r.stderr)
		}
	}
}

// TestPrintConfigNamesSources: --print-config shows the effective values
// with where each came from, and a bad value is blamed on its real source.
func TestPrintConfigNamesSources(t *testing.T) {
	ws := examples(t)
	r := runRouter(t, []string{"MCPSAG_LOG_LEVEL=debug"}, "--workspace", ws, "--addr", "127.0.0.1:9999", "--print-config")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var manifest struct {
		MatchThreshold float64 `json:"match_threshold"`
	}
	if err := json.Unmarshal(models.DefaultManifest, &manifest); err != nil || manifest.MatchThreshold == 0 {
		t.Fatalf("the bundled model's manifest sets no match_threshold (%v)", err)
	}
	for _, want := range []string{
		"# config file: " + filepath.Join(ws, ".mcp", ".mcp-config.yaml"),
		"addr: 127.0.0.1:9999 # flag --addr",
		"log_level: debug # env MCPSAG_LOG_LEVEL",
		"skills_v1: true # file ",
		fmt.Sprintf("match_threshold: %v # default; from the bundled model's mcpsag-model.json", manifest.MatchThreshold),
		"- path: skills",
		"- project",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, r.stdout)
		}
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--log-level", "bogus"}, "flag --log-level: log_level \"bogus\""},
		{[]string{"MCPSAG_LOG_LEVEL=bogus"}, nil, "env MCPSAG_LOG_LEVEL: log_level \"bogus\""},
	} {
		r := runRouter(t, tc.env, append([]string{"--workspace", ws, "--print-config"}, tc.args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, ".mcp-config.yaml") {
			t.Errorf("%v %v: exit %d, stderr %q; want %q and no blame on the config file", tc.env, tc.args, r.code, r.stderr, tc.want)
		}
	}
}
