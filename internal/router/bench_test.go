package router

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// BenchmarkMatchWorkspace matches the queries of a workspace that
// routerbench gen wrote (MCPSAG_BENCH_WORKSPACE) through Router.Match, in
// process, on the state folder a router left for it (MCPSAG_BENCH_STATE),
// with the default model: what a Match over gRPC costs without the
// network, gRPC and telemetry. "serial" runs one match at a time;
// "16-concurrent" runs 16 at once, as routerbench run's default load does.
// cpu-µs/op is the process CPU per match, comparable with the router's CPU
// per call under that load.
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws10k MCPSAG_BENCH_STATE=/tmp/state10k \
//	  go test -run '^$' -bench MatchWorkspace ./internal/router
func BenchmarkMatchWorkspace(b *testing.B) {
	ws, state := os.Getenv("MCPSAG_BENCH_WORKSPACE"), os.Getenv("MCPSAG_BENCH_STATE")
	if ws == "" || state == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE and MCPSAG_BENCH_STATE (routerbench gen and lifecycle write them)")
	}
	qs, err := eval.LoadQueries(filepath.Join(ws, "queries.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	queries := make([]string, len(qs))
	for i, q := range qs {
		queries[i] = q.Query
	}
	r := benchRouter(b, ws, state)
	ctx := context.Background()
	matchOne := func(q string) {
		if _, err := r.Match(ctx, skill.MatchRequest{Task: q}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		times := make([]time.Duration, 0, 4096)
		i := 0
		c0 := processCPU()
		for b.Loop() {
			t0 := time.Now()
			matchOne(queries[i%len(queries)])
			times = append(times, time.Since(t0))
			i++
		}
		b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/1e3/float64(i), "cpu-µs/op")
		slices.Sort(times)
		b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "p50-µs")
	})
	b.Run("16-concurrent", func(b *testing.B) {
		var next, n atomic.Int64
		b.SetParallelism((16 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		c0 := processCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				matchOne(queries[int(next.Add(1))%len(queries)])
				n.Add(1)
			}
		})
		b.ReportMetric(float64((processCPU()-c0).Nanoseconds())/1e3/float64(n.Load()), "cpu-µs/op")
	})
}

// benchRouter starts a router (no watcher) over the workspace and state
// folder, with the bundled default model.
func benchRouter(b *testing.B, ws, state string) *Router {
	roots := skillfs.DefaultRoots()
	if _, err := os.Stat(filepath.Join(ws, ".mcp", ".mcp-config.yaml")); err == nil {
		roots = []skillfs.RootSpec{{Path: "skills/*", Kind: skill.KindProject}} // routerbench gen's split workspace
	}
	modelDir := filepath.Join("..", "..", "models", "mcpsag-static-v1")
	m := embed.NewManager(embed.Config{Dir: modelDir}, nil, nil)
	if err := m.Reload(context.Background(), embed.Config{Dir: modelDir}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	db, err := store.Open(state, store.Options{LockTimeout: time.Second, ParserVersion: skillmd.Version})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	l, err := loader.New(loader.Config{Workspace: ws, Roots: roots, Embedder: m}, db)
	if err != nil {
		b.Fatal(err)
	}
	r := New(Config{Source: fromLoader(l), Workspace: ws, Settings: Settings{Flags: skill.Flags{SkillsV1: true}}})
	if err := r.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkStatusWorkspace calls Router.Status on the workspace and state
// folder of BenchmarkMatchWorkspace. Status is polled: by the index gauge
// at each metrics collection, by remote MCP fronts waiting for a new
// generation, and by operators; it should not cost in proportion to the
// catalog or the vector cache. (The first call of a generation, outside
// the loop, counts its catalog once.)
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws10k MCPSAG_BENCH_STATE=/tmp/state10k \
//	  go test -run '^$' -bench StatusWorkspace ./internal/router
func BenchmarkStatusWorkspace(b *testing.B) {
	ws, state := os.Getenv("MCPSAG_BENCH_WORKSPACE"), os.Getenv("MCPSAG_BENCH_STATE")
	if ws == "" || state == "" {
		b.Skip("set MCPSAG_BENCH_WORKSPACE and MCPSAG_BENCH_STATE (routerbench gen and lifecycle write them)")
	}
	r := benchRouter(b, ws, state)
	ctx := context.Background()
	st, err := r.Status(ctx)
	if err != nil || st.Model == nil || st.Skills == 0 {
		b.Fatalf("Status: %+v, %v; want a served catalog and a model", st, err)
	}
	for b.Loop() {
		if _, err := r.Status(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
