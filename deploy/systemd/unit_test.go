// Checks of the systemd unit and its example environment file: systemd's own
// verifier and offline security review where systemd-analyze is installed,
// and, everywhere, a reading of the directives the sandbox depends on.
package systemd_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/config"
)

const (
	unitFile = "mcpsag-router.service"
	envFile  = "mcpsag-router.env.example"
)

// unit is a parsed unit file: section → key → values in file order. An empty
// assignment is kept as "" (for list settings it resets the list).
type unit map[string]map[string][]string

// parseUnit reads systemd's unit file syntax: [Section] headers, Key=Value
// lines, # and ; comments, and lines continued with a trailing backslash.
func parseUnit(path string) (unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	n := 0
	var pending string
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: malformed section header %q", path, n, line)
			}
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("%s:%d: want Key=Value inside a section, got %q", path, n, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(val))
	}
	if pending != "" {
		return nil, fmt.Errorf("%s: ends in a continued line", path)
	}
	return u, sc.Err()
}

// last returns the effective value of a single-valued setting.
func (u unit) last(section, key string) (string, bool) {
	vals := u[section][key]
	if len(vals) == 0 {
		return "", false
	}
	return vals[len(vals)-1], true
}

// list returns a list setting's items after systemd's rules: an empty
// assignment clears what came before.
func (u unit) list(section, key string) []string {
	var items []string
	for _, v := range u[section][key] {
		if v == "" {
			items = nil
			continue
		}
		items = append(items, strings.Fields(v)...)
	}
	return items
}

// environment returns the unit's Environment= assignments, with %S (the
// system state directory root) expanded.
func (u unit) environment() map[string]string {
	env := map[string]string{}
	for _, v := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(v) {
			k, val, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			env[k] = strings.ReplaceAll(val, "%S", "/var/lib")
		}
	}
	return env
}

// readEnvFile reads the active KEY=VALUE lines of an EnvironmentFile.
func readEnvFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(k) {
			t.Errorf("%s:%d: not an assignment: %q", path, i+1, line)
			continue
		}
		env[k] = v
	}
	return env
}

