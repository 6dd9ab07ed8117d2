package store

import (
	"os"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skillmd"
)

// BenchmarkFiles reads every file record of the cache in
// MCPSAG_BENCH_STATE (a state folder a router or routerctl bench left),
// as a router does at its start.
func BenchmarkFiles(b *testing.B) {
	state := os.Getenv("MCPSAG_BENCH_STATE")
	if state == "" {
		b.Skip("set MCPSAG_BENCH_STATE to a router's state folder (routerbench lifecycle leaves one)")
	}
	db, err := Open(state, Options{LockTimeout: time.Second, ParserVersion: skillmd.Version})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n int
	for b.Loop() {
		recs, err := db.Files()
		if err != nil {
			b.Fatal(err)
		}
		n = len(recs)
	}
	b.ReportMetric(float64(n), "records")
}
