package store

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// checkRecordsVersion drops the file records and bodies when they were written
// by another record format or parser version than want, and records want and
// the release. It returns why it dropped them, or "".
func (d *DB) checkRecordsVersion(parserVersion int, release string) (reason string, err error) {
	err = guard(func() error {
		reason, err = checkRecordsVersion(d.h.Load().bolt, parserVersion, release)
		return err
	})
	return reason, err
}

func checkRecordsVersion(db *bolt.DB, parserVersion int, release string) (reason string, err error) {
	want := fmt.Sprintf("%d.%d", statedir.RecordFormat, parserVersion)
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		got := string(meta.Get(keyRecordsVersion))
		if got == want {
			return putRelease(meta, release)
		}
		if tx.Bucket(bucketFiles).Stats().KeyN > 0 {
			reason = fmt.Sprintf("records version %q, written by %s; this router writes %q", got, writtenBy(meta, got, want), want)
		}
		for _, name := range [][]byte{bucketFiles, bucketBodies} {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("drop bucket %s: %w", name, err)
			}
			if _, err := tx.CreateBucket(name); err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		if err := meta.Put(keyRecordsVersion, []byte(want)); err != nil {
			return err
		}
		return putRelease(meta, release)
	})
	return reason, err
}

// writtenBy says which release wrote a file whose format mark is got where
// this router writes want (statedir.WrittenBy), with the release's name when
// the file records it: "a newer release (v1.4.0)".
func writtenBy(meta *bolt.Bucket, got, want string) string {
	by := statedir.WrittenBy(got, want)
	r := meta.Get(keyWrittenBy)
	if len(r) == 0 || len(r) > 100 || slices.ContainsFunc(r, func(c byte) bool { return c <= ' ' || c > '~' }) {
		return by // none recorded, or not a name to print
	}
	return by + " (" + string(r) + ")"
}

// putRelease records release as the file's writer, unless it is empty or
// already recorded.
func putRelease(meta *bolt.Bucket, release string) error {
	if release == "" || string(meta.Get(keyWrittenBy)) == release {
		return nil
	}
	return meta.Put(keyWrittenBy, []byte(release))
}

// FileRecord is what the cache knows about one SKILL.md. It describes the file
// as last seen on disk (stat, hash, problems) and, separately, the last version
// that parsed: a bad edit keeps serving that good version.
type FileRecord struct {
	Path        string
	ModTimeNano int64
	Size        int64
	ContentHash string
	Problems    []skill.Problem
	// Good is the last version that parsed, nil when none ever did.
	Good *Version
}

// Version is one successfully parsed SKILL.md. Its body is stored separately,
// under ContentHash in the bodies bucket.
type Version struct {
	Name string
	// FoldedName is Name after skillmd.FoldName, the key a skill is
	// looked up by. It is derived, not stored: set where a version is
	// parsed, and when one is read from the cache.
	FoldedName      string
	Frontmatter     skill.Frontmatter
	BodyLine        int
	BodyTokens      int
	ContentHash     string
	FrontmatterHash string
	Size            int64
	ModTimeNano     int64
	// Problems are the warnings the version was loaded with.
	Problems []skill.Problem
}

