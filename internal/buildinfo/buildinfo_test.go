package buildinfo

import (
	"strings"
	"testing"
)

func TestStringNamesVersionRevisionAndDirtyTree(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v1.2.3"}, "v1.2.3"},
		{Info{Version: "(devel)", Revision: "3f2a9c1d0b4e5f60"}, "(devel)+3f2a9c1d0b4e"},
		{Info{Version: "(devel)", Revision: "3f2a9c1d0b4e5f60", Modified: true}, "(devel)+3f2a9c1d0b4e-dirty"},
		{Info{Version: "v0.0.0-20261123-3f2a9c1d0b4e", Revision: "3f2a9c1d0b4e5f60"}, "v0.0.0-20261123-3f2a9c1d0b4e"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestStampedVersionWins(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.9.9"
	if got := Read(); got.Version != "v9.9.9" || !strings.HasPrefix(got.String(), "v9.9.9") {
		t.Errorf("stamped build reads %+v", got)
	}
	version = ""
	if got := Read(); got.Version == "" || got.GoVersion == "" {
		t.Errorf("unstamped build reads %+v", got)
	}
}

func TestStampedRevisionFillsAMissingOne(t *testing.T) {
	old := revision
	t.Cleanup(func() { revision = old })
	revision = "3f2a9c1d0b4e5f60718293a4b5c6d7e8f9012345"
	got := Read()
	// A test binary has no VCS information of its own.
	if got.Revision != revision || !strings.Contains(got.String(), "+3f2a9c1d0b4e") {
		t.Errorf("stamped revision reads %+v (%s)", got, got)
	}
	revision = "unknown" // the Dockerfile's default
	if got := Read(); got.Revision != "" {
		t.Errorf("revision %q read as %q, want none", "unknown", got.Revision)
	}
}
