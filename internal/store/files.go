package store

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/skill"
)

// FileRecord is what the cache knows about one SKILL.md. It describes the file
// as last seen on disk (stat, hash, problems) and, separately, the last version
// that parsed: a bad edit keeps serving that good version.
type FileRecord struct {
	Path        string          `json:"path"`
	ModTimeNano int64           `json:"mtime_ns"`
	Size        int64           `json:"size"`
	ContentHash string          `json:"sha256"`
	Problems    []skill.Problem `json:"problems,omitempty"`
	// Good is the last version that parsed, nil when none ever did.
	Good *Version `json:"good,omitempty"`
}

// Version is one successfully parsed SKILL.md. Its body is stored separately,
// under ContentHash in the bodies bucket.
type Version struct {
	Name            string            `json:"name"`
	Frontmatter     skill.Frontmatter `json:"frontmatter"`
	BodyLine        int               `json:"body_line"`
	BodyTokens      int               `json:"body_tokens"`
	ContentHash     string            `json:"sha256"`
	FrontmatterHash string            `json:"frontmatter_sha256"`
	Size            int64             `json:"size"`
	ModTimeNano     int64             `json:"mtime_ns"`
	// Problems are the warnings the version was loaded with.
	Problems []skill.Problem `json:"problems,omitempty"`
}

// Files returns every file record, keyed by path. A record that fails its
// checksum, does not decode, breaks the record invariants, or whose good
// version's body is missing or damaged is left out (and logged): its file is
// then parsed again, so damage costs a parse, never a wrong answer.
func (d *DB) Files() (map[string]*FileRecord, error) {
	out := make(map[string]*FileRecord)
	dropped := 0
	err := d.bolt.View(func(tx *bolt.Tx) error {
		bodies := tx.Bucket(bucketBodies)
		return tx.Bucket(bucketFiles).ForEach(func(k, v []byte) error {
			var r FileRecord
			payload, ok := unseal(k, v)
			if !ok || json.Unmarshal(payload, &r) != nil || r.check() != nil {
				dropped++
				return nil
			}
			if r.Good != nil {
				hash := []byte(r.Good.ContentHash)
				if _, ok := unseal(hash, bodies.Get(hash)); !ok {
					dropped++
					return nil
				}
			}
			r.Path = string(k)
			out[r.Path] = &r
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read file records: %w", err)
	}
	if dropped > 0 {
		d.logger().Warn("cache records unreadable or inconsistent; their files will be parsed again",
			"records", dropped, "kept", len(out))
	}
	return out, nil
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
	if r.Good.Name == "" || !isSHA256Hex(r.Good.ContentHash) {
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
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

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
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode record %s: %w", r.Path, err)
		}
		encoded[i] = seal([]byte(r.Path), b)
	}
	d.mu.Lock()
	retiring := d.retiring
	d.mu.Unlock()
	var retired map[string]bool // bodies left unreferenced by this batch
	err := d.bolt.Update(func(tx *bolt.Tx) error {
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
		d.retiring = retired
		d.mu.Unlock()
	}
	return err
}

// Body returns the body stored under a content hash; ok is false when none
// is, or when the stored one fails its checksum.
func (d *DB) Body(contentHash string) (body string, ok bool, err error) {
	err = d.bolt.View(func(tx *bolt.Tx) error {
		key := []byte(contentHash)
		if payload, sealed := unseal(key, tx.Bucket(bucketBodies).Get(key)); sealed {
			body, ok = string(payload), true // string() copies out of the mmap
		}
		return nil
	})
	return body, ok, err
}
