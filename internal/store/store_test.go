package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

func openT(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond, Holder: "pid 1 test"})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

// putAndReopen writes rec and its bodies to a new cache in dir, closes it,
// opens it again and returns it with the records it reads back.
func putAndReopen(t *testing.T, dir string, rec *FileRecord, bodies map[string]string) (*DB, map[string]*FileRecord) {
	t.Helper()
	db := openT(t, dir)
	if err := db.ApplyFiles(FileChanges{Put: []*FileRecord{rec}, Bodies: bodies}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openT(t, dir)
	t.Cleanup(func() { db.Close() })
	files, err := db.Files()
	if err != nil {
		t.Fatal(err)
	}
	return db, files
}

func TestRecordsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	abc := hashOf("abc")
	rec := &FileRecord{
		Path: "/x/skills/pdf/SKILL.md", ModTimeNano: 42, Size: 10, ContentHash: abc,
		Problems: []skill.Problem{{Severity: skill.SeverityWarning, Code: "name-mismatch", Line: 2}},
		Good: &Version{Name: "pdf", ContentHash: abc, Frontmatter: skill.Frontmatter{
			Name: "pdf", Description: "Fill PDF forms", Metadata: map[string]string{"k": "v"},
		}},
	}
	db, files := putAndReopen(t, dir, rec, map[string]string{abc: "# Body"})
	got := files[rec.Path]
	if got == nil || got.Good == nil || got.Good.Frontmatter.Description != "Fill PDF forms" || got.Problems[0].Code != "name-mismatch" {
		t.Fatalf("record after reopen = %+v", got)
	}
	body, ok, err := db.Body(abc)
	if err != nil || !ok || body != "# Body" {
		t.Fatalf("Body = %q, %v, %v; want # Body", body, ok, err)
	}

	// Deleting the record removes it at once; its body stays readable
	// through the next batch (the generation still served may load it) and
	// goes with the one after.
	if err := db.ApplyFiles(FileChanges{Delete: []string{rec.Path}, KeepBodies: map[string]bool{}}); err != nil {
		t.Fatal(err)
	}
	files, _ = db.Files()
	if len(files) != 0 {
		t.Errorf("files after delete = %d, want 0", len(files))
	}
	if _, ok, _ := db.Body(abc); !ok {
		t.Error("body deleted by the batch that left it unreferenced")
	}
	if err := db.ApplyFiles(FileChanges{KeepBodies: map[string]bool{}}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Body(abc); ok {
		t.Error("body survived a second garbage collection")
	}

	// A body referenced again before the second batch is kept.
	def := hashOf("def")
	if err := db.ApplyFiles(FileChanges{Bodies: map[string]string{def: "# Def"}, KeepBodies: map[string]bool{def: true}}); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []map[string]bool{{}, {def: true}, {def: true}} {
		if err := db.ApplyFiles(FileChanges{KeepBodies: keep}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := db.Body(def); !ok {
		t.Error("a body referenced again was deleted")
	}
}

func TestSecondOpenNamesHolder(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	defer db.Close()

	start := time.Now()
	_, err := Open(dir, Options{LockTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open error = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "pid 1 test") {
		t.Errorf("error %q does not name the holder", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second Open took %v; it must fail fast", d)
	}
}

func TestGenerationAndModel(t *testing.T) {
	db := openT(t, t.TempDir())
	defer db.Close()
	if g, _ := db.Generation(); g != 0 {
		t.Fatalf("new cache generation = %d, want 0", g)
	}
	if err := db.SetGeneration(7); err != nil {
		t.Fatal(err)
	}
	if g, _ := db.Generation(); g != 7 {
		t.Fatalf("generation = %d, want 7", g)
	}

	if err := db.PutVectors("fp-a", map[string][]float32{"h1": {1, 2}, "h2": {3, 4}}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetModel("fp-a", "a"); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.VectorCount("fp-a"); n != 2 {
		t.Fatalf("vectors for fp-a = %d, want 2", n)
	}
	// Switching models drops the old model's vectors.
	if err := db.SetModel("fp-b", "b"); err != nil {
		t.Fatal(err)
	}
	if n, _ := db.VectorCount("fp-a"); n != 0 {
		t.Errorf("vectors for old model = %d after switch, want 0", n)
	}
	fp, name, _ := db.Model()
	if fp != "fp-b" || name != "b" {
		t.Errorf("Model = %q %q, want fp-b b", fp, name)
	}
}

func TestVectorsRoundTripAndPrune(t *testing.T) {
	db := openT(t, t.TempDir())
	defer db.Close()
	want := []float32{0.5, -1.25, 3}
	if err := db.PutVectors("fp", map[string][]float32{"a": want, "b": {1}}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Vectors("fp", []string{"a", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["a"]) != 3 || got["a"][1] != -1.25 {
		t.Fatalf("Vectors = %v, want only a = %v", got, want)
	}
	if n, err := db.PruneVectors("fp", map[string]bool{"a": true}); err != nil || n != 1 {
		t.Fatalf("PruneVectors = %d, %v; want 1 removed", n, err)
	}
	if n, _ := db.VectorCount("fp"); n != 1 {
		t.Errorf("VectorCount after prune = %d, want 1", n)
	}
}

// TestVectorCountIsKept: the vector count Status reads is kept by every
// write instead of walking the bucket, carried over a clean close, and
// counted again after a crash or from a note that lists no count; at every
// step it equals a walk of the bucket.
func TestVectorCountIsKept(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	walk := func(db *DB, fp string) int {
		t.Helper()
		n := 0
		must(t, db.raw().View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(bucketVectors).Bucket([]byte(fp)); b != nil {
				n = b.Stats().KeyN
			}
			return nil
		}))
		return n
	}
	check := func(db *DB, step string, fps ...string) {
		t.Helper()
		for _, fp := range fps {
			n, err := db.VectorCount(fp)
			if err != nil || n != walk(db, fp) {
				t.Errorf("%s: VectorCount(%s) = %d, %v; the bucket holds %d", step, fp, n, err, walk(db, fp))
			}
		}
	}
	vecs := func(keys ...string) map[string][]float32 {
		m := map[string][]float32{}
		for _, k := range keys {
			m[k] = []float32{float32(len(k)), 1}
		}
		return m
	}
	must(t, db.PutVectors("fp-a", vecs("h1", "h2")))
	check(db, "first batch", "fp-a", "fp-b")
	must(t, db.PutVectors("fp-a", vecs("h2", "h3", "h4"))) // h2 again: replaced, not added
	must(t, db.PutVectors("fp-b", vecs("h1")))
	check(db, "second batch, one key again", "fp-a", "fp-b")
	if n, err := db.PruneVectors("fp-a", map[string]bool{"h1": true, "h4": true, "absent": true}); err != nil || n != 2 {
		t.Fatalf("PruneVectors = %d, %v; want 2 removed", n, err)
	}
	check(db, "prune", "fp-a")
	must(t, db.Close())
	if note, err := os.ReadFile(filepath.Join(dir, statedir.CleanNote)); err != nil || !strings.Contains(string(note), "vectors fp-a 2\n") {
		t.Errorf("clean-close note %q, %v; want the count of fp-a", note, err)
	}

	// Carried over a clean close: the count is there before any walk.
	db = openT(t, dir)
	if db.walked || db.h.Load().vectorCount["fp-a"] != 2 || db.h.Load().vectorCount["fp-b"] != 1 {
		t.Errorf("after a clean close: walked %v, counts %v; want fp-a 2 and fp-b 1 from the note", db.walked, db.h.Load().vectorCount)
	}
	must(t, db.PutVectors("fp-a", vecs("h5")))
	check(db, "a write after a clean close", "fp-a", "fp-b")

	// A crash leaves no note: counted again.
	db.raw().Close()
	db = openT(t, dir)
	if len(db.h.Load().vectorCount) != 0 {
		t.Errorf("after a crash: counts %v, want none until counted", db.h.Load().vectorCount)
	}
	check(db, "after a crash", "fp-a", "fp-b")
	must(t, db.SetModel("fp-b", "b"))
	check(db, "switch of model", "fp-a", "fp-b")
	must(t, db.Close())

	// A note that lists no count (a router that did not count) still names
	// the file; the count is walked. One with a line that cannot be read
	// is not trusted at all.
	note, err := os.ReadFile(filepath.Join(dir, statedir.CleanNote))
	must(t, err)
	stamp, rest, _ := strings.Cut(string(note), "\n")
	sum, _, _ := strings.Cut(rest, "\n")
	stamp += "\n" + sum
	for _, tc := range []struct {
		note   string
		walked bool
	}{
		{stamp + "\n", false},
		{stamp + "\nvectors fp-b x\n", true},
		{stamp + "\nvectors fp-b 1", true},
		{stamp + "\nvectors fp-b -1\n", true},
		{stamp + "\nvector fp-b 1\n", true},
		{strings.Replace(stamp, "crc32c ", "crc32c 1", 1) + "\n", true},
		{strings.Replace(stamp, "\ncrc32c ", "\ncrc32 ", 1) + "\n", true},
		{strings.Split(stamp, "\n")[0] + "\n", true},
	} {
		must(t, os.WriteFile(filepath.Join(dir, statedir.CleanNote), []byte(tc.note), 0o640))
		db = openT(t, dir)
		if db.walked != tc.walked || len(db.h.Load().vectorCount) != 0 {
			t.Errorf("note %q: walked %v, counts %v; want walked %v and no count", tc.note, db.walked, db.h.Load().vectorCount, tc.walked)
		}
		check(db, fmt.Sprintf("note %q", tc.note), "fp-a", "fp-b")
		must(t, db.Close())
	}
}

func TestIncompatibleSchemaIsMovedAside(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	if err := db.raw().Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte("999"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = openT(t, dir)
	defer db.Close()
	if !strings.Contains(db.Recovered, "incompatible") {
		t.Errorf("Recovered = %q, want an incompatible-schema note", db.Recovered)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, statedir.CacheFile+".incompatible-*"))
	if len(aside) != 1 {
		t.Errorf("moved-aside files = %v, want one", aside)
	}
}

// TestCorruptFilesAreRebuilt damages a populated cache in the ways disks and
// crashes do and checks that Open never panics, moves the file aside and
// returns a working, empty cache.
func TestCorruptFilesAreRebuilt(t *testing.T) {
	damage := map[string]func(t *testing.T, path string){
		"zeroed meta pages": func(t *testing.T, path string) { overwrite(t, path, 0, make([]byte, 8192)) },
		"garbage page": func(t *testing.T, path string) {
			r := rand.New(rand.NewPCG(1, 2))
			junk := make([]byte, 10*4096)
			for i := range junk {
				junk[i] = byte(r.IntN(256))
			}
			overwrite(t, path, 2*4096, junk) // pages 2-11: freelist and data
		},
		"truncated": func(t *testing.T, path string) {
			if err := os.Truncate(path, 5000); err != nil {
				t.Fatal(err)
			}
		},
		"not a database": func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("hello, I am not bbolt"), 0o640); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, breakIt := range damage {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db := openT(t, dir)
			populate(t, db, 300)
			db.Close()
			breakIt(t, filepath.Join(dir, statedir.CacheFile))

			db, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
			if err != nil {
				t.Fatalf("Open after damage: %v", err)
			}
			defer db.Close()
			if db.Recovered == "" {
				t.Fatal("damaged cache was not detected")
			}
			files, err := db.Files()
			if err != nil || len(files) != 0 {
				t.Fatalf("rebuilt cache: %d files, err %v; want empty and readable", len(files), err)
			}
			populate(t, db, 3)
		})
	}
}

func populate(t testing.TB, db *DB, n int) {
	t.Helper()
	var recs []*FileRecord
	bodies := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		h := hashOf(name)
		recs = append(recs, &FileRecord{Path: filepath.Join("/skills", name, "SKILL.md"), Size: int64(i), ContentHash: h,
			Good: &Version{Name: name, ContentHash: h, Frontmatter: skill.Frontmatter{Description: strings.Repeat("d", 200)}}})
		bodies[h] = strings.Repeat("body ", 100)
	}
	if err := db.ApplyFiles(FileChanges{Put: recs, Bodies: bodies}); err != nil {
		t.Fatal(err)
	}
}

// hashOf returns the hex sha256 of s, as the cache stores content hashes.
func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestMissingBodies: Files keeps a record whose body was damaged or lost,
// and MissingBodies names exactly those records, in path order: the bodies
// first and last in key order, one in between, and one that two records
// share, among bodies no record uses, checked against a lookup of each
// record's body.
func TestMissingBodies(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	populate(t, db, 8)
	files, err := db.Files()
	if err != nil || len(files) != 8 {
		t.Fatalf("files %d, err %v", len(files), err)
	}
	var hashes []string
	for _, r := range files {
		hashes = append(hashes, r.Good.ContentHash)
	}
	slices.Sort(hashes)
	shared := hashes[5]
	var twin FileRecord
	for _, r := range files {
		if r.Good.ContentHash == shared {
			twin = *r
		}
	}
	twin.Path = filepath.Join("/skills", "twin", "SKILL.md")
	must(t, db.ApplyFiles(FileChanges{Put: []*FileRecord{&twin}}))
	if files, err = db.Files(); err != nil || len(files) != 9 {
		t.Fatalf("with a shared body: files %d, err %v", len(files), err)
	}
	if missing, err := db.MissingBodies(files); err != nil || len(missing) != 0 {
		t.Fatalf("intact cache: missing %v, err %v", missing, err)
	}
	if err := db.raw().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBodies)
		var errs []error
		for i := range 40 { // bodies no record uses lie between those checked
			key := []byte(hashOf(fmt.Sprint("stale ", i)))
			errs = append(errs, b.Put(key, seal(key, []byte("old body"))))
		}
		for _, h := range []string{hashes[3], shared} {
			v := bytes.Clone(b.Get([]byte(h)))
			v[len(v)-1] ^= 0x5a
			errs = append(errs, b.Put([]byte(h), v))
		}
		return errors.Join(append(errs, b.Delete([]byte(hashes[0])), b.Delete([]byte(hashes[7])))...)
	}); err != nil {
		t.Fatal(err)
	}
	if files, err = db.Files(); err != nil || len(files) != 9 {
		t.Fatalf("after damage: files %d, err %v; want all 9 kept", len(files), err)
	}
	missing, err := db.MissingBodies(files)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, r := range missing {
		got = append(got, r.Path)
	}
	for _, r := range files {
		if _, ok, err := db.Body(r.Good.ContentHash); err != nil || !ok {
			want = append(want, r.Path)
		}
	}
	slices.Sort(want)
	if len(want) != 5 || !slices.Equal(got, want) {
		t.Errorf("missing bodies %v, want %v (5: two lost, two damaged, one shared)", got, want)
	}
}

