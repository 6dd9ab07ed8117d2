package loader

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/mapfile"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/store"
)

// middleSkill returns the SKILL.md of the middle skill folder under root
// (directly, or under part folders).
func middleSkill(b *testing.B, root string) string {
	dirs, err := os.ReadDir(root)
	if err != nil || len(dirs) == 0 {
		b.Fatalf("no skills under %s: %v", root, err)
	}
	d := filepath.Join(root, dirs[len(dirs)/2].Name())
	if _, err := os.Stat(filepath.Join(d, skillfs.SkillFile)); err == nil {
		return filepath.Join(d, skillfs.SkillFile)
	}
	return middleSkill(b, d)
}

// BenchmarkEditToServed builds the workspace in MCPSAG_BENCH_WORKSPACE
// (routerbench gen writes one) keyword-only, then measures the build that
// follows an edit of one SKILL.md, given the path its file event names:
// what a router does between a (debounced) file event and serving the new
// generation. It logs each pass's phases.
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run x -bench EditToServed -benchtime 10x ./internal/loader
func BenchmarkEditToServed(b *testing.B) {
	ws := os.Getenv("MCPSAG_BENCH_WORKSPACE")
	if ws == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE to a workspace (routerbench gen)")
	}
	db, err := store.Open(b.TempDir(), store.Options{LockTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	roots := skillfs.DefaultRoots()
	if _, err := os.Stat(filepath.Join(ws, ".mcp", ".mcp-config.yaml")); err == nil {
		roots = []skillfs.RootSpec{{Path: "skills/*", Kind: "project"}} // routerbench gen's split workspace
	}
	bl, err := New(Config{Workspace: ws, Roots: roots}, db)
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Flush()
	ctx := context.Background()
	start := time.Now()
	g, _, err := passFrom(ctx, bl, nil, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("cold build of %d skills: %s", g.Index.Len(), time.Since(start).Round(time.Millisecond))
	p := middleSkill(b, filepath.Join(ws, "skills"))
	orig, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(p) // as file events name it
	if err != nil {
		b.Fatal(err)
	}
	defer os.WriteFile(p, orig, 0o644)
	i := 0
	for b.Loop() {
		i++
		if err := os.WriteFile(p, append(append([]byte(nil), orig...), fmt.Sprintf("\nedit %d\n", i)...), 0o644); err != nil {
			b.Fatal(err)
		}
		later := time.Now().Add(time.Duration(i) * time.Second)
		os.Chtimes(p, later, later)
		next, pass, err := passFrom(ctx, bl, g, false, []string{real})
		if err != nil {
			b.Fatal(err)
		}
		if !pass.Stats.Published || pass.Analyzed != 1 || !pass.Partial {
			b.Fatalf("edit: published %v, analyzed %d, partial %v", pass.Stats.Published, pass.Analyzed, pass.Partial)
		}
		b.Logf("edit %d: %s %v", i, pass.Stats.Duration.Round(time.Millisecond), pass.Phases)
		g = next
	}
}

// BenchmarkWarmRestart opens the state folder MCPSAG_BENCH_STATE that a
// router left for the workspace MCPSAG_BENCH_WORKSPACE (routerbench
// lifecycle leaves one) and builds the first generation, as a restart does,
// with the default model; it logs each step's duration. "scan" scans the
// roots first; "last-scan" serves the last scan (Config.ServeLastScan), as
// a router does by default. It reports the heap live after a collection
// while the generation and the loader are held (live-MiB): what a router
// holds at that size, model included, garbage excluded.
func BenchmarkWarmRestart(b *testing.B) {
	ws, state := os.Getenv("MCPSAG_BENCH_WORKSPACE"), os.Getenv("MCPSAG_BENCH_STATE")
	if ws == "" || state == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE and MCPSAG_BENCH_STATE (routerbench lifecycle leaves them)")
	}
	roots := skillfs.DefaultRoots()
	if _, err := os.Stat(filepath.Join(ws, ".mcp", ".mcp-config.yaml")); err == nil {
		roots = []skillfs.RootSpec{{Path: "skills/*", Kind: "project"}}
	}
	modelDir := filepath.Join("..", "..", "models", "mcpsag-static-v1")
	if v := os.Getenv("MCPSAG_BENCH_GOGC"); v != "" {
		n, _ := strconv.Atoi(v)
		defer debug.SetGCPercent(debug.SetGCPercent(n))
	}
	for _, lastScan := range []bool{false, true} {
		name := "scan"
		if lastScan {
			name = "last-scan"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				t0 := time.Now()
				m := embed.NewManager(embed.Config{Dir: modelDir}, nil, nil)
				if err := m.Reload(context.Background(), embed.Config{Dir: modelDir}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				db, err := store.Open(state, store.Options{LockTimeout: time.Second, ParserVersion: skillmd.Version})
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				bl, err := New(Config{Workspace: ws, Roots: roots, Embedder: m, ServeLastScan: lastScan}, db)
				if err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				g, pass, err := passFrom(context.Background(), bl, nil, false, nil)
				if err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				if pass.Restored != lastScan {
					b.Fatalf("restored %v, want %v (a router must have saved the last scan in the state folder)", pass.Restored, lastScan)
				}
				b.Logf("model %s, store open %s, records %s, first build %s (parsed %d, embedded %d, analyzed %d): %v",
					t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond), t3.Sub(t2).Round(time.Millisecond),
					t4.Sub(t3).Round(time.Millisecond), pass.Stats.Parsed, pass.Stats.Embedded, pass.Analyzed, pass.Phases)
				b.StopTimer()
				if lastScan { // the build after it scans the roots, as the router's next build does (untimed)
					if _, _, err := passFrom(context.Background(), bl, g, false, nil); err != nil {
						b.Fatal(err)
					}
				}
				bl.Flush()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-MiB")
				b.Logf("live heap %.1f MiB with %d skills indexed", float64(ms.HeapAlloc)/(1<<20), g.Index.Len())
				runtime.KeepAlive(g)
				runtime.KeepAlive(bl) // its records, scan and memo serve the next build
				b.StartTimer()
				db.Close()
				m.Close()
			}
		})
	}
}