// Files returns every file record, keyed by path. A record that fails its
// checksum, does not decode or breaks the record invariants is left out
// (and logged): its file is then parsed again, so damage costs a parse,
// never a wrong answer. Files does not read the bodies, which costs more
// than the records: MissingBodies finds the records whose body is missing
// or damaged, which must be parsed again before their bodies are used.
func (d *DB) Files() (map[string]*FileRecord, error) {
	var recs []*FileRecord // the map is made at their number, not grown
	dropped := 0
	err := d.view(func(tx *bolt.Tx) (err error) {
		recs, dropped, err = decodeRecords(tx.Bucket(bucketFiles).ForEach)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read file records: %w", err)
	}
	out := make(map[string]*FileRecord, len(recs))
	for _, r := range recs {
		out[r.Path] = r
	}
	if dropped > 0 {
		d.logger().Warn("cache records unreadable or inconsistent; their files will be parsed again",
			"records", dropped, "kept", len(out))
	}
	return out, nil
}

// recordBatch is how many records decodeRecords hands a decoder at a time.
const recordBatch = 1024

// decodeRecords decodes the file records that walk calls its function
// with (each key and value valid until walk returns), on GOMAXPROCS
// goroutines while walk goes on: at a start, reading every record is on
// the way to the first generation. It returns, in no order, those that
// pass their checksum, decode and keep the record invariants, how many
// did not, and walk's error.
func decodeRecords(walk func(each func(k, v []byte) error) error) (recs []*FileRecord, dropped int, err error) {
	type keyValue struct{ k, v []byte }
	batches := make(chan []keyValue, runtime.GOMAXPROCS(0))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var damage error // a fault reading the mapped values (guard)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var mine []*FileRecord
			bad := 0
			gerr := guard(func() error {
				for batch := range batches {
					for _, kv := range batch {
						payload, ok := unseal(kv.k, kv.v)
						if !ok {
							bad++
							continue
						}
						r, err := decodeRecord(payload)
						if err != nil || r.check() != nil {
							bad++
							continue
						}
						r.Path = string(kv.k)
						mine = append(mine, r)
					}
				}
				return nil
			})
			for range batches {
				// After a fault: drain, so that walk is not blocked.
			}
			mu.Lock()
			recs, dropped = append(recs, mine...), dropped+bad
			damage = cmp.Or(damage, gerr)
			mu.Unlock()
		})
	}
	err = func() error {
		defer close(batches) // also when walk faults: the decoders end
		batch := make([]keyValue, 0, recordBatch)
		err := walk(func(k, v []byte) error {
			if batch = append(batch, keyValue{k, v}); len(batch) == recordBatch {
				batches <- batch
				batch = make([]keyValue, 0, recordBatch)
			}
			return nil
		})
		if len(batch) > 0 {
			batches <- batch
		}
		return err
	}()
	wg.Wait()
	if damage != nil {
		// Panicking again makes the guard of the transaction see it.
		panic(damage)
	}
	return recs, dropped, err
}

