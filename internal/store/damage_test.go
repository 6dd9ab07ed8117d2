package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/filestamp"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/testlog"
)

// forgeNote makes the clean-close note in dir name the cache file as it is
// now: what damage below the file system looks like (the bytes changed,
// the inode, size and times did not).
func forgeNote(t *testing.T, dir string, note []byte) {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, statedir.CacheFile))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	stamp := filestamp.Meta{Dev: st.Dev, Ino: st.Ino, Size: st.Size, MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
	_, rest, _ := strings.Cut(string(note), "\n")
	write(t, filepath.Join(dir, statedir.CleanNote), []byte(stamp.String()+rest))
}

// TestDamageUnderACleanNoteIsCaught damages a cache closed cleanly in every
// way damages() knows and makes its note name the damaged file: the
// checksum in the note must catch every change, and Open must then serve
// only what was written, as it does without a note.
func TestDamageUnderACleanNoteIsCaught(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	dir := t.TempDir()
	tr := buildCache(t, dir, 300, 5)
	pristine := read(t, filepath.Join(dir, statedir.CacheFile))
	note := read(t, filepath.Join(dir, statedir.CleanNote))
	if !bytes.Contains(note, []byte("\ncrc32c ")) {
		t.Fatalf("clean-close note without a checksum:\n%s", note)
	}
	for _, d := range damages() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			for seed := range seeds {
				dir := t.TempDir()
				path := filepath.Join(dir, statedir.CacheFile)
				write(t, path, pristine)
				d.do(t, path, rand.New(rand.NewPCG(uint64(seed), 41)))
				forgeNote(t, dir, note)
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				_, clean := takeClean(dir, f)
				f.Close()
				if clean != bytes.Equal(read(t, path), pristine) {
					t.Errorf("seed %d: the note was taken for the file's (%v), though its bytes changed", seed, clean)
				}
				forgeNote(t, dir, note) // takeClean removed it
				checkAnswers(t, dir, tr)
			}
		})
	}
}

// TestCloseVouchesOnlyForASoundFile: Close notes a file as closed cleanly
// only when its structure passes the check; damage done while it was open,
// which no call read, is left to the next start to find.
func TestCloseVouchesOnlyForASoundFile(t *testing.T) {
	dir := t.TempDir()
	tr := buildCache(t, dir, 200, 3)
	db := openT(t, dir)
	must(t, db.Close())
	if _, err := os.Stat(filepath.Join(dir, statedir.CleanNote)); err != nil {
		t.Fatalf("a sound file closed without a note: %v", err)
	}

	db = openT(t, dir)
	path := filepath.Join(dir, statedir.CacheFile)
	f, err := os.Open(path)
	must(t, err)
	m, err := pickMeta(f, 4096)
	f.Close()
	must(t, err)
	overwrite(t, path, int64(m.root)*4096, bytes.Repeat([]byte{0xa5}, 4096)) // the root bucket's page
	must(t, db.Close())
	if _, err := os.Stat(filepath.Join(dir, statedir.CleanNote)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file damaged while open was noted as closed cleanly (stat: %v)", err)
	}
	if note := checkAnswers(t, dir, tr); note == "" {
		t.Error("the damaged file was not moved aside at the next open")
	}
}

// TestTruncatedWhileOpen cuts the cache file to nothing under an open DB
// with readers and writers at work: no call faults or hangs, those that
// read the cut file fail with ErrDamaged, the file is moved aside and
// replaced by an empty cache (Replaced says so, Replacements counts it),
// and the new cache takes writes, reads them back and closes cleanly.
func TestTruncatedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	tr := buildCache(t, dir, 300, 11)
	var logs testlog.Buffer
	db, err := Open(dir, Options{LockTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	must(t, err)
	files, err := db.Files()
	if err != nil || len(files) != len(tr.records) {
		t.Fatalf("Files: %d, %v", len(files), err)
	}
	var hashes []string
	for h := range tr.bodies {
		hashes = append(hashes, h)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var damaged, other []error
	note := func(err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if errors.Is(err, ErrDamaged) {
			damaged = append(damaged, err)
		} else {
			other = append(other, err)
		}
	}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				switch (w + i) % 4 {
				case 0:
					_, err := db.Files()
					note(err)
				case 1:
					_, _, err := db.Body(hashes[i%len(hashes)])
					note(err)
				case 2:
					_, err := db.Vectors("fp-main", hashes[:8])
					note(err)
				default:
					name := fmt.Sprintf("new-%d-%d", w, i)
					h := hashOf(name)
					note(db.ApplyFiles(FileChanges{Put: []*FileRecord{{
						Path: "/ws/" + name + "/SKILL.md", ContentHash: h, Good: &Version{Name: name, ContentHash: h},
					}}, Bodies: map[string]string{h: "# " + name}}))
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	must(t, os.Truncate(filepath.Join(dir, statedir.CacheFile), 0))
	select {
	case <-db.Replaced():
	case <-time.After(10 * time.Second):
		t.Fatal("no replacement ten seconds after the file was cut")
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(damaged) == 0 {
		t.Error("no call saw the damage")
	}
	for _, err := range other {
		t.Errorf("an error other than ErrDamaged: %v", err)
	}
	if n := db.Replacements(); n != 1 {
		t.Errorf("Replacements = %d, want 1", n)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, statedir.CacheFile+".corrupt-*"))
	if len(aside) != 1 {
		t.Errorf("moved-aside files %v, want one", aside)
	}
	if !strings.Contains(logs.String(), "cache file damaged while in use") {
		t.Errorf("the replacement was not logged:\n%s", logs.String())
	}

	// The new cache holds only what was written after the cut, and works.
	files, err = db.Files()
	must(t, err)
	for p := range files {
		if tr.records[p] != nil {
			t.Errorf("record %s from before the cut in the new cache", p)
		}
	}
	populate(t, db, 20)
	if files, err = db.Files(); err != nil || len(files) < 20 {
		t.Errorf("after writes to the new cache: %d records, %v", len(files), err)
	}
	must(t, db.Close())
	db = openT(t, dir)
	if db.walked {
		t.Error("the new cache, closed cleanly, was checked again")
	}
	must(t, db.Close())
}
