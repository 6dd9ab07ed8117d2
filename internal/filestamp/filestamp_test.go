package filestamp

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func write(t *testing.T, p, s string, mtime time.Time) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestOfSeesContentSizeTimeAndPresence(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	absent := Of(p)
	t0 := time.Unix(1_700_000_000, 0)
	write(t, p, "abc", t0)
	first := Of(p)
	if first == absent {
		t.Fatal("a file appearing did not change the stamp")
	}
	if Of(p) != first {
		t.Fatal("the stamp of an unchanged file changed")
	}
	write(t, p, "abd", t0) // same size, same time, other content
	if Of(p) == first {
		t.Error("a same-size, same-time edit was not seen")
	}
	write(t, p, "abd", t0.Add(time.Second))
	second := Of(p)
	write(t, p, "abd", t0)
	if Of(p) == second {
		t.Error("a time change was not seen")
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if Of(p) != absent {
		t.Error("a removed file does not stamp as absent")
	}
	if Of(p, dir) == Of(dir, p) {
		t.Error("the stamp ignores the order of its paths")
	}
}

func TestWatchThrottlesWithItsClock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokens.yaml")
	t0 := time.Unix(1_700_000_000, 0)
	write(t, p, "one", t0)
	now := t0
	w := &Watch{Paths: []string{p}, Interval: time.Second, Now: func() time.Time { return now }}
	if !w.Changed() {
		t.Fatal("the first check did not report the files")
	}
	if w.Changed() {
		t.Fatal("an unchanged file reported a change")
	}
	write(t, p, "two", t0)
	now = now.Add(500 * time.Millisecond)
	if w.Changed() {
		t.Fatal("a check within the interval looked at the file")
	}
	now = now.Add(600 * time.Millisecond)
	if !w.Changed() {
		t.Fatal("an edit was not seen after the interval")
	}
	now = now.Add(2 * time.Second)
	if w.Changed() {
		t.Fatal("the same edit was reported twice")
	}
	write(t, p, "three", t0)
	w.Mark()
	now = now.Add(2 * time.Second)
	if w.Changed() {
		t.Fatal("a marked state was reported as a change")
	}
}
