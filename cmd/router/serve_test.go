package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// routerProc is a router binary started by a test, its stderr read line by
// line as it comes.
type routerProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and stderr is read
	code int           // the exit code, once done

	mu    sync.Mutex
	lines []string
	grew  chan struct{} // closed and replaced when a line arrives
}

// startRouter runs the router binary with args and env (added to this
// process's environment without its MCPSAG_, OTEL_ and NOTIFY_ variables).
// It is killed when the test ends if it still runs.
func startRouter(t *testing.T, env []string, args ...string) *routerProc {
	t.Helper()
	cmd := exec.Command(routerBin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPSAG_") && !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "NOTIFY_") && !strings.HasPrefix(kv, "WATCHDOG_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &routerProc{cmd: cmd, done: make(chan struct{}), grew: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			p.code = ee.ExitCode()
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// stderr returns the lines read so far.
func (p *routerProc) stderr() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// waitLog waits for a JSON log line that match accepts and returns it
// decoded. It fails the test after timeout, or when the process exits
// first.
func (p *routerProc) waitLog(t *testing.T, timeout time.Duration, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	m, err := p.lookFor(timeout, match)
	if err != nil {
		t.Fatalf("no %s: %v; stderr:\n%s", what, err, strings.Join(p.stderr(), "\n"))
	}
	return m
}

// lookFor returns the first JSON log line that match accepts, waiting up
// to timeout for it.
func (p *routerProc) lookFor(timeout time.Duration, match func(map[string]any) bool) (map[string]any, error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		lines, grew := p.lines[seen:], p.grew
		seen = len(p.lines)
		p.mu.Unlock()
		for _, l := range lines {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && match(m) {
				return m, nil
			}
		}
		select {
		case <-grew:
		case <-p.done:
			if len(p.stderr()) == seen {
				return nil, fmt.Errorf("the router exited (code %d)", p.code)
			}
		case <-deadline:
			return nil, fmt.Errorf("not within %s", timeout)
		}
	}
}

// editUntil writes content to file, again every few seconds (with a
// counter in a comment) until the router logs a line match accepts: a
// config watcher that starts after the first write would not see it.
func (p *routerProc) editUntil(t *testing.T, file, content, what string, match func(map[string]any) bool) {
	t.Helper()
	for i := range 10 {
		writeFile(t, file, fmt.Sprintf("%s# edit %d\n", content, i))
		if _, err := p.lookFor(3*time.Second, match); err == nil {
			return
		}
	}
	t.Fatalf("no %s after 10 edits; stderr:\n%s", what, strings.Join(p.stderr(), "\n"))
}

// stop sends SIGTERM and returns the exit code.
func (p *routerProc) stop(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the router did not stop within 30s of SIGTERM; stderr:\n%s", strings.Join(p.stderr(), "\n"))
	}
	return p.code
}

// msgIs matches log lines by message.
func msgIs(msg string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["msg"] == msg }
}

// jsonObjectKeys parses line as one JSON object and returns its top-level
// keys in order, repeated keys included (encoding/json would keep the
// last and hide the others).
func jsonObjectKeys(line string) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more after the object")
	}
	return keys, nil
}

