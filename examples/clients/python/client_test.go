// Runs the Python client example against a real router: the gRPC modules are
// generated with Debian's protoc and grpc_python_plugin, and the script runs
// under Debian's Python with its grpcio and protobuf packages.
package python_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// Debian's interpreter: its python3-grpcio and python3-protobuf are not on
// other interpreters' paths (a pyenv build, a virtualenv).
const python = "/usr/bin/python3"

const debianPackages = "protobuf-compiler protobuf-compiler-grpc libprotobuf-dev python3-grpcio python3-protobuf"

// generate runs the README's protoc command into a temporary folder and
// returns it, or skips when the tools are missing.
func generate(t *testing.T) string {
	t.Helper()
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skipf("protoc not found; apt-get install %s (.ci/run does)", debianPackages)
	}
	plugin, err := exec.LookPath("grpc_python_plugin")
	if err != nil {
		t.Skipf("grpc_python_plugin not found; apt-get install %s (.ci/run does)", debianPackages)
	}
	const include = "/usr/include"
	if _, err := os.Stat(filepath.Join(include, "google", "protobuf", "timestamp.proto")); err != nil {
		t.Skipf("the well-known .proto files are not under %s; apt-get install libprotobuf-dev", include)
	}
	if out, err := exec.Command(python, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import grpc and protobuf (%v: %s); apt-get install python3-grpcio python3-protobuf", python, err, strings.TrimSpace(string(out)))
	}
	gen := t.TempDir()
	repo := filepath.Join("..", "..", "..")
	cmd := exec.Command(protoc,
		"-I", filepath.Join(repo, "api", "proto"), "-I", include,
		"--python_out="+gen, "--grpc_python_out="+gen,
		"--plugin=protoc-gen-grpc_python="+plugin,
		filepath.Join(repo, "api", "proto", "mcpsag", "router", "v1", "router.proto"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	return gen
}

func TestPythonClient(t *testing.T) {
	gen := generate(t)
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})

	client := func(addr, task string) (string, string, int) {
		cmd := exec.Command(python, "router_client.py", "--addr", addr, task)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+gen, "PYTHONDONTWRITEBYTECODE=1", "MCPSAG_TOKEN=")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("run %s: %v", python, err)
		}
		return stdout.String(), stderr.String(), code
	}

	t.Run("match and load", func(t *testing.T) {
		out, errOut, code := client(r.Addr, "fill in a PDF form from a JSON file")
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		for _, want := range []string{"1. pdf-form-filling (fused ", "--- pdf-form-filling: ", `<skill_content name="pdf-form-filling"`, "</skill_content>"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("abstains", func(t *testing.T) {
		out, errOut, code := client(r.Addr, "what is the capital of France")
		if code != 0 || !strings.HasPrefix(out, "no skill fits: ABSTAIN_REASON_") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
	t.Run("router down", func(t *testing.T) {
		out, errOut, code := client("127.0.0.1:1", "anything")
		if code != 1 || !strings.Contains(errOut, "UNAVAILABLE") {
			t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
	})
}
