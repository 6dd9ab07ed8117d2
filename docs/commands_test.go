// Package docs_test keeps the commands in the README and docs/*.md true:
// every command in their shell blocks is either run here, as the reader
// would run it, or listed with the test that covers it and why it does not
// run here (a container engine, a cluster, minutes of benchmarks, the dev
// data in ../shared).
package docs_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// repoRoot is the checkout's top folder, seen from this package.
const repoRoot = ".."

// ranHere marks a command this test runs.
const ranHere = "run by TestDocumentedCommands"

// elsewhere says, for each documented command that is not run here, what
// covers it instead and why it does not run here. A command added to the
// docs must be added here or to the commands run below.
var elsewhere = map[string]string{
	// README
	"go install ./cmd/...": "installs into GOPATH/bin; TestDocumentedCommands builds the same binaries with go build",
	"go test -race ./...":  "the quick run itself; .ci/run runs it as the full run",
	"MCPSAG_TESTS=full go test -race -timeout 30m ./... && MCPSAG_TESTS=full go test -run '^(TestDevSets|TestDevSetsForeignTasks|TestScoresUnchanged)$' ./internal/eval": "the full run, which .ci/run runs",
	"MCPSAG_RELIABILITY=full go test ./reliability -timeout 2h -v":                                                    "two hours; the quick and full runs include the bounded form of the same suite",
	"MCPSAG_CRASH_POINTS=full MCPSAG_RELIABILITY=full go test ./reliability -run TestCrashConsistency -timeout 2h -v": "twenty minutes; the quick and full runs include the bounded crash loop, which kills during a full reindex too",
	// docs/benchmarks.md: minutes each, most on ../shared's data
	"go test -run '^$' -bench 'BenchmarkMatch$' ./internal/match":     "a benchmark (minutes; reads ../shared)",
	"go test -run '^$' -bench 'BenchmarkMatchLong$' ./internal/match": "a benchmark (minutes; reads ../shared)",
	"go build -o /tmp/router ./cmd/router":                            "benchmark setup; every test package that runs the router builds it",
	"go build -o /tmp/routerbench ./cmd/routerbench":                  "benchmark setup; cmd/routerbench's tests build it",
	"/tmp/routerbench gen --skills 10000 --out /tmp/ws10k":            "reads ../shared; TestGen (cmd/routerbench) runs gen",
	"/tmp/router --workspace /tmp/ws10k --state-dir /tmp/state10k --addr 127.0.0.1:7443 --mcp-addr 127.0.0.1:7444 --admin-addr 127.0.0.1:9464 --log-level warn &": "a 10,000-skill benchmark workspace",
	"PID=$!": "benchmark setup",
	"/tmp/routerbench run --addr 127.0.0.1:7443 --queries /tmp/ws10k/queries.jsonl --clients 16 --duration 30s --pid $PID --json":                                       "a 30 s load run; TestRunAgainstRouter (cmd/routerbench) runs a short one",
	"/tmp/routerbench run --transport mcp-http --mcp-url http://127.0.0.1:7444/mcp --queries /tmp/ws10k/queries.jsonl --clients 16 --duration 30s --pid $PID --json":    "a 30 s load run; TestRunAgainstRouter (cmd/routerbench) runs a short one",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws10k MCPSAG_BENCH_STATE=/tmp/state10k go test -run '^$' -bench MatchWorkspace ./internal/router":                                      "a benchmark on a generated workspace",
	"/tmp/routerbench run --addr 127.0.0.1:7443 --queries /tmp/ws10k/queries.jsonl --clients 16 --duration 15s --pid $PID --method load --load-level 1 --json":          "a 15 s load run; TestRunAgainstRouter (cmd/routerbench) runs a short one",
	"/tmp/routerbench lifecycle --router /tmp/router --workspace /tmp/ws10k --state-dir /tmp/state10k --json":                                                           "minutes; TestLifecycle (cmd/routerbench, full run) runs a small one",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100k MCPSAG_BENCH_STATE=/tmp/state100k go test -run '^$' -bench 'BenchmarkWarmRestart$' -benchtime 2x -v ./internal/loader":          "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_STATE=/tmp/state100k go test -run '^$' -bench ReadSnapshot -benchtime 1x ./internal/loader":                                                           "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_STATE=/tmp/state100000 go test -run '^$' -bench 'ReadSnapshot/private$' -benchtime 1x ./internal/loader":                                              "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100000 MCPSAG_BENCH_STATE=/tmp/state100000 go test -run '^$' -bench 'MatchWorkspace/serial' -benchtime 400x ./internal/router":       "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run '^$' -bench 'BenchmarkScan|BenchmarkReadListings' -benchtime 3x ./internal/skillfs":                                "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run '^$' -bench 'BenchmarkEditToServed$' -benchtime 10x -v ./internal/loader":                                          "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100k MCPSAG_BENCH_STATE=/tmp/state100k go test -run '^$' -bench 'BenchmarkWarmRestart/last-scan' -benchtime 3x -v ./internal/loader": "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run '^$' -bench ReadScanResult -benchtime 10x ./internal/skillfs":                                                      "a benchmark at 100,000 skills",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100000 MCPSAG_BENCH_STATE=/tmp/state100000 go test -run '^$' -bench 'BenchmarkWarmRestart$' -benchtime 2x -v ./internal/loader":      "a benchmark at 100,000 skills",
	"grep -E 'VmRSS|RssAnon|RssFile' /proc/$PID/status":                                                                                                  "reads a benchmark router's memory",
	"curl -s 127.0.0.1:9464/metrics | grep -E '^go_gc_heap_(live|goal)_bytes'":                                                                           "reads a benchmark router's memory; TestMetricsEndpoint (internal/telemetry) checks both series",
	"MCPSAG_BENCH_WORKSPACE=/tmp/ws100000 MCPSAG_BENCH_STATE=/tmp/state100000 go test -run '^$' -bench StatusWorkspace -benchtime 40x ./internal/router": "a benchmark at 100,000 skills",
	"export GOFLAGS=-buildvcs=false": "benchmark setup",
	"go build -o /tmp/router ./cmd/router && go build -o /tmp/routerbench ./cmd/routerbench":                "benchmark setup",
	"git worktree add --detach ../before 4439479":                                                           "benchmark setup: another checkout to compare with",
	"(cd ../before && go test -run '^$' -bench 'BenchmarkMatch$' ./internal/match)":                         "a benchmark (minutes; reads ../shared)",
	"for n in 1000 10000 100000; do /tmp/routerbench gen --skills $n --out /tmp/ws$n; done":                 "reads ../shared; TestGen (cmd/routerbench) runs gen",
	"for n in 1000 10000 100000; do":                                                                        "benchmark loop (minutes)",
	"/tmp/routerbench lifecycle --router /tmp/router --workspace /tmp/ws$n --state-dir /tmp/state$n --json": "minutes; TestLifecycle (cmd/routerbench, full run) runs a small one",
	"done": "benchmark loop",
	// docs/deployment.md: no container engine, init system or cluster in CI
	"docker build -t mcpsag/router:dev --build-arg VERSION=$(git describe --tags --always) --build-arg REVISION=$(git rev-parse HEAD) .":     "no container engine; deploy/dockerfile_test.go parses and lints the Dockerfile and builds its binaries with its flags",
	"docker run --read-only -p 7443:7443 -v \"$PWD/examples/skills:/workspace/skills:ro\" -v mcpsag-state:/var/lib/mcpsag mcpsag/router:dev": "no container engine; deploy/dockerfile_test.go",
	"install -m 0755 router routerctl /usr/local/bin/":                                   "installs into the system; deploy/systemd/unit_test.go",
	"install -d /srv/mcpsag/skills":                                                      "installs into the system; deploy/systemd/unit_test.go",
	"install -D -m 0644 deploy/systemd/mcpsag-router.env.example /etc/mcpsag/router.env": "installs into the system; deploy/systemd/unit_test.go reads the file",
	"install -m 0644 deploy/systemd/mcpsag-router.service /etc/systemd/system/":          "installs into the system; deploy/systemd/unit_test.go verifies the unit",
	"systemctl daemon-reload && systemctl enable --now mcpsag-router":                    "needs systemd as init; TestSystemdNotify (cmd/router) runs the router as the unit does",
	"docker tag mcpsag/router:dev registry.example.com/mcpsag/router:v1.2.3":             "no container engine or registry",
	"docker push registry.example.com/mcpsag/router:v1.2.3":                              "no container engine or registry",
	"kind load docker-image mcpsag/router:dev":                                           "needs a kind cluster",
	"kubectl apply -k deploy/kubernetes/base":                                            "needs a cluster; deploy/kubernetes/manifests_test.go builds the same kustomization",
	"router --workspace /srv/mcpsag --addr 127.0.0.1:7443 --mcp-addr 127.0.0.1:7444":     "the router behind nginx; TestNginxInFront (deploy/nginx) runs it so, with nginx in front",
	// docs/mcp.md: an agent host on the other end
	"router mcp --workspace ~/project":                                                                                  "an agent host talks on stdin; TestMCPOverStdio (internal/daemon)",
	"router mcp --workspace ~/project --agent reviewer":                                                                 "an agent host talks on stdin; TestMCPOverStdio (internal/daemon)",
	"router --workspace ~/project &":                                                                                    "a daemon beside an agent host; TestAttachedMCP (internal/remote)",
	"router mcp --connect 127.0.0.1:7443":                                                                               "an agent host talks on stdin; TestAttachedMCP (internal/remote)",
	"router mcp --connect router.internal:7443 --tls-ca ca.pem --agent reviewer":                                        "a remote TLS router; TestAttachedMCP (internal/remote)",
	"router --workspace ~/project --mcp-addr 127.0.0.1:7444":                                                            "TestEmptyAddressTurnsListenersOff (cmd/router) starts the router with MCP over HTTP",
	"claude mcp add skills -- router mcp --workspace /path/to/project":                                                  "needs Claude Code",
	"claude mcp add --transport http skills http://127.0.0.1:7444/mcp --header \"Authorization: Bearer $MCPSAG_TOKEN\"": "needs Claude Code",
	"go build -o /tmp/catalog-server ./internal/upstream/upstreamtest/catalog-server":                                   "dev-set setup; the upstream tests build it",
	"printf 'mcp_servers:\\n seal: {command: /tmp/catalog-server, args: [-dir, %s], max_tools: 10000}\\n' \"$PWD/../shared/eval/seal-tools\" > /tmp/seal.yaml": "reads ../shared",
	"routerctl eval --config /tmp/seal.yaml --queries ../shared/eval/seal-tools/queries.jsonl --tool-labels ../shared/eval/seal-tools/mapping.json":            "reads ../shared; TestEvalTools (cmd/routerctl)",
	"routerctl eval --skills ../shared/eval/seal-tools --queries ../shared/eval/seal-tools/queries.jsonl":                                                      "reads ../shared; TestDevSetsAsTools (internal/eval)",
	// docs/operations.md
	"tar -czf /tmp/mcpsag-backup.tar.gz --exclude=srv/mcpsag/.mcp/state -C / etc/mcpsag srv/mcpsag": "writes to the system's folders; TestBackupAndRestore (reliability) runs it under a temporary folder",
	"systemctl stop mcpsag-router":                                                       "needs systemd as init; TestBackupAndRestore (reliability) stops the router binary in its place",
	"tar -xzf /tmp/mcpsag-backup.tar.gz -C /":                                            "writes to the system's folders; TestBackupAndRestore (reliability) runs it under a temporary folder",
	"systemctl start mcpsag-router":                                                      "needs systemd as init; TestBackupAndRestore (reliability) starts the router binary in its place",
	"routerctl health --wait --timeout 5m":                                               "TestBackupAndRestore (reliability) runs it against the restored router",
	"journalctl -u mcpsag-router -o cat | grep -F '\"msg\":\"background reindex failed'": "needs systemd's journal; TestLogLinesExist checks the message is the router's",
	// docs/reliability.md
	"MCPSAG_TESTS=full go test ./reliability":                                                          "part of the full run (the quick run leaves out its soak and tree swap)",
	"MCPSAG_SOAK=1h MCPSAG_RELIABILITY=full go test ./reliability -run TestLoadAndSoak -timeout 2h -v": "an hour",
	"go test ./internal/store -run '^$' -fuzz '^FuzzOpen$' -fuzztime 10m":                              "ten minutes; .ci/run fuzzes every target for 8 s",
	"go run golang.org/x/vuln/cmd/govulncheck@v1.9.0 ./...":                                            "needs the vulnerability database on the network",
	// docs/telemetry.md
	"export OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4317":                                                                "needs a collector; TestOTLPExport (internal/telemetry) exports to real OTLP receivers",
	"export OTEL_EXPORTER_OTLP_PROTOCOL=grpc":                                                                                      "needs a collector; TestOTLPExport (internal/telemetry)",
	"export OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=prod":                                                             "needs a collector; TestResourceFromEnv (internal/telemetry)",
	"router --workspace /srv/skills --admin-addr 127.0.0.1:9464":                                                                   "TestStderrIsJSONLines (cmd/router) runs the router with OTLP and the admin listener",
	"prometheus --config.file=/etc/prometheus/prometheus.yml --storage.tsdb.retention.time=30d --storage.tsdb.retention.size=10GB": "a long-running Prometheus; TestPrometheusDashboard (internal/daemon) runs one",
}

