// Command testreport reads `go test -json` on standard input and prints what
// `go test` prints without -json (a line per package, and the output of
// failing tests and builds), then a summary of the tests that skipped and
// why, and a closing count. With -ci it fails when a test skipped that is not
// in the allowed list: in CI every test that can run must run, so a missing
// tool or data set shows up as a failure instead of a silent skip.
//
//	go test -race -json ./... | go run ./.ci/testreport -ci -allowed .ci/allowed-skips.txt
//
// The allowed list has one skip per line: the package (its import path or
// the path relative to the module, "./internal/loader"), the test name (a
// path.Match pattern, so "TestX/*" covers subtests), and the reason CI may
// skip it. Blank lines and lines starting with # are ignored.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

func main() {
	ci := flag.Bool("ci", os.Getenv("CI") == "true", "fail when a test skipped that is not in the allowed list (default: CI=true)")
	allowedFile := flag.String("allowed", "", "`file` listing the skips allowed in CI")
	module := flag.String("module", "", "module path, to match ./relative packages in the allowed list (default: read from go.mod)")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *ci, *allowedFile, *module); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}

// event is one line of test2json output.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
}

// key names one test of one package.
type key struct{ pkg, test string }

// skip is a skipped test and its reason.
type skip struct {
	key
	reason  string
	allowed *allowance
}

// allowance is one line of the allowed list.
type allowance struct {
	pkg, pattern, reason string
	line                 int
	used                 bool
}

// report accumulates the stream.
type report struct {
	out                    io.Writer
	buf                    map[key][]string
	passed, failed         int
	skips                  []skip
	failedPkgs, buildFails []string
	tested                 map[string]bool // packages whose tests ran
}

func run(in io.Reader, out io.Writer, ci bool, allowedFile, module string) error {
	var allowed []*allowance
	if allowedFile != "" {
		if module == "" {
			m, err := modulePath("go.mod")
			if err != nil {
				return err
			}
			module = m
		}
		var err error
		if allowed, err = readAllowed(allowedFile, module); err != nil {
			return err
		}
	}
	r := &report{out: out, buf: map[key][]string{}, tested: map[string]bool{}}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Action == "" {
			// Not test2json (a message from the go command): show it.
			fmt.Fprintln(out, string(line))
			continue
		}
		r.add(ev)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read test output: %w", err)
	}
	for i := range r.skips {
		for _, a := range allowed {
			if a.pkg == r.skips[i].pkg && match(a.pattern, r.skips[i].test) {
				r.skips[i].allowed = a
				a.used = true
				break
			}
		}
	}
	return r.finish(ci, allowed)
}

func (r *report) add(ev event) {
	k := key{ev.Package, ev.Test}
	if ev.Test != "" {
		r.tested[ev.Package] = true
	}
	switch ev.Action {
	case "build-output":
		fmt.Fprint(r.out, ev.Output)
	case "build-fail":
		r.buildFails = append(r.buildFails, ev.ImportPath)
	case "output":
		if ev.Test != "" {
			r.buf[k] = append(r.buf[k], ev.Output)
			return
		}
		// Package-level lines: "ok", "FAIL", "?", panics, TestMain
		// output. The bare "PASS" of a passing package is noise.
		if ev.Output != "PASS\n" {
			fmt.Fprint(r.out, ev.Output)
		}
	case "pass":
		if ev.Test != "" {
			r.passed++
			delete(r.buf, k)
		}
	case "fail":
		if ev.Test == "" {
			// Tests that never ended (a panic, a timeout) fail with
			// their package: show what they printed.
			var open []key
			for bk := range r.buf {
				if bk.pkg == ev.Package {
					open = append(open, bk)
				}
			}
			sort.Slice(open, func(i, j int) bool { return open[i].test < open[j].test })
			for _, bk := range open {
				r.failed++
				r.flush(bk)
			}
			r.failedPkgs = append(r.failedPkgs, ev.Package)
			return
		}
		r.failed++
		r.flush(k)
	case "skip":
		if ev.Test == "" {
			return // a package without tests
		}
		r.skips = append(r.skips, skip{key: k, reason: skipReason(r.buf[k])})
		delete(r.buf, k)
	}
}

