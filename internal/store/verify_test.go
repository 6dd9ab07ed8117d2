package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// truth is what a populated cache holds, to tell a right answer from a wrong
// one after damage.
type truth struct {
	records map[string]*FileRecord
	bodies  map[string]string
	vectors map[string]map[string][]float32 // fingerprint -> text hash -> vector
}

// buildCache writes a cache with n records whose bodies range from a line to
// several pages (overflow pages), a large vectors bucket and a one-vector
// (inline) bucket, then closes it.
func buildCache(t testing.TB, dir string, n int, seed uint64) truth {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	db, err := Open(dir, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tr := truth{records: map[string]*FileRecord{}, bodies: map[string]string{}, vectors: map[string]map[string][]float32{
		"fp-main": {}, "fp-tiny": {},
	}}
	var recs []*FileRecord
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		body := strings.Repeat(fmt.Sprintf("line %d of %s. ", i, name), 1+r.IntN(400))
		h := hashOf(name + body)
		rec := &FileRecord{
			Path: filepath.Join("/ws/skills", name, "SKILL.md"), ModTimeNano: int64(1e9 + i), Size: int64(len(body) + 60), ContentHash: h,
			Good: &Version{Name: name, FoldedName: name, ContentHash: h, FrontmatterHash: hashOf(name), BodyTokens: len(body) / 4,
				Frontmatter: skill.Frontmatter{Name: name, Description: "Does task " + strconv.Itoa(i)}},
		}
		if i%17 == 0 { // a bad edit that keeps the last good version
			rec.ContentHash = hashOf("broken" + name)
			rec.Problems = []skill.Problem{{Severity: skill.SeverityError, Code: "yaml", Line: 2}}
		}
		recs = append(recs, rec)
		tr.records[rec.Path] = rec
		tr.bodies[h] = body
		vec := make([]float32, 64)
		for j := range vec {
			vec[j] = r.Float32()*2 - 1
		}
		tr.vectors["fp-main"][hashOf("text"+name)] = vec
	}
	tr.vectors["fp-tiny"][hashOf("tiny")] = []float32{0.6, 0.8}
	if err := db.ApplyFiles(FileChanges{Put: recs, Bodies: tr.bodies}); err != nil {
		t.Fatal(err)
	}
	for fp, vecs := range tr.vectors {
		if err := db.PutVectors(fp, vecs); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SetGeneration(42); err != nil {
		t.Fatal(err)
	}
	return tr
}

// checkAnswers opens dir and checks that nothing it serves differs from tr:
// records, bodies and vectors are the originals or absent. It returns the
// recovery note. A damaged file must never make Open fail, panic or fault.
func checkAnswers(t *testing.T, dir string, tr truth) string {
	t.Helper()
	db, err := Open(dir, Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("Open after damage: %v", err)
	}
	defer db.Close()
	files, err := db.Files()
	if err != nil {
		t.Fatalf("Files: %v", err)
	}
	// A record whose body is damaged is parsed again before its body is
	// used: only the others must hold their bodies.
	missing, err := db.MissingBodies(files)
	if err != nil {
		t.Fatalf("MissingBodies: %v", err)
	}
	for _, r := range missing {
		delete(files, r.Path)
	}
	if db.Recovered != "" && len(files) > 0 {
		t.Fatalf("recovered (%s) but %d records survived", db.Recovered, len(files))
	}
	for p, got := range files {
		want := tr.records[p]
		if want == nil {
			t.Fatalf("record for unknown path %q", p)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("record %s differs:\n got %+v\nwant %+v", p, got, want)
		}
		body, ok, err := db.Body(got.Good.ContentHash)
		if err != nil || !ok || body != tr.bodies[got.Good.ContentHash] {
			t.Fatalf("body of kept record %s: ok=%v err=%v equal=%v", p, ok, err, body == tr.bodies[got.Good.ContentHash])
		}
	}
	for fp, want := range tr.vectors {
		var hashes []string
		for h := range want {
			hashes = append(hashes, h)
		}
		got, err := db.Vectors(fp, hashes)
		if err != nil {
			t.Fatalf("Vectors: %v", err)
		}
		for h, v := range got {
			if !reflect.DeepEqual(v, want[h]) {
				t.Fatalf("vector %s/%s differs", fp, h)
			}
		}
	}
	// bbolt's own check must agree with the verifier on a file it accepted.
	if err := db.raw().View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("verifier accepted a file bbolt's check rejects: %v", err)
	}
	// The accepted file takes writes and reopens clean.
	populate(t, db, 40)
	return db.Recovered
}