// TestStderrIsJSONLines reads a router's whole stderr through a start, a
// failing OTLP export, a config reload, a rejected config edit and a
// shutdown: every line must be one JSON object, with no key twice.
func TestStderrIsJSONLines(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	cfgFile := filepath.Join(t.TempDir(), "router.yaml")
	writeFile(t, cfgFile, "flags: {skills_v1: true}\n")
	otlp := "http://" + daemontest.FreeAddr(t)
	p := startRouter(t, []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_TIMEOUT=300", "OTEL_METRIC_EXPORT_INTERVAL=300", "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_BLRP_SCHEDULE_DELAY=100",
	}, "--workspace", ws, "--config", cfgFile, "--state-dir", t.TempDir(),
		"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0")

	p.waitLog(t, time.Minute, "first index", msgIs("index generation published"))
	otelErr := p.waitLog(t, time.Minute, "an OTLP export failure", func(m map[string]any) bool { return m["component"] == "otel" })
	if !strings.Contains(fmt.Sprint(otelErr["err"]), strings.TrimPrefix(otlp, "http://")) && !strings.Contains(fmt.Sprint(otelErr["err"]), "deadline") {
		t.Errorf("OTel error line %v does not say what failed", otelErr)
	}
	p.editUntil(t, cfgFile, "flags: {skills_v1: true, skills_exec: true}\n", "config reload", msgIs("config reloaded"))
	p.editUntil(t, cfgFile, "flags: {skills_v1: maybe}\n", "rejected config edit", msgIs("config edit rejected; the previous config stays in force"))
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}

	lines := p.stderr()
	if len(lines) < 5 || !strings.Contains(lines[len(lines)-1], `"router stopped"`) {
		t.Errorf("stderr ends with %q; want the stop logged last", lines[len(lines)-1])
	}
	for i, l := range lines {
		keys, err := jsonObjectKeys(l)
		if err != nil {
			t.Errorf("line %d is not one JSON object (%v): %s", i+1, err, l)
			continue
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("line %d has key %q twice: %s", i+1, k, l)
			}
			seen[k] = true
		}
		if strings.Contains(l, "available again") {
			t.Errorf("line %d reports a recovery on a fresh start: %s", i+1, l)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMissingWorkspace: router and router mcp refuse a workspace that does
// not exist, say what to do, and create nothing.
func TestMissingWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "workspace")
	for _, args := range [][]string{{"--workspace", missing, "--addr", "127.0.0.1:0"}, {"mcp", "--workspace", missing}} {
		r := runRouter(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "workspace "+missing+" does not exist") || !strings.Contains(r.stderr, "--workspace") {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and a message naming the folder and --workspace", args, r.code, r.stderr)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(r.stderr), &line); err != nil || line["level"] != "ERROR" {
			t.Errorf("%v: stderr %q is not one JSON error line: %v", args, r.stderr, err)
		}
		if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%v: created %s (%v)", args, filepath.Dir(missing), err)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "")
	if r := runRouter(t, nil, "--workspace", file, "--addr", "127.0.0.1:0"); r.code != 1 || !strings.Contains(r.stderr, "is not a folder") {
		t.Errorf("a file as workspace: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestEmptyAddressTurnsListenersOff: the config file turns on the admin and
// MCP listeners; an empty flag or variable turns each off, and listeners
// on every interface are warned about: admin and MCP ones, and the gRPC one
// with auth off (it logged only its INFO line).
func TestEmptyAddressTurnsListenersOff(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	cfgFile := filepath.Join(t.TempDir(), "router.yaml")
	writeFile(t, cfgFile, "admin_addr: 127.0.0.1:0\nmcp: {addr: \"127.0.0.1:0\"}\n")
	listening := func(env []string, args ...string) (map[string]any, []string) {
		t.Helper()
		p := startRouter(t, env, append([]string{"--workspace", ws, "--config", cfgFile, "--state-dir", t.TempDir(), "--addr", "127.0.0.1:0"}, args...)...)
		line := p.waitLog(t, time.Minute, "the listening line", msgIs("router listening"))
		p.waitLog(t, time.Minute, "first index", msgIs("index generation published"))
		if code := p.stop(t); code != 0 {
			t.Errorf("exit %d", code)
		}
		return line, p.stderr()
	}
	for _, tc := range []struct {
		name         string
		env          []string
		args         []string
		admin, mcp   bool
		warnAdmin    bool
		warnMCPOpen  bool
		warnGRPCOpen bool
	}{
		{"config file", nil, nil, true, true, false, false, false},
		{"empty flags", nil, []string{"--admin-addr", "", "--mcp-addr="}, false, false, false, false, false},
		{"empty variables", []string{"MCPSAG_ADMIN_ADDR=", "MCPSAG_MCP_ADDR="}, nil, false, false, false, false, false},
		{"every interface", nil, []string{"--admin-addr", "0.0.0.0:0", "--mcp-addr", "0.0.0.0:0"}, true, true, true, true, false},
		{"gRPC on every interface", nil, []string{"--addr", "0.0.0.0:0"}, true, true, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line, stderr := listening(tc.env, tc.args...)
			if got := line["admin_addr"] != ""; got != tc.admin {
				t.Errorf("admin_addr %q; want on: %v", line["admin_addr"], tc.admin)
			}
			if got := line["mcp_addr"] != ""; got != tc.mcp {
				t.Errorf("mcp_addr %q; want on: %v", line["mcp_addr"], tc.mcp)
			}
			all := strings.Join(stderr, "\n")
			if got := strings.Contains(all, "the admin listener accepts connections on every network interface"); got != tc.warnAdmin {
				t.Errorf("admin warning logged: %v, want %v", got, tc.warnAdmin)
			}
			if got := strings.Contains(all, "MCP over HTTP accepts connections on every network interface; anyone who reaches it may use it"); got != tc.warnMCPOpen {
				t.Errorf("MCP warning logged: %v, want %v", got, tc.warnMCPOpen)
			}
			if got := strings.Contains(all, "the gRPC listener accepts connections on every network interface and anyone who reaches it may use it"); got != tc.warnGRPCOpen {
				t.Errorf("gRPC warning logged: %v, want %v", got, tc.warnGRPCOpen)
			}
		})
	}
	// The empty value shows in --print-config with where it came from.
	r := runRouter(t, []string{"MCPSAG_MCP_ADDR="}, "--workspace", ws, "--config", cfgFile, "--admin-addr", "", "--print-config")
	if !strings.Contains(r.stdout, `admin_addr: "" # flag --admin-addr`) || !bytes.Contains([]byte(r.stdout), []byte(`addr: "" # env MCPSAG_MCP_ADDR`)) {
		t.Errorf("--print-config does not show the listeners off and why:\n%s", r.stdout)
	}
}

// TestUnknownExporterIsNamed: an OTEL_* variable that names no exporter or
// protocol stops the start with one JSON error line naming the variable,
// its value and the values it takes (it said "telemetry: telemetry: traces
// exporter from OTEL_* environment: unknown exporter or metrics producer").
func TestUnknownExporterIsNamed(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	for env, want := range map[string]string{
		"OTEL_TRACES_EXPORTER=jaeger":     `telemetry: OTEL_TRACES_EXPORTER="jaeger" is not one the router knows; want otlp, console or none`,
		"OTEL_METRICS_EXPORTER=statsd":    `telemetry: OTEL_METRICS_EXPORTER="statsd" is not one the router knows; want otlp, prometheus, console or none`,
		"OTEL_EXPORTER_OTLP_PROTOCOL=udp": `telemetry: OTEL_EXPORTER_OTLP_PROTOCOL="udp" is not one the router knows; want grpc or http/protobuf`,
	} {
		p := startRouter(t, []string{env}, "--workspace", ws, "--state-dir", t.TempDir(), "--addr", "127.0.0.1:0")
		<-p.done
		lines := p.stderr()
		var line map[string]any
		if p.code != 1 || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &line) != nil || line["level"] != "ERROR" || line["err"] != want {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one JSON error line saying %q", env, p.code, lines, want)
		}
	}
}