// MissingBodies returns the records of recs whose good version's body is
// missing from the cache or fails its checksum, in path order. It walks the
// bodies in key order beside the records sorted by content hash: one pass
// along the leaf pages costs about half as much as a lookup per record.
func (d *DB) MissingBodies(recs map[string]*FileRecord) ([]*FileRecord, error) {
	want := make([]*FileRecord, 0, len(recs))
	for _, r := range recs {
		if r.Good != nil {
			want = append(want, r)
		}
	}
	slices.SortFunc(want, func(a, b *FileRecord) int { return strings.Compare(a.Good.ContentHash, b.Good.ContentHash) })
	var missing []*FileRecord
	err := d.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketBodies).Cursor()
		k, v := c.First()
		for i := 0; i < len(want); {
			hash := want[i].Good.ContentHash
			for k != nil && string(k) < hash {
				k, v = c.Next()
			}
			ok := k != nil && string(k) == hash
			if ok {
				_, ok = unseal(k, v)
			}
			for ; i < len(want) && want[i].Good.ContentHash == hash; i++ {
				if !ok {
					missing = append(missing, want[i])
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read bodies: %w", err)
	}
	slices.SortFunc(missing, func(a, b *FileRecord) int { return strings.Compare(a.Path, b.Path) })
	return missing, nil
}

// check tests the invariants the indexer relies on: hashes are sha256 hex,
// a good version has a name, and a file without errors has a good version of
// its current content.
func (r *FileRecord) check() error {
	if r.ContentHash != "" && !isSHA256Hex(r.ContentHash) {
		return errors.New("content hash is not sha256 hex")
	}
	if r.Good == nil {
		if !skill.HasErrors(r.Problems) {
			return errors.New("no good version, and no error says why")
		}
		return nil
	}
	if r.Good.Name == "" || (r.Good.ContentHash != r.ContentHash || r.ContentHash == "") && !isSHA256Hex(r.Good.ContentHash) {
		return errors.New("good version without a name or content hash")
	}
	if !skill.HasErrors(r.Problems) && r.Good.ContentHash != r.ContentHash {
		return errors.New("good version is not the current content, and no error says why")
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range 64 {
		if !lowerHex[s[i]] {
			return false
		}
	}
	return true
}

// lowerHex holds the lowercase hexadecimal digits.
var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// FileChanges is one batch of cache updates, applied in one transaction.
type FileChanges struct {
	Put    []*FileRecord
	Delete []string
	// Bodies maps content hashes of good versions to their body text.
	Bodies map[string]string
	// KeepBodies, when non-nil, lists every body hash still referenced.
	// A body missing from it is deleted by the next ApplyFiles that also
	// leaves it out, not by this one: the generation being served while the
	// next one is built may still load it.
	KeepBodies map[string]bool
}

// ApplyFiles writes a batch of record changes and bodies in one transaction.
func (d *DB) ApplyFiles(c FileChanges) error {
	encoded := make([][]byte, len(c.Put))
	for i, r := range c.Put {
		encoded[i] = seal([]byte(r.Path), encodeRecord(r))
	}
	h := d.h.Load()
	d.mu.Lock()
	retiring := h.retiring
	d.mu.Unlock()
	var retired map[string]bool // bodies left unreferenced by this batch
	err := d.update(func(tx *bolt.Tx) error {
		files, bodies := tx.Bucket(bucketFiles), tx.Bucket(bucketBodies)
		for i, r := range c.Put {
			if err := files.Put([]byte(r.Path), encoded[i]); err != nil {
				return fmt.Errorf("store record %s: %w", r.Path, err)
			}
		}
		for _, p := range c.Delete {
			if err := files.Delete([]byte(p)); err != nil {
				return fmt.Errorf("delete record %s: %w", p, err)
			}
		}
		for h, body := range c.Bodies {
			if err := bodies.Put([]byte(h), seal([]byte(h), []byte(body))); err != nil {
				return fmt.Errorf("store body %s: %w", h, err)
			}
		}
		if c.KeepBodies == nil {
			return nil
		}
		retired = make(map[string]bool)
		var stale [][]byte
		err := bodies.ForEach(func(k, _ []byte) error {
			switch {
			case c.KeepBodies[string(k)]:
			case retiring[string(k)]:
				stale = append(stale, append([]byte(nil), k...))
			default:
				retired[string(k)] = true
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := bodies.Delete(k); err != nil {
				return fmt.Errorf("delete body %s: %w", k, err)
			}
		}
		return nil
	})
	if err == nil && retired != nil {
		d.mu.Lock()
		h.retiring = retired
		d.mu.Unlock()
	}
	return err
}

// Body returns the body stored under a content hash; ok is false when none
// is, or when the stored one fails its checksum.
func (d *DB) Body(contentHash string) (body string, ok bool, err error) {
	err = d.view(func(tx *bolt.Tx) error {
		key := []byte(contentHash)
		if payload, sealed := unseal(key, tx.Bucket(bucketBodies).Get(key)); sealed {
			body, ok = string(payload), true // string() copies out of the mmap
		}
		return nil
	})
	return body, ok, err
}

// Bodies calls fn with the body of each content hash, in one read
// transaction. body is only valid during the call: copy what is kept. Hashes
// without a body, or whose body fails its checksum, are skipped.
func (d *DB) Bodies(contentHashes []string, fn func(hash string, body []byte)) error {
	return d.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBodies)
		for _, h := range contentHashes {
			if payload, sealed := unseal([]byte(h), b.Get([]byte(h))); sealed {
				fn(h, payload)
			}
		}
		return nil
	})
}

// deleteUnless deletes every key of b for which keep is false, and returns how
// many it deleted. Keys are collected first: bbolt forbids deleting while
// iterating.
func deleteUnless(b *bolt.Bucket, keep func(k []byte) bool) (int, error) {
	var stale [][]byte
	err := b.ForEach(func(k, _ []byte) error {
		if !keep(k) {
			stale = append(stale, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range stale {
		if b.Bucket(k) != nil {
			err = b.DeleteBucket(k)
		} else {
			err = b.Delete(k)
		}
		if err != nil {
			return 0, fmt.Errorf("delete %s: %w", k, err)
		}
	}
	return len(stale), nil
}