func TestVerifyLayoutMatchesBbolt(t *testing.T) {
	dir := t.TempDir()
	buildCache(t, dir, 300, 1)
	path := filepath.Join(dir, statedir.CacheFile)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var txid, size int64
	_ = db.View(func(tx *bolt.Tx) error { txid, size = int64(tx.ID()), tx.Size(); return nil })
	ps := db.Info().PageSize
	db.Close()

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := pickMeta(f, ps)
	if err != nil {
		t.Fatal(err)
	}
	if int64(m.txid) != txid || int64(m.pgid)*int64(ps) != size || int(m.pageSize) != ps {
		t.Errorf("decoded meta txid %d, %d pages of %d; bbolt says txid %d, %d bytes, pages of %d", m.txid, m.pgid, m.pageSize, txid, size, ps)
	}
	if err := verifyLocked(f); err != nil {
		t.Errorf("a healthy cache fails the check: %v", err)
	}
}

// damage is one way disks, crashes and people break a cache file.
type damage struct {
	name string
	do   func(t *testing.T, path string, r *rand.Rand)
}

func damages() []damage {
	return []damage{
		{"truncate", func(t *testing.T, path string, r *rand.Rand) {
			if err := os.Truncate(path, r.Int64N(fileSize(t, path))); err != nil {
				t.Fatal(err)
			}
		}},
		{"bit flips", func(t *testing.T, path string, r *rand.Rand) {
			data := read(t, path)
			for range 1 + r.IntN(16) {
				i := r.IntN(len(data))
				data[i] ^= 1 << r.IntN(8)
			}
			write(t, path, data)
		}},
		{"zeroed page", func(t *testing.T, path string, r *rand.Rand) {
			data := read(t, path)
			p := r.IntN(len(data) / 4096)
			clear(data[p*4096 : (p+1)*4096])
			write(t, path, data)
		}},
		{"garbage page", func(t *testing.T, path string, r *rand.Rand) {
			data := read(t, path)
			p := r.IntN(len(data) / 4096)
			fill(r, data[p*4096:(p+1)*4096])
			write(t, path, data)
		}},
		{"moved page", func(t *testing.T, path string, r *rand.Rand) {
			data := read(t, path)
			n := len(data) / 4096
			a, b := r.IntN(n), r.IntN(n)
			copy(data[a*4096:(a+1)*4096], data[b*4096:(b+1)*4096])
			write(t, path, data)
		}},
		{"meta damage", func(t *testing.T, path string, r *rand.Rand) {
			data := read(t, path)
			which := r.IntN(3) // meta 0, meta 1, both
			for p := range 2 {
				if which == 2 || which == p {
					fill(r, data[p*4096+16+r.IntN(48):p*4096+16+64])
				}
			}
			write(t, path, data)
		}},
		{"forged meta", func(t *testing.T, path string, r *rand.Rand) {
			// A meta page with a valid checksum over wrong fields: only the
			// structure check can catch it.
			data := read(t, path)
			p := 0
			if binary.NativeEndian.Uint64(data[4096+16+48:]) > binary.NativeEndian.Uint64(data[16+48:]) {
				p = 1
			}
			m := data[p*4096+16 : p*4096+16+64]
			field := []int{16, 32, 40}[r.IntN(3)] // root, freelist, pgid
			v := binary.NativeEndian.Uint64(m[field:])
			binary.NativeEndian.PutUint64(m[field:], v+uint64(1+r.IntN(3)))
			h := fnv.New64a()
			h.Write(m[:56])
			binary.NativeEndian.PutUint64(m[56:], h.Sum64())
			write(t, path, data)
		}},
		{"random bytes", func(t *testing.T, path string, r *rand.Rand) {
			data := make([]byte, r.IntN(64<<10))
			fill(r, data)
			write(t, path, data)
		}},
		{"empty", func(t *testing.T, path string, r *rand.Rand) { write(t, path, nil) }},
		{"garbage values", func(t *testing.T, path string, r *rand.Rand) {
			rewriteValues(t, path, func(key, v []byte) []byte {
				out := make([]byte, len(v))
				if r.IntN(2) == 0 {
					out = make([]byte, r.IntN(2*len(v)+8))
				}
				fill(r, out)
				return out
			})
		}},
		{"older format", func(t *testing.T, path string, r *rand.Rand) {
			// Values as an earlier version wrote them: unsealed.
			rewriteValues(t, path, func(key, v []byte) []byte {
				payload, _ := unseal(key, v)
				return payload
			})
		}},
	}
}

