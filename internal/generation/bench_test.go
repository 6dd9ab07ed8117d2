package generation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/store"
)

// BenchmarkEditToServed builds the workspace in MCPSAG_BENCH_WORKSPACE
// (routerbench gen writes one) keyword-only, then measures the build that
// follows an edit of one SKILL.md: what a router does between a file event
// and serving the new generation. Its profile shows where that time goes.
//
//	MCPSAG_BENCH_WORKSPACE=/tmp/ws100k go test -run x -bench EditToServed -benchtime 10x ./internal/generation
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
	bl, err := NewBuilder(Config{Workspace: ws}, db)
	if err != nil {
		b.Fatal(err)
	}
	defer bl.Flush()
	ctx := context.Background()
	start := time.Now()
	g, _, err := bl.Build(ctx, nil, false, match.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("cold build of %d skills: %s", g.Index.Len(), time.Since(start).Round(time.Millisecond))
	dirs, _ := os.ReadDir(filepath.Join(ws, "skills"))
	p := filepath.Join(ws, "skills", dirs[len(dirs)/2].Name(), skillfs.SkillFile)
	orig, err := os.ReadFile(p)
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
		next, pass, err := bl.Build(ctx, g, false, match.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		if !pass.Stats.Published || pass.Analyzed != 1 {
			b.Fatalf("edit: published %v, analyzed %d", pass.Stats.Published, pass.Analyzed)
		}
		g = next
	}
}
