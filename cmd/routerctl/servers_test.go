package main

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/slowtest"
)

// catalogServer builds the dev-set catalog MCP server into dir.
func catalogServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "catalog-server")
	build := exec.Command("go", "build", "-o", bin, "../../internal/upstream/upstreamtest/catalog-server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build catalog-server: %v\n%s", err, out)
	}
	return bin
}

// tinyDevSet writes a dev set of two tools in the layout of ../shared/eval.
func tinyDevSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(p, s string) {
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(s), 0o644))
	}
	write(filepath.Join(dir, "mapping.json"), `{"readFile": "read-file", "sendEmail": "send-email"}`)
	write(filepath.Join(dir, "skills", "read-file", "SKILL.md"), "---\nname: read-file\ndescription: Read a text file from disk\n---\n\n"+
		"## Parameters\n\n- `path` (str, required): the file to read\n")
	write(filepath.Join(dir, "skills", "send-email", "SKILL.md"), "---\nname: send-email\ndescription: Send an email message\n---\n\n"+
		"## Parameters\n\n- `to` (str, required): the recipient\n- `body` (str): the message\n")
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestServersAndKinds(t *testing.T) {
	bin, set := catalogServer(t), tinyDevSet(t)
	ws := daemontest.CopyExamples(t)
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(fmt.Sprintf(`mcp_servers:
  cat: {command: %q, args: [-dir, %q], trust: trusted}
  broken: {command: /nonexistent/mcp-server}
  off: {command: /nonexistent/other, enabled: false}
`, bin, set)), 0o644))
	r := daemontest.Start(t, ws, daemontest.Options{})
	env := map[string]string{"MCPSAG_ADDR": r.Addr}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(ctlEnv(t, env, "list", "--kinds", "tools").stdout, "cat.readFile") {
		if time.Now().After(deadline) {
			t.Fatal("the catalog server's tools never showed up")
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tc := range []struct {
		args          []string
		code          int
		contains, not []string
	}{
		{[]string{"servers"}, 0, []string{"cat", "stdio", "ready", "trusted", "broken", "failed", "off", "disabled",
			"3 servers, 2 tools served", "calling tools is off", "start the server process"}, []string{"/nonexistent"}},
		{[]string{"servers", "--details"}, 0, []string{"calls itself mcpsag-catalog", "next attempt in"}, nil},
		{[]string{"list", "--kinds", "tools"}, 0, []string{"cat.readFile", "cat.sendEmail", "mcp:cat"}, []string{"pdf-form-filling"}},
		{[]string{"list", "--kinds", "skills"}, 0, []string{"pdf-form-filling"}, []string{"cat.readFile"}},
		{[]string{"list"}, 0, []string{"pdf-form-filling", "cat.readFile"}, nil},
		{[]string{"match", "--kinds", "tools", "read a text file from disk"}, 0, []string{"cat.readFile"}, []string{"pdf-form-filling"}},
		{[]string{"match", "--kinds", "skills", "read a text file from disk"}, 0, nil, []string{"cat.readFile"}},
		{[]string{"status"}, 0, []string{"tools: 2 served from 3 MCP servers (1 ready, 1 failed)", "tools_call=false"}, nil},
		{[]string{"list", "--kinds", "gadgets"}, 2, nil, nil},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			res := ctlEnv(t, env, tc.args...)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", res.code, tc.code, res.stdout, res.stderr)
			}
			for _, want := range tc.contains {
				if !strings.Contains(res.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, res.stdout)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(res.stdout, not) {
					t.Errorf("stdout has %q:\n%s", not, res.stdout)
				}
			}
		})
	}
	res := ctlEnv(t, env, "servers", "--json")
	servers, _ := field(t, jsonDoc(t, res), "servers").([]any)
	if len(servers) != 3 {
		t.Errorf("servers --json: %s", res.stdout)
	}
	res = ctlEnv(t, env, "match", "--kinds", "tools", "--json", "send an email")
	if !strings.Contains(res.stdout, `"input_schema"`) || !strings.Contains(res.stdout, `\"required\":[\"to\"]`) {
		t.Errorf("match --json has no input schema:\n%s", res.stdout)
	}
}

// TestEvalTools runs routerctl eval over MetaTool twice, as skills and as the
// tools of an MCP server (the catalog server), and compares NDCG@10.
func TestEvalTools(t *testing.T) {
	slowtest.Skip(t, "evaluates a dev set of ../shared as tools")
	set, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared", "eval", "metatool"))
	if v := os.Getenv("MCPSAG_EVAL_DIR"); v != "" {
		set = filepath.Join(v, "metatool")
	}
	if _, err := os.Stat(filepath.Join(set, "mapping.json")); err != nil {
		t.Skipf("dev set metatool not found: %v", err)
	}
	bin := catalogServer(t)
	cfg := filepath.Join(t.TempDir(), "servers.yaml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf("mcp_servers:\n  metatool: {command: %q, args: [-dir, %q]}\n", bin, set)), 0o644))
	queries := filepath.Join(set, "queries.jsonl")
	skills := jsonDoc(t, ctl(t, "eval", "--skills", set, "--queries", queries, "--json"))
	res := ctl(t, "eval", "--config", cfg, "--queries", queries, "--tool-labels", filepath.Join(set, "mapping.json"), "--json")
	tools := jsonDoc(t, res)
	a, b := field(t, skills, "ranking.ndcg_at_10").(float64), field(t, tools, "ranking.ndcg_at_10").(float64)
	t.Logf("NDCG@10: skills %.2f, tools %.2f", a, b)
	if field(t, tools, "skills").(float64) != 199 || math.Abs(a-b) > 0.5 {
		t.Errorf("tools %.2f vs skills %.2f (%v indexed)\n%s", b, a, field(t, tools, "skills"), res.stderr)
	}
}
