// Package slowtest marks the tests the quick run leaves out. The README's
// test command, go test -race ./..., is meant to finish within minutes on
// two cores; a test that alone takes a large share of that (a race build
// of the binaries, an exact comparison over thousands of updates, a flood
// of MCP servers) calls Skip, and runs only in the full run, which .ci/run
// makes by setting MCPSAG_TESTS=full:
//
//	MCPSAG_TESTS=full go test -race -timeout 30m ./...
package slowtest

import (
	"os"
	"testing"
)

// Env is the variable that asks for the full run, with the value "full".
const Env = "MCPSAG_TESTS"

// Full reports whether the full run was asked for.
func Full() bool { return os.Getenv(Env) == "full" }

// Skip skips t in the quick run, saying why it is slow and how to run it.
func Skip(t testing.TB, why string) {
	t.Helper()
	if !Full() {
		t.Skipf("slow (%s): runs in the full run, %s=full (.ci/run)", why, Env)
	}
}
