package loader

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// TestSnapshotChangedUnderTheLoader starts a loader from the index
// snapshot an earlier one left, then changes the file as another process
// might while the loader serves from it: random bytes written in place
// past its header, the file cut to 40%, the file cut to nothing. Each
// time, matching must answer as a fresh build does (served from a mapping
// of the file, it answered with NaN scores, and faulted once the file was
// cut), Problems must report the change until the snapshot is written
// again, a pass after an edit must not panic and must serve the edit, and
// the snapshot written again must be sound: a restart from it analyzes
// nothing and answers like a fresh build.
func TestSnapshotChangedUnderTheLoader(t *testing.T) {
	ctx := context.Background()
	ws, state := t.TempDir(), t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 300 {
		writeSkill(t, root, fmt.Sprintf("s%03d", i), fmt.Sprintf("s%03d", i),
			fmt.Sprintf("helper %d for topic %d and area %d", i, i%17, i%5))
	}
	var mu sync.Mutex
	var passes []Pass
	cfg := Config{Embedder: newTinyManager(t), OnPass: func(_ context.Context, p Pass, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			passes = append(passes, p)
		}
	}}
	_, _, stop := startLoader(t, ws, state, cfg)
	stop()
	path := filepath.Join(state, statedir.SnapshotFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	if len(good) < 64<<10 {
		t.Fatalf("snapshot of %d bytes; the test needs one of several pages", len(good))
	}

	tasks := []string{"topic 3", "helper 42", "area 4 helper", "s150"}
	sameAsFresh := func(what string, g *Generation) {
		t.Helper()
		fresh := newTestIndex(t, ws, Config{Embedder: cfg.Embedder})
		fresh.reindex(false)
		for _, task := range tasks {
			req := skill.MatchRequest{Task: task, TopK: 5}
			a, err := g.Index.Rank(ctx, req, nil)
			if err != nil {
				t.Fatalf("%s: %q: %v", what, task, err)
			}
			b, _ := fresh.prev.Index.Rank(ctx, req, nil)
			if x, y := rankText(a), rankText(b); x != y {
				t.Errorf("%s: %q differs from a fresh build:\n%s\n%s", what, task, x, y)
			}
		}
	}

	rng := rand.New(rand.NewPCG(1, 2))
	damages := []struct {
		name   string
		damage func() error
	}{
		{"written in place", func() error {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			junk := make([]byte, len(good)-8192-4096)
			for i := range junk {
				junk[i] = byte(rng.Uint32())
			}
			_, err = f.WriteAt(junk, 8192)
			return err
		}},
		{"cut to 40%", func() error { return os.Truncate(path, int64(len(good)*4/10)) }},
		{"cut to nothing", func() error { return os.Truncate(path, 0) }},
	}
	for i, d := range damages {
		mu.Lock()
		passes = nil
		mu.Unlock()
		l, s, stop := startLoader(t, ws, state, cfg)
		mu.Lock()
		if len(passes) != 1 || passes[0].Analyzed != 0 {
			t.Fatalf("%s: the start analyzed skills (%+v); it must have used the snapshot", d.name, passes)
		}
		mu.Unlock()
		if err := d.damage(); err != nil {
			t.Fatal(err)
		}
		g, _ := s.current()
		sameAsFresh(d.name+", served from the start's copy", g)

		if why := strings.Join(l.Problems(), "; "); !strings.Contains(why, "index snapshot") || !strings.Contains(why, "changed by another process") {
			t.Errorf("%s: problems %q; want the change reported", d.name, why)
		}

		// An edit after the change: the pass updates the index the start
		// read, which must still be sound.
		writeSkill(t, root, fmt.Sprintf("s%03d", i), fmt.Sprintf("s%03d", i), fmt.Sprintf("edited helper %d about gardening", i))
		bump(t, filepath.Join(root, fmt.Sprintf("s%03d", i), "SKILL.md"))
		if _, err := l.Reindex(ctx, false); err != nil {
			t.Fatalf("%s: reindex after the change: %v", d.name, err)
		}
		g, _ = s.current()
		sameAsFresh(d.name+", after an edit", g)

		l.Flush()
		if why := l.Problems(); len(why) > 0 {
			t.Errorf("%s: still degraded after the snapshot was written again: %q", d.name, why)
		}
		stop()
		mu.Lock()
		passes = nil
		mu.Unlock()
		l, s, stop = startLoader(t, ws, state, cfg)
		mu.Lock()
		if len(passes) != 1 || passes[0].Analyzed != 0 {
			t.Errorf("%s: a restart from the snapshot written again analyzed skills: %+v", d.name, passes)
		}
		mu.Unlock()
		g, _ = s.current()
		sameAsFresh(d.name+", after a restart", g)
		stop()
		if good, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOwnSnapshotWritesAreNoChange: a loader that writes its snapshot
// again and again (each edit a new generation) never takes its own writes
// for another process's.
func TestOwnSnapshotWritesAreNoChange(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 5 {
		writeSkill(t, root, fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("helper %d", i))
	}
	l, _, stop := startLoader(t, ws, t.TempDir(), Config{Embedder: newTinyManager(t)})
	defer stop()
	done := make(chan struct{})
	var seen []string
	go func() {
		defer close(done)
		for range 2000 {
			if why := l.Problems(); len(why) > 0 {
				seen = append(seen, why...)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for i := range 4 {
		p := writeSkill(t, root, "s0", "s0", fmt.Sprintf("helper edited %d times", i+1))
		bump(t, p)
		if _, err := l.Reindex(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		l.Flush()
	}
	<-done
	if len(seen) > 0 {
		t.Errorf("the loader's own snapshot writes were reported: %q", seen)
	}
}
