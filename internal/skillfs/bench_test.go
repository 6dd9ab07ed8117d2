package skillfs

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkScan scans the workspace MCPSAG_BENCH_WORKSPACE (routerbench gen
// writes one) as a start does, with the default limits and the default
// roots, or each folder of skills/ as a root when the workspace's
// configuration says so (a workspace of 100,000 skills does).
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run '^$' -bench Scan -benchtime 5x ./internal/skillfs
func BenchmarkScan(b *testing.B) {
	ws := os.Getenv("MCPSAG_BENCH_WORKSPACE")
	if ws == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE to a workspace (routerbench gen writes one)")
	}
	specs := DefaultRoots()
	if _, err := os.Stat(filepath.Join(ws, ".mcp", ".mcp-config.yaml")); err == nil {
		specs = []RootSpec{{Path: "skills/*", Kind: "project"}}
	}
	roots, err := ExpandRoots(ws, specs)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var found int
	for b.Loop() {
		res := Scan(roots, DefaultScanLimits)
		found = len(res.Files)
	}
	if found == 0 {
		b.Fatal("no skills found")
	}
	b.ReportMetric(float64(found), "skills")
}
