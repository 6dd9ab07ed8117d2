// Checks of the repository's Dockerfile and .dockerignore without a container
// engine: the Dockerfile is parsed with BuildKit's own parser and linter (the
// ones `docker build --check` runs), then held to the rules docs/deployment.md
// states for the image.
package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"go/version"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/mcpsag/router/internal/slowtest"
)

// repoRoot is the checkout's top folder, seen from this package.
const repoRoot = ".."

// The binaries the image ships and where.
var imageBinaries = []string{"/usr/local/bin/router", "/usr/local/bin/routerctl"}

// dockerfile is the parsed Dockerfile.
type dockerfile struct {
	stages   []instructions.Stage
	metaArgs map[string]string // ARGs before the first FROM, with their defaults
	lint     []string          // parser and linter warnings
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := parser.Parse(bytes.NewReader(src))
	if err != nil {
		t.Fatalf("parse Dockerfile: %v", err)
	}
	var d dockerfile
	for _, w := range res.Warnings {
		d.lint = append(d.lint, fmt.Sprintf("line %d: %s", w.Location.Start.Line, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, desc, url, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		d.lint = append(d.lint, fmt.Sprintf("line %d: %s: %s", line, rule, msg))
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		t.Fatalf("Dockerfile instructions: %v", err)
	}
	d.stages = stages
	d.metaArgs = map[string]string{}
	for _, a := range metaArgs {
		for _, kv := range a.Args {
			if kv.Value != nil {
				d.metaArgs[kv.Key] = *kv.Value
			}
		}
	}
	if len(d.stages) == 0 {
		t.Fatal("Dockerfile has no stages")
	}
	return d
}

// goBuild returns the command line of the RUN step that builds the
// binaries.
func (d dockerfile) goBuild(t *testing.T) string {
	t.Helper()
	var build string
	for _, s := range d.stages {
		for _, r := range commands[*instructions.RunCommand](s) {
			if line := strings.Join(r.CmdLine, " "); strings.Contains(line, "go build") {
				build = line
			}
		}
	}
	if build == "" {
		t.Fatal("no RUN step runs go build")
	}
	return build
}

// final returns the last stage, the image that is shipped.
func (d dockerfile) final() instructions.Stage { return d.stages[len(d.stages)-1] }

// baseImage expands the meta ARGs in a stage's FROM.
func (d dockerfile) baseImage(t *testing.T, s instructions.Stage) string {
	t.Helper()
	lex := shell.NewLex('\\')
	res, err := lex.ProcessWordWithMatches(s.BaseName, shell.EnvsFromSlice(envSlice(d.metaArgs)))
	if err != nil {
		t.Fatalf("FROM %s: %v", s.BaseName, err)
	}
	if len(res.Unmatched) > 0 {
		t.Fatalf("FROM %s uses undefined ARGs %v", s.BaseName, res.Unmatched)
	}
	return res.Result
}

func envSlice(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// commands returns the stage's commands of type T.
func commands[T instructions.Command](s instructions.Stage) []T {
	var out []T
	for _, c := range s.Commands {
		if v, ok := c.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// env returns the value an ENV of the stage sets for key.
func env(s instructions.Stage, key string) (string, bool) {
	var val string
	var found bool
	for _, e := range commands[*instructions.EnvCommand](s) {
		for _, kv := range e.Env {
			if kv.Key == key {
				val, found = kv.Value, true
			}
		}
	}
	return val, found
}

// pinnedTag is a tag naming an exact release: major.minor.patch, optionally
// followed by a variant (golang:1.26.8-bookworm).
var pinnedTag = regexp.MustCompile(`^v?\d+\.\d+\.\d+(-[a-z0-9.]+)?$`)

func TestDockerfile(t *testing.T) {
	d := parseDockerfile(t)
	final := d.final()

	t.Run("lint", func(t *testing.T) {
		for _, w := range d.lint {
			t.Errorf("Dockerfile: %s", w)
		}
	})

	t.Run("no ADD", func(t *testing.T) {
		// COPY only: ADD fetches remote URLs and git repositories and
		// unpacks archives, none of which the build should do implicitly.
		for _, s := range d.stages {
			for _, a := range commands[*instructions.AddCommand](s) {
				t.Errorf("stage %q: ADD %v; use COPY (and no remote sources)", s.Name, a.SourcePaths)
			}
		}
	})

	t.Run("base images pinned", func(t *testing.T) {
		var names []string
		for _, s := range d.stages {
			img := d.baseImage(t, s)
			switch {
			case img == "scratch":
			case slices.Contains(names, img):
				// an earlier stage
			case strings.Contains(img, "@sha256:"):
			default:
				_, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":")
				if !ok || !pinnedTag.MatchString(tag) {
					t.Errorf("stage %q: FROM %s is neither a digest nor an exact release tag", s.Name, img)
				}
			}
			names = append(names, s.Name)
		}
	})

	t.Run("build image satisfies go.mod", func(t *testing.T) {
		want := goModVersion(t)
		var checked bool
		for _, s := range d.stages {
			img := d.baseImage(t, s)
			repo, tag, _ := strings.Cut(strings.SplitN(img, "@", 2)[0], ":")
			if repo != "golang" && !strings.HasSuffix(repo, "/golang") {
				continue
			}
			checked = true
			goVer := "go" + strings.SplitN(tag, "-", 2)[0]
			if !version.IsValid(goVer) || version.Compare(goVer, "go"+want) < 0 {
				t.Errorf("stage %q builds with %s; go.mod needs go %s", s.Name, img, want)
			}
		}
		if !checked {
			t.Error("no stage builds from a golang image")
		}
	})

	t.Run("syntax directive", func(t *testing.T) {
		// RUN --mount needs BuildKit's Dockerfile frontend 1.2 or later;
		// the directive asks for it instead of relying on the builder's.
		src, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(string(src), "\n"); !regexp.MustCompile(`^# syntax=docker/dockerfile:1(\.\d+)?$`).MatchString(first) {
			t.Errorf("first line %q, want # syntax=docker/dockerfile:1", first)
		}
	})

	t.Run("static build", func(t *testing.T) {
		build := d.goBuild(t)
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "./cmd/router", "./cmd/routerctl"} {
			if !strings.Contains(build, want) {
				t.Errorf("the go build step %q lacks %s", build, want)
			}
		}
	})

	t.Run("non-root user", func(t *testing.T) {
		users := commands[*instructions.UserCommand](final)
		if len(users) == 0 {
			t.Fatal("the final stage sets no USER: the router would run as root")
		}
		user := users[len(users)-1].User
		uid, _, _ := strings.Cut(user, ":")
		if uid == "" || uid == "0" || uid == "root" || strings.Trim(uid, "0123456789") != "" {
			t.Errorf("USER %q: want a numeric non-zero uid (Kubernetes' runAsNonRoot can only verify numbers)", user)
		}
		// The state volume belongs to that user, so a fresh named volume is
		// writable; nothing else is.
		stateDir, ok := env(final, "MCPSAG_STATE_DIR")
		if !ok {
			t.Fatal("MCPSAG_STATE_DIR is not set in the image")
		}
		var owned bool
		for _, c := range commands[*instructions.CopyCommand](final) {
			if c.DestPath == stateDir {
				owned = c.Chown == user
				if !owned {
					t.Errorf("COPY to %s is owned by %q, want %q", stateDir, c.Chown, user)
				}
			} else if c.Chown != "" {
				t.Errorf("COPY to %s is owned by %q: only the state directory should be writable", c.DestPath, c.Chown)
			}
		}
		if !owned {
			t.Errorf("the image does not create %s owned by %s", stateDir, user)
		}
	})

	t.Run("state is a volume", func(t *testing.T) {
		stateDir, _ := env(final, "MCPSAG_STATE_DIR")
		var vols []string
		for _, v := range commands[*instructions.VolumeCommand](final) {
			vols = append(vols, v.Volumes...)
		}
		if stateDir == "" || !slices.Contains(vols, stateDir) {
			t.Errorf("VOLUME %v does not hold the state directory %q", vols, stateDir)
		}
		if ws, _ := env(final, "MCPSAG_WORKSPACE"); ws == "" || strings.HasPrefix(stateDir, ws+"/") {
			t.Errorf("workspace %q: want a workspace outside the state directory, so skills can be mounted read-only", ws)
		}
	})

	t.Run("entrypoint and binaries", func(t *testing.T) {
		eps := commands[*instructions.EntrypointCommand](final)
		if len(eps) != 1 || eps[0].PrependShell || len(eps[0].CmdLine) == 0 || eps[0].CmdLine[0] != imageBinaries[0] {
			t.Errorf("ENTRYPOINT %+v: want the exec form running %s (signals reach the router, no shell needed)", eps, imageBinaries[0])
		}
		copied := map[string]bool{}
		for _, c := range commands[*instructions.CopyCommand](final) {
			for _, src := range c.SourcePaths {
				copied[filepath.Join(c.DestPath, filepath.Base(src))] = true
			}
		}
		for _, b := range imageBinaries {
			if !copied[b] {
				t.Errorf("the final stage does not copy %s", b)
			}
		}
	})

	t.Run("healthcheck", func(t *testing.T) {
		hcs := commands[*instructions.HealthCheckCommand](final)
		if len(hcs) != 1 {
			t.Fatalf("the final stage has %d HEALTHCHECKs, want 1", len(hcs))
		}
		h := hcs[0].Health
		if len(h.Test) < 2 || h.Test[0] != "CMD" {
			t.Fatalf("HEALTHCHECK %v: want the exec form (the image has no shell)", h.Test)
		}
		argv := h.Test[1:]
		if argv[0] != imageBinaries[1] || argv[len(argv)-1] != "health" {
			t.Errorf("HEALTHCHECK runs %v, want %s ... health", argv, imageBinaries[1])
		}
		if h.Timeout == 0 || h.Interval == 0 || h.StartPeriod == 0 {
			t.Errorf("HEALTHCHECK timings %+v: set interval, timeout and start period", h)
		}
		// The address it checks is the one the router listens on, and that
		// port is exposed.
		addr := flagValue(argv, "--addr")
		listen, _ := env(final, "MCPSAG_ADDR")
		_, checkPort, err1 := net.SplitHostPort(addr)
		_, listenPort, err2 := net.SplitHostPort(listen)
		if err := errors.Join(err1, err2); err != nil || checkPort != listenPort {
			t.Errorf("HEALTHCHECK checks %q but the router listens on %q (%v)", addr, listen, err)
		}
		if !exposed(final, listenPort) {
			t.Errorf("port %s is not EXPOSEd", listenPort)
		}
		if admin, _ := env(final, "MCPSAG_ADMIN_ADDR"); admin != "" {
			if _, p, _ := net.SplitHostPort(admin); !exposed(final, p) {
				t.Errorf("admin port %s is not EXPOSEd", p)
			}
		}
	})

	t.Run("labels", func(t *testing.T) {
		labels := map[string]string{}
		for _, l := range commands[*instructions.LabelCommand](final) {
			for _, kv := range l.Labels {
				labels[kv.Key] = kv.Value
			}
		}
		for _, k := range []string{"title", "description", "source", "version", "revision"} {
			if labels["org.opencontainers.image."+k] == "" {
				t.Errorf("label org.opencontainers.image.%s is missing", k)
			}
		}
	})
}

func flagValue(argv []string, name string) string {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

func exposed(s instructions.Stage, port string) bool {
	for _, e := range commands[*instructions.ExposeCommand](s) {
		for _, p := range e.Ports {
			if strings.TrimSuffix(p, "/tcp") == port {
				return true
			}
		}
	}
	return false
}

// goModVersion returns the go line of go.mod.
func goModVersion(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go line")
	return ""
}

// goTool returns the go command, skipping the test without one.
func goTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	return p
}

// buildInputs lists, relative to the repository, every file the image's go
// build reads from the context: go.mod, go.sum, and the Go and embedded files
// of the module's packages that the two commands import.
func buildInputs(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command(goTool(t), "list", "-deps", "-json=Dir,Module,GoFiles,EmbedFiles", "./cmd/router", "./cmd/routerctl")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Dir    string
			Module *struct{ Main bool }
			GoFiles,
			EmbedFiles []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append(p.GoFiles, p.EmbedFiles...) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	return files
}

func TestDockerignore(t *testing.T) {
	f, err := os.Open(filepath.Join(repoRoot, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatalf("parse .dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore patterns: %v", err)
	}
	inputs := buildInputs(t)
	if len(inputs) < 20 || !slices.Contains(inputs, "models/mcpsag-static-v1/model.onnx") {
		t.Fatalf("go list found %d build inputs, without the embedded model: %v", len(inputs), inputs)
	}
	for _, p := range inputs {
		if ex, err := pm.MatchesOrParentMatches(p); err != nil || ex {
			t.Errorf("%s is needed by the build but .dockerignore excludes it (%v)", p, err)
		}
	}
	for _, p := range []string{".git", ".git/HEAD", "examples/.mcp/state/cache.db", ".mcp/state/x", "docs/deployment.md"} {
		if ex, err := pm.MatchesOrParentMatches(p); err != nil || !ex {
			t.Errorf("%s would be sent to the build: add it to .dockerignore (%v)", p, err)
		}
	}
}

// TestImageBinariesStatic builds the image's two binaries as its Dockerfile
// does and checks that they need no dynamic loader or shared library, the
// precondition for running them on an empty base image.
// TestImageBinariesStatic builds the binaries with the Dockerfile's link
// flags, VERSION and REVISION set as docker build --build-arg sets them,
// and checks that they are static and report both.
func TestImageBinariesStatic(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the router and routerctl; skipped with -short")
	}
	slowtest.Skip(t, "builds both binaries again, with other flags than the tests' builds")
	const version, revision = "v9.8.7-test", "0123456789abcdef0123456789abcdef01234567"
	m := regexp.MustCompile(`-ldflags="([^"]*)"`).FindStringSubmatch(parseDockerfile(t).goBuild(t))
	if m == nil {
		t.Fatal(`the go build step has no -ldflags="..."`)
	}
	ldflags, err := shell.NewLex('\\').ProcessWordWithMatches(m[1], shell.EnvsFromSlice([]string{"VERSION=" + version, "REVISION=" + revision}))
	if err != nil || len(ldflags.Unmatched) > 0 {
		t.Fatalf("-ldflags %q: %v, unmatched %v", m[1], err, ldflags.Unmatched)
	}
	out := t.TempDir()
	cmd := exec.Command(goTool(t), "build", "-trimpath", "-ldflags="+ldflags.Result, "-o", out+string(filepath.Separator), "./cmd/router", "./cmd/routerctl")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, b)
	}
	for _, b := range imageBinaries {
		path := filepath.Join(out, filepath.Base(b))
		f, err := elf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s asks for a dynamic loader", b)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v (%v)", b, libs, err)
		}
		f.Close()
		res, err := exec.Command(path, "version", "--json").Output()
		var v struct{ Version, Revision string }
		if err != nil || json.Unmarshal(res, &v) != nil || !strings.HasPrefix(v.Version, version) || v.Revision != revision {
			t.Errorf("%s version --json: %s (%v); want version %s and revision %s", b, res, err, version, revision)
		}
	}
}
