package skillfs

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

// BenchmarkScan scans the workspace MCPSAG_BENCH_WORKSPACE (routerbench gen
// writes one) as a start does, with the default limits and the default
// roots, or each folder of skills/ as a root when the workspace's
// configuration says so (a workspace of 100,000 skills does): "read"
// reads every folder, "listings" is given the listings of a scan before
// it, as a restart on an unchanged workspace is.
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run '^$' -bench Scan -benchtime 5x ./internal/skillfs
func BenchmarkScan(b *testing.B) {
	ws := benchWorkspace(b)
	roots := benchRoots(b, ws)
	known := Scan(roots, DefaultScanLimits, nil).Listings
	for _, c := range []struct {
		name  string
		known *Listings
	}{{"read", nil}, {"listings", known}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var res ScanResult
			for b.Loop() {
				res = Scan(roots, DefaultScanLimits, c.known)
			}
			if len(res.Files) == 0 {
				b.Fatal("no skills found")
			}
			b.ReportMetric(float64(len(res.Files)), "skills")
			b.ReportMetric(float64(res.Listings.Reused()), "reused")
		})
	}
}

// BenchmarkReadListings decodes the listings of a scan of the workspace
// MCPSAG_BENCH_WORKSPACE, as a restart does before its scan.
func BenchmarkReadListings(b *testing.B) {
	ws := benchWorkspace(b)
	roots := benchRoots(b, ws)
	data, err := Scan(roots, DefaultScanLimits, nil).Listings.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var l *Listings
	for b.Loop() {
		if l, err = ReadListings(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(l.Len()), "folders")
}

func benchWorkspace(b *testing.B) string {
	ws := os.Getenv("MCPSAG_BENCH_WORKSPACE")
	if ws == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE to a workspace (routerbench gen writes one)")
	}
	return ws
}

// benchRoots are the default roots of ws, or each folder of skills/ as a
// root when the workspace's configuration says so.
func benchRoots(b *testing.B, ws string) []skill.Root {
	specs := DefaultRoots()
	if _, err := os.Stat(filepath.Join(ws, ".mcp", ".mcp-config.yaml")); err == nil {
		specs = []RootSpec{{Path: "skills/*", Kind: "project"}}
	}
	roots, err := ExpandRoots(ws, specs)
	if err != nil {
		b.Fatal(err)
	}
	return roots
}

// BenchmarkReadScanResult decodes the scan result of a scan of the
// workspace MCPSAG_BENCH_WORKSPACE, as a restart that serves the last scan
// does.
func BenchmarkReadScanResult(b *testing.B) {
	ws := benchWorkspace(b)
	roots := benchRoots(b, ws)
	res := Scan(roots, DefaultScanLimits, nil)
	data, err := MarshalScanResult(&res, roots)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	var got ScanResult
	for b.Loop() {
		if got, err = ReadScanResult(data, roots); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(got.Files)), "files")
}
