package daemon_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon"
	"github.com/mcpsag/router/internal/slowtest"
)

// sharedRoots are the real-world trees under ../shared: every corpus root
// (openai-skills keeps its skills under dot-folders, named directly) and the
// Seal-Tools evaluation skills, 4,000+ skills in all.
var sharedRoots = []string{
	"corpora/anthropics-skills/skills",
	"corpora/obra-superpowers/skills",
	"corpora/openai-skills/skills/.curated",
	"corpora/openai-skills/skills/.experimental",
	"corpora/openai-skills/skills/.system",
	"corpora/k-dense-ai-claude-scientific-skills/scientific-skills",
	"eval/seal-tools/skills",
}

func sharedDir(tb testing.TB) string {
	tb.Helper()
	dir, _ := filepath.Abs(filepath.Join("..", "..", "..", "shared"))
	if _, err := os.Stat(filepath.Join(dir, "corpora")); err != nil {
		tb.Skipf("../shared/corpora not found at %s; the corpus tests and benchmarks need it", dir)
	}
	return dir
}

func corporaConfig(tb testing.TB, state string) config.Config {
	tb.Helper()
	shared := sharedDir(tb)
	cfg, err := config.Resolve(config.Overrides{Workspace: tb.TempDir(), Addr: "127.0.0.1:0", StateDir: state}, func(string) string { return "" })
	if err != nil {
		tb.Fatal(err)
	}
	kinds := []string{"project", "user", "bundled"}
	for i, r := range sharedRoots {
		cfg.Roots = append(cfg.Roots, config.Root{Path: filepath.Join(shared, r), Kind: kinds[i%len(kinds)]})
	}
	cfg.Watch.Enabled = false
	cfg.Watch.RescanInterval = 0
	return cfg
}

// startCorpora starts a router on the shared trees and returns the time from
// Run to SERVING.
func startCorpora(tb testing.TB, state string) (*daemon.Main, time.Duration) {
	tb.Helper()
	m := &daemon.Main{Config: corporaConfig(tb, state), Stderr: io.Discard}
	start := time.Now()
	if err := m.Run(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return m, time.Since(start)
}

// TestCorporaServed indexes every shared tree through the real daemon and
// checks the real-world warts are reported, not fatal.
func TestCorporaServed(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 4,000+ skills")
	}
	slowtest.Skip(t, "indexes the 4,000+ skills of ../shared")
	m, _ := startCorpora(t, t.TempDir())
	defer m.Close(context.Background())
	st, _ := m.Router().Status(context.Background())
	if st.Skills < 4000 {
		t.Errorf("served %d skills from the shared trees, want 4,000+", st.Skills)
	}
	if st.ProblemsByCode["description-too-long"] == 0 || st.ProblemsByCode["body-too-long"] == 0 {
		t.Errorf("known corpus warts not reported: %v", st.ProblemsByCode)
	}
}

// BenchmarkIndexCorpora reports cold indexing (empty cache) and warm restart
// (same files, cache present) throughput in skills/s, and the warm restart's
// time from start to SERVING.
func BenchmarkIndexCorpora(b *testing.B) {
	b.Run("cold", func(b *testing.B) {
		skills := 0
		for b.Loop() {
			m, _ := startCorpora(b, b.TempDir())
			st, _ := m.Router().Status(context.Background())
			skills = st.LastStats.Scanned
			b.StopTimer()
			m.Close(context.Background())
			b.StartTimer()
		}
		b.ReportMetric(float64(skills)*float64(b.N)/b.Elapsed().Seconds(), "skills/s")
	})
	b.Run("warm", func(b *testing.B) {
		state := b.TempDir()
		m, _ := startCorpora(b, state)
		m.Close(context.Background())
		skills := 0
		var serving time.Duration
		for b.Loop() {
			m, d := startCorpora(b, state)
			serving += d
			st, _ := m.Router().Status(context.Background())
			skills = st.LastStats.Scanned
			if st.LastStats.Parsed != 0 {
				b.Fatalf("warm restart parsed %d files", st.LastStats.Parsed)
			}
			b.StopTimer()
			m.Close(context.Background())
			b.StartTimer()
		}
		b.ReportMetric(float64(skills)*float64(b.N)/b.Elapsed().Seconds(), "skills/s")
		b.ReportMetric(float64(serving.Milliseconds())/float64(b.N), "ms-to-serving")
	})
}