// documented returns every command line of the sh blocks in the README and
// docs/*.md: continuation lines joined, comments and prompts dropped, with
// the file it came from.
func documented(t *testing.T) map[string]string {
	t.Helper()
	files := []string{filepath.Join(repoRoot, "README.md")}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	block := regexp.MustCompile("(?ms)^```(sh|bash|shell)\n(.*?)^```")
	out := map[string]string{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(src, -1) {
			for _, cmd := range commandLines(string(m[2])) {
				out[cmd] = filepath.Base(f)
			}
		}
	}
	return out
}

// comment is a shell comment after a command: whitespace, #, a space.
var comment = regexp.MustCompile(`\s+#\s.*$`)

// commandLines splits a shell block into commands.
func commandLines(body string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		trimmed = comment.ReplaceAllString(trimmed, "")
		if rest, ok := strings.CutSuffix(trimmed, `\`); ok {
			cur.WriteString(strings.TrimSpace(rest) + " ")
			continue
		}
		cur.WriteString(trimmed)
		out = append(out, strings.Join(strings.Fields(cur.String()), " "))
		cur.Reset()
	}
	return out
}

// TestEveryDocumentedCommandIsAccountedFor: each command is run by
// TestDocumentedCommands or listed in elsewhere, and elsewhere lists no
// command the docs no longer have.
func TestEveryDocumentedCommandIsAccountedFor(t *testing.T) {
	docs := documented(t)
	run := map[string]bool{startRouter: true}
	for _, c := range quickStart {
		run[c.cmd] = true
	}
	for _, c := range grpcurlCommands {
		run[c] = true
	}
	for cmd, file := range docs {
		if _, ok := elsewhere[cmd]; !ok && !run[cmd] {
			t.Errorf("%s: %q is neither run by TestDocumentedCommands nor listed in elsewhere with the test that covers it", file, cmd)
		}
	}
	for cmd := range elsewhere {
		if _, ok := docs[cmd]; !ok {
			t.Errorf("elsewhere lists %q, which no document has any more", cmd)
		}
	}
	for cmd := range run {
		if _, ok := docs[cmd]; !ok {
			t.Errorf("TestDocumentedCommands runs %q, which no document has any more", cmd)
		}
	}
}

// startRouter is the README's first command: the router on the examples.
const startRouter = "go run ./cmd/router --workspace examples"

// quickStart are the README's commands on the bundled examples, in the
// order a reader runs them, and what their output must hold.
var quickStart = []struct {
	cmd  string
	want string
}{
	{`go run ./cmd/routerctl match "fill in a PDF form from a JSON file"`, "pdf-form-filling"},
	{`go run ./cmd/routerctl match "what is the capital of France"`, "no skill fits"},
	{`go run ./cmd/routerctl list`, "7 skills"},
	{`go run ./cmd/routerctl show pdf-form-filling`, "scripts/fill_form.py"},
	{`go run ./cmd/routerctl load kubernetes-debugging --level 2 --budget 300`, "<skill_content"},
	{`go run ./cmd/routerctl load pdf-form-filling --resource references/field-types.md`, "AcroForm"},
	{`go run ./cmd/routerctl list --agent reviewer`, "code-review-checklist"},
	{`go run ./cmd/routerctl list --budget 800`, "of 800 characters"},
	{`go run ./cmd/routerctl status`, "serving"},
	{`go run ./cmd/routerctl servers`, "no MCP servers configured"},
	{`go run ./cmd/routerctl match --kinds tools "read a text file"`, "no tool fits"},
	{`go run ./cmd/routerctl health`, "serving"},
	{`go run ./cmd/routerctl validate examples`, "0 errors"},
	{`go run ./cmd/routerctl eval --skills examples --queries testdata/eval-sample/queries.jsonl`, "Hit@1"},
	{`go run ./cmd/routerctl calibrate --skills examples --queries testdata/eval-sample/queries.jsonl --config examples/.mcp/.mcp-config.yaml --out /tmp/calibrated.yaml`, "calibrated.yaml"},
}

// grpcurlCommands are the README's grpcurl calls, run when grpcurl is on
// PATH (.ci/run installs it).
var grpcurlCommands = []string{
	`grpcurl -plaintext 127.0.0.1:7443 list`,
	`grpcurl -plaintext -d '{"task": "my pod is stuck in CrashLoopBackOff", "top_k": 3}' 127.0.0.1:7443 mcpsag.router.v1.SkillRouter/Match`,
	`grpcurl -plaintext -d '{"name": "release-notes", "level": "LOAD_LEVEL_BODY", "token_budget": 200}' 127.0.0.1:7443 mcpsag.router.v1.SkillRouter/Load`,
	`grpcurl -plaintext 127.0.0.1:7443 grpc.health.v1.Health/Check`,
}

// TestDocumentedCommands follows the README's quick start in a copy of the
// checkout's examples: it starts the router as `go run ./cmd/router
// --workspace examples` does (the binary built once, on a free port that
// MCPSAG_ADDR names for every command), then runs each documented command
// and checks its exit code and output. /tmp/ in a command is a temporary
// folder here.
func TestDocumentedCommands(t *testing.T) {
	start := startRouter
	dir, bin := t.TempDir(), t.TempDir()
	for _, cmd := range []string{"router", "routerctl"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
		build.Dir = repoRoot
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	daemontest.CopyTree(t, filepath.Join(repoRoot, "examples"), filepath.Join(dir, "examples"))
	daemontest.CopyTree(t, filepath.Join(repoRoot, "testdata", "eval-sample"), filepath.Join(dir, "testdata", "eval-sample"))
	addr := daemontest.FreeAddr(t)
	tmp := t.TempDir()
	env := append(cleanEnv(), "MCPSAG_ADDR="+addr)
	shell := func(ctx context.Context, cmd string) *exec.Cmd {
		cmd = strings.ReplaceAll(cmd, "/tmp/", tmp+"/")
		cmd = strings.ReplaceAll(cmd, "go run ./cmd/", bin+"/")
		cmd = strings.ReplaceAll(cmd, "127.0.0.1:7443", addr)
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Dir, c.Env = dir, env
		return c
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)                   // after the router's stop below
	router := shell(ctx, "exec "+start) // the router itself gets the signal below
	var logs bytes.Buffer
	router.Stderr = &logs
	if err := router.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = router.Process.Signal(os.Interrupt)
		if err := router.Wait(); err != nil {
			t.Errorf("the router stopped with %v\n%s", err, logs.String())
		}
	})
	if out, err := shell(ctx, "go run ./cmd/routerctl health --wait --timeout 60s").CombinedOutput(); err != nil {
		t.Fatalf("the router did not serve: %v\n%s\nrouter log:\n%s", err, out, logs.String())
	}

	for _, c := range quickStart {
		t.Run(c.cmd, func(t *testing.T) {
			out, err := shell(ctx, c.cmd).CombinedOutput()
			if err != nil || !strings.Contains(string(out), c.want) {
				t.Errorf("%v; want exit 0 and %q in:\n%s", err, c.want, out)
			}
		})
	}
	t.Run("the snapshot's size in docs/deployment.md", func(t *testing.T) {
		snapshotSizeAsDocumented(t, filepath.Join(dir, "examples", ".mcp", "state", "index.snapshot"))
	})
	t.Run("grpcurl", func(t *testing.T) {
		if _, err := exec.LookPath("grpcurl"); err != nil {
			t.Skip("grpcurl not on PATH; .ci/run installs it (go install github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4)")
		}
		want := []string{"mcpsag.router.v1.SkillRouter", "kubernetes-debugging", "skill_content", "SERVING"}
		for i, cmd := range grpcurlCommands {
			out, err := shell(ctx, cmd).CombinedOutput()
			if err != nil || !strings.Contains(string(out), want[i]) {
				t.Errorf("%s: %v; want exit 0 and %q in:\n%s", cmd, err, want[i], out)
			}
		}
	})
}

// cleanEnv is this process's environment without MCPSAG_ and OTEL_
// variables, which would change what the commands do.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MCPSAG_") || strings.HasPrefix(kv, "OTEL_")
	})
}

// snapshotSizeAsDocumented checks the size docs/deployment.md gives the
// index snapshot of a small catalog against the one the router wrote for
// the examples (it said "about 3 KiB per skill": 1.36 MB for nine): the
// vectors are stored in blocks of 1,024 skills.
func snapshotSizeAsDocumented(t *testing.T, path string) {
	t.Helper()
	var size int64
	for deadline := time.Now().Add(time.Minute); size == 0; time.Sleep(100 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		} else if time.Now().After(deadline) {
			t.Fatalf("the router wrote no index snapshot within a minute: %v", err)
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "deployment.md"))
	if err != nil {
		t.Fatal(err)
	}
	const said = "about 2.0 MB for any catalog of\n  up to 1,024 skills (2.01 MB for the nine example skills)"
	if !strings.Contains(string(doc), said) {
		t.Errorf("docs/deployment.md no longer says %q; keep this test and the text together", said)
	}
	if size < 1_950_000 || size > 2_070_000 {
		t.Errorf("index.snapshot of the examples is %d bytes; docs/deployment.md says 2.01 MB", size)
	}
}