func TestUnitDirectives(t *testing.T) {
	u, err := parseUnit(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"WatchdogSec":             "30s",
		"DynamicUser":             "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"NoNewPrivileges":         "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"RestrictSUIDSGID":        "yes",
		"RestrictNamespaces":      "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"SystemCallArchitectures": "native",
		"Restart":                 "on-failure",
		"UMask":                   "0077",
	}
	for key, v := range want {
		got, ok := u.last("Service", key)
		if !ok || got != v {
			t.Errorf("[Service] %s=%q (set %v), want %q", key, got, ok, v)
		}
	}
	for _, key := range []string{"User", "Group"} {
		if _, ok := u.last("Service", key); ok {
			t.Errorf("[Service] %s= is set: DynamicUser allocates the user", key)
		}
	}
	if got := u.list("Service", "CapabilityBoundingSet"); len(got) != 0 {
		t.Errorf("capabilities %v, want none", got)
	}
	if f := u.list("Service", "SystemCallFilter"); len(f) == 0 || f[0] != "@system-service" {
		t.Errorf("SystemCallFilter %v: want an allow list starting at @system-service", f)
	}
	families := u.list("Service", "RestrictAddressFamilies")
	slices.Sort(families)
	if !slices.Equal(families, []string{"AF_INET", "AF_INET6", "AF_UNIX"}) {
		t.Errorf("RestrictAddressFamilies %v, want AF_INET AF_INET6 AF_UNIX", families)
	}
	if d, _ := u.last("Service", "RestartSec"); d == "" {
		t.Error("RestartSec is not set: restarts would loop at systemd's default pace")
	}
	if _, ok := u.last("Unit", "StartLimitBurst"); !ok {
		t.Error("[Unit] StartLimitBurst is not set")
	}
	if w, _ := u.last("Install", "WantedBy"); w != "multi-user.target" {
		t.Errorf("[Install] WantedBy=%q", w)
	}

	// The state directory systemd creates is the one the router uses, and
	// the workspace with the skills is read-only.
	env := u.environment()
	stateDir, _ := u.last("Service", "StateDirectory")
	if stateDir == "" || env["MCPSAG_STATE_DIR"] != "/var/lib/"+stateDir {
		t.Errorf("MCPSAG_STATE_DIR=%q, StateDirectory=%q: want %%S/<StateDirectory>", env["MCPSAG_STATE_DIR"], stateDir)
	}
	ws := env["MCPSAG_WORKSPACE"]
	if ws == "" || !slices.Contains(u.list("Service", "ReadOnlyPaths"), ws) {
		t.Errorf("workspace %q is not among ReadOnlyPaths %v", ws, u.list("Service", "ReadOnlyPaths"))
	}

	if start, _ := u.last("Service", "ExecStart"); !strings.HasPrefix(start, "/usr/local/bin/router") {
		t.Errorf("ExecStart=%q", start)
	}

	// systemd must wait longer than the router's two-stage stop takes with
	// the production example's drain and grace.
	timeout, _ := u.last("Service", "TimeoutStopSec")
	stop, err := time.ParseDuration(timeout)
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	var prod struct {
		Shutdown struct{ Drain, Grace time.Duration }
	}
	data, err := os.ReadFile(filepath.Join("..", "config", "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &prod); err != nil {
		t.Fatal(err)
	}
	if need := prod.Shutdown.Drain + prod.Shutdown.Grace; need == 0 || stop <= need {
		t.Errorf("TimeoutStopSec=%s, but production.yaml's drain+grace is %s", stop, need)
	}
}

// TestEnvFile resolves the router's configuration from the unit's environment
// and the example environment file, as the router would under systemd.
func TestEnvFile(t *testing.T) {
	u, err := parseUnit(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	fileEnv := readEnvFile(t, envFile)
	env := u.environment()
	for k, v := range fileEnv {
		if !slices.Contains(config.EnvNames, k) && !strings.HasPrefix(k, "OTEL_") {
			t.Errorf("%s sets %s, which the router does not read", envFile, k)
		}
		if _, ok := env[k]; ok {
			// EnvironmentFile= overrides Environment=: the unit's sandbox
			// paths must not be moved from the file.
			t.Errorf("%s sets %s, which the unit fixes", envFile, k)
		}
		env[k] = v
	}
	cfg, err := config.Resolve(config.Overrides{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("the unit's environment does not resolve: %v", err)
	}
	if cfg.Workspace != "/srv/mcpsag" || cfg.StateDir != "/var/lib/mcpsag" || cfg.Addr != "127.0.0.1:7443" || cfg.AdminAddr != "127.0.0.1:9464" {
		t.Errorf("resolved workspace %q state %q addr %q admin %q", cfg.Workspace, cfg.StateDir, cfg.Addr, cfg.AdminAddr)
	}
}

// systemdAnalyze returns the systemd-analyze command, or skips.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not found; install Debian's systemd package (.ci/run does) to verify the unit")
	}
	return p
}

// testUnit copies the unit into a temporary folder with ExecStart pointing at
// an executable placeholder: systemd-analyze verify checks that the binary
// exists, and the test must not install one under /usr/local/bin.
func testUnit(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "router")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "ExecStart=/usr/local/bin/router", "ExecStart="+bin, 1)
	if text == string(data) {
		t.Fatal("ExecStart=/usr/local/bin/router not found in the unit")
	}
	path := filepath.Join(dir, unitFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUnitVerify(t *testing.T) {
	bin := systemdAnalyze(t)
	out, err := exec.Command(bin, "verify", testUnit(t)).CombinedOutput()
	// verify exits 0 on unknown keys and misspelled values but reports
	// them: any output is a finding.
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// maxExposure is the highest overall exposure the offline security review may
// give the unit (0 is fully sandboxed, 10 not at all; systemd labels up to
// 2.0 "OK"). Network access (the router serves gRPC) and the host root file
// system (it reads skills from it) make up most of what remains.
const maxExposure = 2.0

func TestUnitSecurity(t *testing.T) {
	bin := systemdAnalyze(t)
	out, err := exec.Command(bin, "security", "--offline=yes", "--no-pager", testUnit(t)).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for \S+: (\d+\.\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure level in:\n%s", out)
	}
	level, _ := strconv.ParseFloat(string(m[1]), 64)
	t.Logf("overall exposure %.1f", level)
	if level > maxExposure {
		t.Errorf("exposure %.1f, want at most %.1f:\n%s", level, maxExposure, out)
	}
}