// TestCorruptionNeverServesWrongAnswers damages a populated cache in every
// way above, with several seeds, and checks that Open neither fails nor
// faults, and that whatever it keeps is exactly what was written.
func TestCorruptionNeverServesWrongAnswers(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	dir := t.TempDir()
	tr := buildCache(t, dir, 400, 9)
	pristine := read(t, filepath.Join(dir, statedir.CacheFile))
	for _, d := range damages() {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			recovered := 0
			for seed := range seeds {
				dir := t.TempDir()
				path := filepath.Join(dir, statedir.CacheFile)
				write(t, path, pristine)
				d.do(t, path, rand.New(rand.NewPCG(uint64(seed), 99)))
				if note := checkAnswers(t, dir, tr); note != "" {
					recovered++
				}
			}
			t.Logf("%s: %d of %d damaged files moved aside and rebuilt; the rest served only intact data", d.name, recovered, seeds)
		})
	}
}

// TestTruncationAtEveryPage truncates a cache at every page boundary and in
// the middle of every page below its high-water mark: the crash seen in the
// field (SIGBUS inside bbolt's check) came from such files. bbolt grows files
// ahead of use, so cutting past the high-water mark loses nothing and must
// keep every record.
func TestTruncationAtEveryPage(t *testing.T) {
	dir := t.TempDir()
	tr := buildCache(t, dir, 120, 3)
	path := filepath.Join(dir, statedir.CacheFile)
	pristine := read(t, path)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pickMeta(f, 4096)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	hwm := int(m.pgid) * 4096
	if hwm >= len(pristine) {
		t.Fatalf("high-water mark %d not below the file size %d; the test needs a grown file", hwm, len(pristine))
	}
	for page := 0; page*4096 <= hwm+8192; page++ {
		off := page*4096 + page%2*2048 // page boundaries and mid-pages, alternately
		dir := t.TempDir()
		write(t, filepath.Join(dir, statedir.CacheFile), pristine[:off])
		note := checkAnswers(t, dir, tr)
		switch {
		case off > 0 && off < hwm && note == "":
			t.Errorf("truncated at %d of %d bytes in use: not detected", off, hwm)
		case off >= hwm && note != "":
			t.Errorf("truncated at %d, past the %d bytes in use: moved aside (%s)", off, hwm, note)
		}
	}
}

func TestFolderInPlaceOfTheFileIsNotMovedAside(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, statedir.CacheFile, "x"), 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{LockTimeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("Open over a folder succeeded")
	}
	if _, serr := os.Stat(filepath.Join(dir, statedir.CacheFile, "x")); serr != nil {
		t.Errorf("the folder was touched: %v", serr)
	}
}

// fastTempDir is a temporary directory in memory when /dev/shm exists, where
// bbolt's fsyncs cost nothing, so fuzzing runs hundreds of opens a second.
func fastTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "store-fuzz-")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