// BenchmarkReadSnapshot reads the index snapshot a router left in the state
// folder MCPSAG_BENCH_STATE, as a restart does while it scans, into memory
// of the process's own (private: what the router does), and for comparison
// from a shared mapping of the file (mapped: what it did before, which
// another process's write to the file could change under it) and into Go's
// heap (heap). It reports the bytes allocated per read beside the file's
// size.
//
//	MCPSAG_BENCH_STATE=/tmp/state100k go test -run '^$' -bench ReadSnapshot -benchtime 5x ./internal/loader
func BenchmarkReadSnapshot(b *testing.B) {
	state := os.Getenv("MCPSAG_BENCH_STATE")
	if state == "" {
		b.Skip("set MCPSAG_BENCH_STATE to a router's state folder (routerbench lifecycle leaves one)")
	}
	path := filepath.Join(state, statedir.SnapshotFile)
	fi, err := os.Stat(path)
	if err != nil {
		b.Skip(err)
	}
	for _, read := range []struct {
		name string
		read func(string) ([]byte, func(), error)
	}{
		{"private", mapfile.ReadPrivate},
		{"mapped", mapfile.Read},
		{"heap", func(p string) ([]byte, func(), error) { data, err := os.ReadFile(p); return data, func() {}, err }},
	} {
		b.Run(read.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			for b.Loop() {
				data, release, err := read.read(path)
				if err != nil {
					b.Fatal(err)
				}
				var meta snapshotMeta
				ix, err := decodeSnapshot(data, &meta)
				if err != nil {
					b.Fatal(err)
				}
				runtime.KeepAlive(ix)
				b.StopTimer()
				ix = nil
				release()
				b.StartTimer()
			}
		})
	}
}
