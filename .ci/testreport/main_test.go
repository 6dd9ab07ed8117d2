package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sampleTests is a package whose tests pass, fail, skip with reasons, and
// skip in a subtest.
const sampleTests = `package sample

import "testing"

func TestPass(t *testing.T) { t.Log("quiet when passing") }

func TestFail(t *testing.T) { t.Error("boom: the widget is 3, want 4") }

func TestNeedsTool(t *testing.T) { t.Skip("frobnicator not found; install it") }

func TestNeedsData(t *testing.T) { t.Skipf("no data under %s", "/data") }

func TestParent(t *testing.T) {
	t.Run("ok", func(t *testing.T) {})
	t.Run("root", func(t *testing.T) { t.Skip("running as root") })
}
`

// goTestJSON runs go test -json on the sample package and returns its stream.
func goTestJSON(t *testing.T) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go command is not on PATH: %v", err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":         "module example.com/sample\n\ngo 1.22\n",
		"sample_test.go": sampleTests,
		"other/doc.go":   "// Package other has no tests.\npackage other\n",
		// A test that outlives -timeout: the binary panics, and the test
		// never reports an end.
		"slow/slow_test.go": "package slow\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) { t.Log(\"started\"); time.Sleep(time.Minute) }\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(gobin, "test", "-json", "-timeout", "3s", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	if _, ok := err.(*exec.ExitError); !ok && err != nil {
		t.Fatalf("go test: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("go test -json printed nothing")
	}
	return out
}

func TestReport(t *testing.T) {
	stream := goTestJSON(t)
	allowed := filepath.Join(t.TempDir(), "allowed.txt")
	list := "# package test reason\n./ TestNeedsData the data is not shipped\nexample.com/sample TestParent/root CI runs as root\n./ TestGone a skip that no longer happens\n"
	if err := os.WriteFile(allowed, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	err := run(bytes.NewReader(stream), &out, true, allowed, "example.com/sample")
	text := out.String()
	for _, want := range []string{
		"--- FAIL: TestFail",
		"boom: the widget is 3, want 4",
		"FAIL\texample.com/sample",
		"?   \texample.com/sample/other\t[no test files]",
		"Skipped tests (3):",
		"example.com/sample TestNeedsTool: sample_test.go:9: frobnicator not found; install it",
		"example.com/sample TestNeedsData: sample_test.go:11: no data under /data\n      allowed in CI: the data is not shipped",
		"example.com/sample TestParent/root: sample_test.go:15: running as root\n      allowed in CI: CI runs as root",
		"note: allowed skip on line 4 (example.com/sample TestGone) did not happen",
		"panic: test timed out after 3s",
		"slow_test.go:8: started",
		"FAIL\texample.com/sample/slow",
		"\n3 passed, 2 failed, 3 skipped\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, unwanted := range []string{"quiet when passing", "=== RUN", "\nPASS\n"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("output has %q, which go test without -v does not print", unwanted)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "2 tests failed") ||
		!strings.Contains(err.Error(), "1 tests skipped that CI must run: example.com/sample TestNeedsTool") {
		t.Errorf("error = %v", err)
	}
	if t.Failed() {
		t.Logf("output:\n%s", text)
	}

	t.Run("outside CI only failures count", func(t *testing.T) {
		err := run(bytes.NewReader(stream), &bytes.Buffer{}, false, "", "")
		if err == nil || strings.Contains(err.Error(), "skipped") {
			t.Errorf("error = %v, want the failure only", err)
		}
	})
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, test string
		want          bool
	}{
		{"TestX", "TestX", true},
		{"TestX", "TestX/sub", true},
		{"TestX", "TestXY", false},
		{"TestX/a*", "TestX/abc", true},
		{"TestX/a*", "TestX/b", false},
		{"Test*", "TestAnything/deep/sub", true},
	}
	for _, tc := range tests {
		if got := match(tc.pattern, tc.test); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.pattern, tc.test, got, tc.want)
		}
	}
}

func TestReadAllowedErrors(t *testing.T) {
	for _, content := range []string{"./pkg TestX\n", "./pkg Test[ reason\n"} {
		f := filepath.Join(t.TempDir(), "allowed.txt")
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readAllowed(f, "m"); err == nil || !strings.Contains(err.Error(), ":1:") {
			t.Errorf("%q: error %v, want one naming line 1", content, err)
		}
	}
}
