package router

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostPathsText(t *testing.T) {
	tmp := os.TempDir()
	h := newHostPaths(Config{Workspace: "/srv/ws", StateDir: "/srv/ws/.state", ModelDir: "/opt/models/m"})
	for in, want := range map[string]string{
		"write /srv/ws/.state/cache.db: no space left":    "write <state>/cache.db: no space left",
		"config /srv/ws/.mcp/config.yaml: line 1":         "config <workspace>/.mcp/config.yaml: line 1",
		"model folder /opt/models/m does not exist":       "model folder <model> does not exist",
		"open /srv/wsx/a and /opt/models/m2":              "open /srv/wsx/a and /opt/models/m2",
		"'/srv/ws': gone; /srv/ws/.state, /srv/ws/.stat":  "'<workspace>': gone; <state>, <workspace>/.stat",
		filepath.Join(tmp, "mcpsag-cache-1/cache.db"):     "<temp>/mcpsag-cache-1/cache.db",
		filepath.Join(tmp, "mcpsag-mcp-7/index.snapshot"): "<temp>/mcpsag-mcp-7/index.snapshot",
		// A path in the temporary folder that is not the router's: no host
		// path after <temp>.
		"config " + filepath.Join(tmp, "TestX123/001/router.yaml") + ": line 1": "config <temp>/…/router.yaml: line 1",
		"open '" + filepath.Join(tmp, "a", "b") + "/'":                          "open '<temp>/…/b/'",
		filepath.Join(tmp, "router.yaml"):                                       "<temp>/router.yaml",
		tmp + "foo/x and " + tmp:                                                tmp + "foo/x and <temp>",
	} {
		if got := h.text(in); got != want {
			t.Errorf("text(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"/srv/ws/.mcp/config.yaml":                     "<workspace>/.mcp/config.yaml",
		"/etc/mcpsag/config.yaml":                      "config.yaml",
		filepath.Join(tmp, "TestX123/002/router.yaml"): "<temp>/…/router.yaml",
		"": "",
	} {
		if got := h.path(in); got != want {
			t.Errorf("path(%q) = %q, want %q", in, got, want)
		}
	}
}
