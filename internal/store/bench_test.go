package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/statedir"
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

// BenchmarkOpenChecks compares what a start costs on a cache of 20,000
// skills: the checksum a clean-close note is checked against (fileSum) and
// the walk of the file's structure it spares (verifyLocked), which Close
// now runs too before it writes the note.
func BenchmarkOpenChecks(b *testing.B) {
	dir := b.TempDir()
	buildCache(b, dir, 20_000, 3)
	f, err := os.Open(filepath.Join(dir, statedir.CacheFile))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b.Run("checksum", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if _, err := fileSum(f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("walk", func(b *testing.B) {
		b.SetBytes(fi.Size())
		for b.Loop() {
			if err := verifyLocked(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBody reads one body of a cache of 1,000, as every level-2 Load
// does: a guarded read transaction, the seal's check and the decoding.
func BenchmarkBody(b *testing.B) {
	db, err := Open(b.TempDir(), Options{LockTimeout: time.Second, ParserVersion: skillmd.Version})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bodies := make(map[string]string, 1000)
	hashes := make([]string, 0, 1000)
	for i := range 1000 {
		h := fmt.Sprintf("%064x", i)
		bodies[h] = strings.Repeat(fmt.Sprintf("line %d of a skill's body\n", i), 80)
		hashes = append(hashes, h)
	}
	if err := db.ApplyFiles(FileChanges{Bodies: bodies}); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, ok, err := db.Body(hashes[i%len(hashes)]); err != nil || !ok {
			b.Fatalf("Body: ok %v, err %v", ok, err)
		}
		i++
	}
}