// TestCleanCloseSkipsTheCheck: a cache closed by Close and unchanged since
// is not walked again at the next open, and its note is gone while it is
// open; one written to after Close, or left without Close, is walked; a
// damaged one is still caught.
func TestCleanCloseSkipsTheCheck(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	if !db.walked {
		t.Error("a new cache was not checked")
	}
	populate(t, db, 20)
	must(t, db.Close())

	db = openT(t, dir)
	if db.walked {
		t.Error("a cache closed cleanly and unchanged was checked again")
	}
	if _, err := os.Stat(filepath.Join(dir, statedir.CleanNote)); !os.IsNotExist(err) {
		t.Errorf("the clean-close note is still there while the cache is open: %v", err)
	}
	files, err := db.Files()
	if err != nil || len(files) != 20 {
		t.Fatalf("files %d, err %v", len(files), err)
	}
	must(t, db.Close())

	// Written to after Close: the note no longer matches.
	path := filepath.Join(dir, statedir.CacheFile)
	fi, err := os.Stat(path)
	must(t, err)
	overwrite(t, path, fi.Size()-4096, make([]byte, 4096))
	db = openT(t, dir)
	if !db.walked {
		t.Error("a cache written to after Close was not checked")
	}
	// Left without Close (a crash): no note.
	db.raw().Close()
	db = openT(t, dir)
	if !db.walked {
		t.Error("a cache left without Close was not checked")
	}
	must(t, db.Close())

	// A damaged meta page after a clean close is caught and worked around.
	overwrite(t, path, 0, make([]byte, 64))
	db = openT(t, dir)
	if !db.walked {
		t.Error("a cache damaged after Close was not checked")
	}
	must(t, db.Close())
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
