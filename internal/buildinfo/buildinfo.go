// Package buildinfo says which build of the router is running: the module
// version, the VCS revision and whether the tree was modified, read from the
// Go build information, or the version stamped at link time with
//
//	go build -ldflags "-X github.com/mcpsag/router/internal/buildinfo.version=v1.2.3" ./cmd/router
//
// Status replies, OpenTelemetry's service.version and every binary's version
// command report it.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version and revision are set at link time (-ldflags -X); empty means
// "read the build information". A stamped revision is for builds without
// VCS information (a container build context has no .git); "unknown" is
// the same as none.
var version, revision string

// Info describes one build.
type Info struct {
	// Version is the stamped version, else the module version ("(devel)"
	// for a build inside the module's own checkout).
	Version string `json:"version"`
	// Revision is the VCS commit, empty when unknown.
	Revision string `json:"revision,omitempty"`
	// Modified is set when the working tree had changes.
	Modified  bool   `json:"modified"`
	GoVersion string `json:"go_version"`
}

// Read returns the running binary's build information.
func Read() Info {
	info := Info{Version: version}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "unknown"
		}
		info.Revision = stampedRevision()
		return info
	}
	info.GoVersion = bi.GoVersion
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	if info.Revision == "" {
		info.Revision = stampedRevision()
	}
	return info
}

// stampedRevision is the revision stamped at link time, "" for none.
func stampedRevision() string {
	if revision == "unknown" {
		return ""
	}
	return revision
}

// String is the version with its revision, for one-line reports and
// telemetry: "v1.2.3", "(devel)+3f2a9c1d0b4e", "(devel)+3f2a9c1d0b4e-dirty".
func (i Info) String() string {
	var b strings.Builder
	b.WriteString(i.Version)
	if i.Revision != "" && !strings.Contains(i.Version, shortRev(i.Revision)) {
		fmt.Fprintf(&b, "+%s", shortRev(i.Revision))
	}
	if i.Modified {
		b.WriteString("-dirty")
	}
	return b.String()
}

func shortRev(r string) string { return r[:min(12, len(r))] }