// flush prints a failed test's output as go test shows it without -v, and
// forgets it.
func (r *report) flush(k key) {
	for _, o := range r.buf[k] {
		if !strings.HasPrefix(o, "=== ") {
			fmt.Fprint(r.out, o)
		}
	}
	delete(r.buf, k)
}

// skipReason is what the test logged before it skipped: its t.Skip message.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		msg = append(msg, t)
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " ")
}

func (r *report) finish(ci bool, allowed []*allowance) error {
	var unexpected []skip
	if len(r.skips) > 0 {
		sort.Slice(r.skips, func(i, j int) bool {
			a, b := r.skips[i], r.skips[j]
			return a.pkg < b.pkg || (a.pkg == b.pkg && a.test < b.test)
		})
		fmt.Fprintf(r.out, "\nSkipped tests (%d):\n", len(r.skips))
		for _, s := range r.skips {
			fmt.Fprintf(r.out, "  %s %s: %s\n", s.pkg, s.test, s.reason)
			if s.allowed != nil {
				fmt.Fprintf(r.out, "      allowed in CI: %s\n", s.allowed.reason)
			} else {
				unexpected = append(unexpected, s)
			}
		}
	}
	for _, a := range allowed {
		if !a.used && r.tested[a.pkg] {
			fmt.Fprintf(r.out, "note: allowed skip on line %d (%s %s) did not happen; remove it if it no longer applies\n", a.line, a.pkg, a.pattern)
		}
	}
	fmt.Fprintf(r.out, "\n%d passed, %d failed, %d skipped\n", r.passed, r.failed, len(r.skips))

	var errs []error
	if len(r.buildFails) > 0 {
		errs = append(errs, fmt.Errorf("build failed: %s", strings.Join(r.buildFails, ", ")))
	}
	if r.failed > 0 || len(r.failedPkgs) > 0 {
		errs = append(errs, fmt.Errorf("%d tests failed; failing packages: %s", r.failed, strings.Join(r.failedPkgs, ", ")))
	}
	if ci && len(unexpected) > 0 {
		var names []string
		for _, s := range unexpected {
			names = append(names, s.pkg+" "+s.test)
		}
		errs = append(errs, fmt.Errorf("%d tests skipped that CI must run: %s\n"+
			"install what they need in .ci/run, or list them in the allowed skips with the reason CI cannot run them",
			len(unexpected), strings.Join(names, "; ")))
	}
	return errors.Join(errs...)
}

// match reports whether test matches pattern; a pattern without "/" also
// covers the test's subtests.
func match(pattern, test string) bool {
	if ok, _ := path.Match(pattern, test); ok {
		return true
	}
	if !strings.Contains(pattern, "/") {
		top, _, _ := strings.Cut(test, "/")
		ok, _ := path.Match(pattern, top)
		return ok
	}
	return false
}

// readAllowed parses the allowed list; "./dir" packages are resolved
// against module.
func readAllowed(file, module string) ([]*allowance, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*allowance
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 3 {
			return nil, fmt.Errorf("%s:%d: want PACKAGE TEST REASON, got %q", file, n, line)
		}
		pkg := fields[0]
		if rel, ok := strings.CutPrefix(pkg, "./"); ok {
			pkg = path.Join(module, rel)
		}
		if _, err := path.Match(fields[1], ""); err != nil {
			return nil, fmt.Errorf("%s:%d: test pattern %q: %v", file, n, fields[1], err)
		}
		out = append(out, &allowance{pkg: pkg, pattern: fields[1], reason: strings.Join(fields[2:], " "), line: n})
	}
	return out, sc.Err()
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod string) (string, error) {
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("module path: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}