func fill(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
}

// rewriteValues replaces every value in the files, bodies and vectors
// buckets (and the meta bucket's generation) through bbolt, leaving a
// structurally valid file.
func rewriteValues(t *testing.T, path string, f func(key, v []byte) []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o640, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		var walk func(b *bolt.Bucket) error
		walk = func(b *bolt.Bucket) error {
			type kv struct{ k, v []byte }
			var puts []kv
			err := b.ForEach(func(k, v []byte) error {
				if v == nil {
					return walk(b.Bucket(k))
				}
				if bytes.Equal(k, keySchemaVersion) {
					return nil
				}
				puts = append(puts, kv{bytes.Clone(k), f(k, v)})
				return nil
			})
			if err != nil {
				return err
			}
			for _, p := range puts {
				if err := b.Put(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		}
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordInvariants checks the records a cache keeps against the ones it
// must drop.
func TestRecordInvariants(t *testing.T) {
	h := hashOf("x")
	good := &Version{Name: "x", ContentHash: h}
	errs := []skill.Problem{{Severity: skill.SeverityError, Code: "yaml"}}
	cases := []struct {
		name string
		rec  FileRecord
		ok   bool
	}{
		{"parsed", FileRecord{ContentHash: h, Good: good}, true},
		{"never parsed, with errors", FileRecord{ContentHash: h, Problems: errs}, true},
		{"unreadable file", FileRecord{Problems: errs}, true},
		{"last good kept", FileRecord{ContentHash: hashOf("y"), Problems: errs, Good: good}, true},
		{"no good version, no error", FileRecord{ContentHash: h}, false},
		{"stale good version, no error", FileRecord{ContentHash: hashOf("y"), Good: good}, false},
		{"bad hash", FileRecord{ContentHash: "abc", Good: good}, false},
		{"uppercase hash", FileRecord{ContentHash: strings.ToUpper(h), Problems: errs}, false},
		{"not hex, of the right length", FileRecord{ContentHash: strings.Repeat("g", 64), Problems: errs}, false},
		{"unreadable file, good version with a bad hash", FileRecord{Problems: errs, Good: &Version{Name: "x", ContentHash: h[:63] + "G"}}, false},
		{"nameless good version", FileRecord{ContentHash: h, Good: &Version{ContentHash: h}}, false},
	}
	for _, c := range cases {
		if err := c.rec.check(); (err == nil) != c.ok {
			t.Errorf("%s: check() = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func TestSealRejectsOtherKeysAndFormats(t *testing.T) {
	v := seal([]byte("k"), []byte(`{"a":1}`))
	if p, ok := unseal([]byte("k"), v); !ok || string(p) != `{"a":1}` {
		t.Fatalf("unseal(seal) = %q, %v", p, ok)
	}
	if _, ok := unseal([]byte("other"), v); ok {
		t.Error("a value moved to another key passed its check")
	}
	if _, ok := unseal([]byte("k"), []byte(`{"a":1}`)); ok {
		t.Error("an unsealed (older format) value passed")
	}
	v[len(v)-1] ^= 1
	if _, ok := unseal([]byte("k"), v); ok {
		t.Error("a flipped bit passed")
	}
}

// FuzzOpen opens arbitrary bytes as a cache file: Open must never fail,
// panic or fault, and a file it keeps must be readable and writable.
func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	db, err := Open(dir, Options{LockTimeout: time.Second})
	if err != nil {
		f.Fatal(err)
	}
	populate(f, db, 5)
	db.Close()
	f.Add(read(f, filepath.Join(dir, statedir.CacheFile)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := fastTempDir(t)
		write(t, filepath.Join(dir, statedir.CacheFile), data)
		db, err := Open(dir, Options{LockTimeout: time.Second})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer db.Close()
		files, err := db.Files()
		if err != nil {
			t.Fatalf("Files: %v", err)
		}
		for _, r := range files {
			if r.Good != nil {
				_, _, _ = db.Body(r.Good.ContentHash)
			}
		}
		if _, err := db.Generation(); err != nil {
			t.Fatalf("Generation: %v", err)
		}
		populate(t, db, 3)
	})
}

// TestDamageBboltWorksAroundIsReported checks that damage bbolt survives by
// itself (one bad meta page, an empty file) is still logged.
func TestDamageBboltWorksAroundIsReported(t *testing.T) {
	for name, breakIt := range map[string]func(path string){
		"one meta page": func(path string) {
			data := read(t, path)
			data[4096+16+8] ^= 0xff // page size field of meta page 1
			write(t, path, data)
		},
		"empty file": func(path string) { write(t, path, nil) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tr := buildCache(t, dir, 20, 5)
			breakIt(filepath.Join(dir, statedir.CacheFile))
			var logs strings.Builder
			db, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			if !strings.Contains(logs.String(), "cache file damaged") {
				t.Errorf("no warning logged:\n%s", logs.String())
			}
			checkAnswers(t, dir, tr)
		})
	}
}

// TestMappedAndReadWalksAgree checks the two ways verifyFile reads pages
// (the mapped file, and ReadAt where mapping fails) on every damage above
// and on truncations: they must pass and fail the same files, with the same
// message.
func TestMappedAndReadWalksAgree(t *testing.T) {
	dir := t.TempDir()
	buildCache(t, dir, 200, 5)
	pristine := read(t, filepath.Join(dir, statedir.CacheFile))
	check := func(t *testing.T, path string) {
		t.Helper()
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		mapped := errText(verifyLocked(f))
		readAt := errText(verifyFile(f, nil, fi.Size()))
		if mapped != readAt {
			t.Errorf("mapped walk: %q; ReadAt walk: %q", mapped, readAt)
		}
	}
	for _, d := range damages() {
		for seed := range 3 {
			path := filepath.Join(t.TempDir(), statedir.CacheFile)
			write(t, path, pristine)
			d.do(t, path, rand.New(rand.NewPCG(uint64(seed), 7)))
			check(t, path)
		}
	}
	for off := 0; off < len(pristine); off += 4096 * 3 / 2 {
		path := filepath.Join(t.TempDir(), statedir.CacheFile)
		write(t, path, pristine[:off])
		check(t, path)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestDecodeRecordsInBatches: records decoded in batches on several
// goroutines are each kept exactly once, and every damaged one (a flipped
// byte, a record that breaks the invariants) is counted and left out,
// wherever it falls among the batches.
func TestDecodeRecordsInBatches(t *testing.T) {
	n := 3*recordBatch + 17
	type kv struct{ k, v []byte }
	var raw []kv
	want := map[string]bool{}
	bad := 0
	for i := range n {
		key := fmt.Sprintf("/skills/s%05d/SKILL.md", i)
		h := hashOf(key)
		rec := &FileRecord{ContentHash: h, Good: &Version{Name: fmt.Sprintf("s%05d", i), ContentHash: h}}
		switch {
		case i%499 == 7:
			rec.Good.Name = "" // breaks the invariants
			bad++
		case i%613 == 11:
			bad++ // damaged below
		default:
			want[key] = true
		}
		v := seal([]byte(key), encodeRecord(rec))
		if i%613 == 11 && i%499 != 7 {
			v[len(v)/2] ^= 0x20
		}
		raw = append(raw, kv{[]byte(key), v})
	}
	recs, dropped, err := decodeRecords(func(each func(k, v []byte) error) error {
		for _, p := range raw {
			if err := each(p.k, p.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if dropped != bad {
		t.Errorf("dropped %d records, want %d", dropped, bad)
	}
	got := map[string]bool{}
	for _, r := range recs {
		if got[r.Path] {
			t.Errorf("%s decoded twice", r.Path)
		}
		got[r.Path] = true
		if !want[r.Path] {
			t.Errorf("%s kept, but it is damaged", r.Path)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d records kept, want %d", len(got), len(want))
	}
}
