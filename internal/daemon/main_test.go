package daemon_test

import (
	"os"
	"testing"

	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

func TestMain(m *testing.M) {
	upstreamtest.Main() // serves a scripted MCP server when the test binary runs as one
	os.Exit(m.Run())
}
