package embed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
)

// defaultModelDir is the project's default model, built by its own recipe;
// benchmarks skip it when it is absent.
const defaultModelDir = "../../models/mcpsag-static-v1"

var benchQueries = []string{
	"fill in a pdf form", "deploy my app to kubernetes", "rebase my git branch onto main",
	"run a sql query against postgres", "resize all png images in a folder", "send an email to the team",
	"call a rest api endpoint", "write unit tests for this function", "convert a csv file to excel",
	"schedule a meeting next tuesday", "lint and format python code", "translate this text to french",
	"extract tables from a scanned document", "roll back a failed helm release", "summarise the latest commits",
	"find slow database queries", "crop a photo to a square", "reply to unread messages",
}

func benchDocs(n int) []string {
	docs := make([]string, n)
	for i := range docs {
		docs[i] = docText(fmt.Sprintf("skill-%d", i),
			benchQueries[i%len(benchQueries)]+": a skill that does this well, with scripts and references for the common cases")
	}
	return docs
}

// benchModels returns the models to benchmark: the tiny test model, the
// default model when it exists, and the model folder named by the
// MCPSAG_BENCH_MODEL environment variable, if set.
func benchModels(b *testing.B) map[string]string {
	dirs := map[string]string{"tiny": tinyModel(b).Dir}
	if _, err := os.Stat(filepath.Join(defaultModelDir, "model.onnx")); err == nil {
		dirs["default"] = defaultModelDir
	} else {
		b.Logf("default model %s not found, benchmarking the tiny test model only", defaultModelDir)
	}
	if dir := os.Getenv("MCPSAG_BENCH_MODEL"); dir != "" {
		dirs["env"] = dir
	}
	return dirs
}

func forEachModel(b *testing.B, fn func(b *testing.B, dir string)) {
	dirs := benchModels(b)
	for _, name := range []string{"tiny", "default", "env"} {
		if dir, ok := dirs[name]; ok {
			b.Run(name, func(b *testing.B) { fn(b, dir) })
		}
	}
}

// reportPercentiles reports the median and 99th percentile of ds.
func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkQuery embeds one query per operation, without the query cache.
func BenchmarkQuery(b *testing.B) {
	forEachModel(b, func(b *testing.B, dir string) {
		m := open(b, embed.Config{Dir: dir})
		ctx := context.Background()
		var ds []time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			if _, err := m.Embed(ctx, []string{benchQueries[i%len(benchQueries)]}, embed.Query); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			i++
		}
		reportPercentiles(b, ds)
	})
}

// BenchmarkBatch embeds one full batch of skill texts per operation.
func BenchmarkBatch(b *testing.B) {
	forEachModel(b, func(b *testing.B, dir string) {
		m := open(b, embed.Config{Dir: dir})
		ctx := context.Background()
		docs := benchDocs(m.Config().BatchSize)
		if _, err := m.Embed(ctx, docs, embed.Document); err != nil { // compile the shape
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := m.Embed(ctx, docs, embed.Document); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(docs)*b.N)/b.Elapsed().Seconds(), "texts/s")
	})
}

// BenchmarkLoad opens the model: read, parse, build, warm up.
func BenchmarkLoad(b *testing.B) {
	forEachModel(b, func(b *testing.B, dir string) {
		var load, warm time.Duration
		for b.Loop() {
			m, err := embed.Open(context.Background(), embed.Config{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			load += m.LoadInfo().LoadDuration
			warm += m.LoadInfo().WarmupDuration
			m.Close()
		}
		b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "load-ms")
		b.ReportMetric(float64(warm.Milliseconds())/float64(b.N), "warmup-ms")
	})
}

// BenchmarkFirstQueryNewShape measures what a request pays when its padded
// shape has not been compiled yet (here batch bucket 8, sequence bucket 32,
// which warm-up does not cover), against the same call once compiled.
func BenchmarkFirstQueryNewShape(b *testing.B) {
	forEachModel(b, func(b *testing.B, dir string) {
		ctx := context.Background()
		texts := benchQueries[:5] // 5 texts pad to batch bucket 8
		var first, warm []time.Duration
		for b.Loop() {
			b.StopTimer()
			m, err := embed.Open(ctx, embed.Config{Dir: dir})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			t0 := time.Now()
			if _, err := m.Embed(ctx, texts, embed.Query); err != nil {
				b.Fatal(err)
			}
			first = append(first, time.Since(t0))
			b.StopTimer()
			t0 = time.Now()
			if _, err := m.Embed(ctx, texts, embed.Query); err != nil {
				b.Fatal(err)
			}
			warm = append(warm, time.Since(t0))
			m.Close()
			b.StartTimer()
		}
		slices.Sort(first)
		slices.Sort(warm)
		b.ReportMetric(float64(first[len(first)/2].Microseconds()), "first-µs")
		b.ReportMetric(float64(warm[len(warm)/2].Microseconds()), "compiled-µs")
	})
}

// BenchmarkConcurrency compares ways to serve concurrent queries in one
// process: one shared pipeline with no lock (hugot's pipeline and GoMLX's
// executor are safe for concurrent use), the same behind a lock
// (Concurrency 1), bounded at GOMAXPROCS (the default), and a pool of two
// separately loaded models, each with 1 or 8 client goroutines per
// GOMAXPROCS sending queries. ns/op is wall time per query across clients
// (inverse throughput); p50 and p99 include waiting.
func BenchmarkConcurrency(b *testing.B) {
	forEachModel(b, func(b *testing.B, dir string) {
		modes := []struct {
			name        string
			concurrency int
			pool        int
		}{
			{"shared", 1 << 20, 1},
			{"lock", 1, 1},
			{"bounded", runtime.GOMAXPROCS(0), 1},
			{"pool2", 1, 2},
		}
		for _, clients := range []int{1, 8} {
			for _, mode := range modes {
				b.Run(fmt.Sprintf("%s/clients=%dxP", mode.name, clients), func(b *testing.B) {
					pool := make(chan *embed.Model, mode.pool)
					for range mode.pool {
						pool <- open(b, embed.Config{Dir: dir, Concurrency: mode.concurrency})
					}
					ctx := context.Background()
					var mu sync.Mutex
					var ds []time.Duration
					var n atomic.Int64
					b.SetParallelism(clients)
					b.RunParallel(func(pb *testing.PB) {
						var local []time.Duration
						for pb.Next() {
							q := benchQueries[int(n.Add(1))%len(benchQueries)]
							t0 := time.Now()
							m := <-pool
							if mode.pool == 1 {
								pool <- m // shared model: hand it back at once
							}
							_, err := m.Embed(ctx, []string{q}, embed.Query)
							if mode.pool > 1 {
								pool <- m
							}
							if err != nil {
								b.Error(err)
								return
							}
							local = append(local, time.Since(t0))
						}
						mu.Lock()
						ds = append(ds, local...)
						mu.Unlock()
					})
					reportPercentiles(b, ds)
				})
			}
		}
	})
}
