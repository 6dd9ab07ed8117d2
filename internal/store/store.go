// Package store is the router's bbolt cache. Everything in it is derived from
// the skill folders and the embedding model, so a corrupt or incompatible file
// is moved aside and rebuilt, never trusted and never fatal.
//
// Bucket tree (schema version statedir.CacheSchema; the state folder's
// other files, and the changelog of every format: internal/statedir):
//
//	meta/
//	    schema_version     -> decimal string
//	    generation         -> uint64, big-endian: the last published index generation
//	    model_fingerprint  -> hex sha256 of the embedding model in use
//	    model_name         -> the model's display name
//	    records_version    -> "<record format>.<parser version>" of files/ and bodies/
//	    written_by         -> the release that last opened the file (Options.Release), named when another release meets it
//	files/
//	    <absolute SKILL.md path> -> sealed FileRecord (stat, hashes, parsed metadata, problems; record.go)
//	bodies/
//	    <content sha256>   -> sealed SKILL.md body text of a good version
//	vectors/
//	    <model fingerprint>/         (one nested bucket per model)
//	        <text sha256>  -> sealed little-endian float32 vector
//
// A sealed value starts with a format byte and a CRC-32C of its key and
// payload (seal.go); one that fails the check is treated as absent. Before
// bbolt maps the file, its structure is checked with plain reads
// (verify.go), so a damaged file is moved aside instead of faulting; a file
// unchanged since the last Close is not checked again (clean.go).
//
// All buckets are created when the file is opened, in one transaction.
// Transactions stay short: callers compute (parse, embed) outside them and
// write each batch in one Update.
package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/statedir"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket and key names.
var (
	bucketMeta    = []byte("meta")
	bucketFiles   = []byte("files")
	bucketBodies  = []byte("bodies")
	bucketVectors = []byte("vectors")

	keySchemaVersion    = []byte("schema_version")
	keyGeneration       = []byte("generation")
	keyModelFingerprint = []byte("model_fingerprint")
	keyModelName        = []byte("model_name")
	keyRecordsVersion   = []byte("records_version")
	keyWrittenBy        = []byte("written_by")

	allBuckets = [][]byte{bucketMeta, bucketFiles, bucketBodies, bucketVectors}
)

// ErrLocked is returned by Open when another process holds the state
// directory.
var ErrLocked = errors.New("state directory is in use")

// Options configure Open.
type Options struct {
	// LockTimeout is how long Open waits for another holder to let go.
	LockTimeout time.Duration
	// Holder describes this process (pid, address) for ErrLocked messages.
	Holder string
	Logger *slog.Logger
	// ParserVersion identifies the parser whose output the file records
	// hold (skillmd.Version). Records written under another version, or
	// another record format, are dropped at open, so every skill is parsed
	// again.
	ParserVersion int
	// Release names the router's build (buildinfo): it is recorded in the
	// file, so that a router of another release that cannot use the file
	// says which release wrote it. Empty records nothing.
	Release string
}

// DB is an open cache file. It is safe for concurrent use.
type DB struct {
	h      atomic.Pointer[handle] // the file in use; replaced when found damaged (guard.go)
	walked bool                   // Open checked the file's structure (it was not closed cleanly as it is)
	opts   Options
	// Recovered says why the previous file was moved aside at open, or "".
	Recovered string
	// Reparse says why the file records were dropped at open (another
	// parser or record format), or "".
	Reparse string
	log     *slog.Logger

	writeMu      sync.Mutex // serialises write transactions (update)
	replaceMu    sync.Mutex // serialises replacements of a damaged file
	replaced     chan struct{}
	replacements atomic.Uint64
	stuck        atomic.Value // string: why a damaged file could not be replaced

	mu sync.Mutex // guards the current handle's retiring
	// vectorsMu orders the writes to the vectors bucket with the count of
	// a model's vectors (handle.vectorCount).
	vectorsMu sync.Mutex
}

// Open opens (or creates) the cache in dir. A file that fails its integrity
// check, panics bbolt, or has another schema version is renamed to
// cache.db.<reason>-<unix time> and replaced by an empty one; DB.Recovered
// says why. When another process holds the file, Open fails after
// opts.LockTimeout with an error wrapping ErrLocked that names the holder.
func Open(dir string, opts Options) (*DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, statedir.CacheFile)
	note := damageNote(path)
	db, f, vectors, walked, reason, err := openChecked(path, opts.LockTimeout)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, lockedError(dir)
	}
	recovered := ""
	if err != nil && reason != "" {
		aside := fmt.Sprintf("%s.%s-%d", path, reason, time.Now().Unix())
		log.Warn("cache file unusable; moving it aside and rebuilding from the skill folders",
			"path", path, "moved_to", aside, "reason", reason, "err", err)
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("move unusable cache %s aside: %w (after: %v)", path, rerr, err)
		}
		removeOldAside(dir, filepath.Base(aside), log)
		recovered = fmt.Sprintf("%s: %v (moved to %s)", reason, err, filepath.Base(aside))
		db, f, vectors, walked, _, err = openChecked(path, opts.LockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open cache %s: %w", path, err)
	}
	if note != "" && recovered == "" {
		log.Warn("cache file damaged; bbolt works around it", "path", path, "damage", note)
	}
	if !walked {
		log.Debug("cache file unchanged since it was closed cleanly; its structure was not checked again", "path", path)
	}
	if vectors == nil {
		vectors = map[string]int{}
	}
	d := &DB{walked: walked, opts: opts, Recovered: recovered, log: log, replaced: make(chan struct{}, 1)}
	d.h.Store(newHandle(db, f, path, dir, vectors))
	if d.Reparse, err = d.checkRecordsVersion(opts.ParserVersion, opts.Release); err != nil {
		closeQuietly(db)
		return nil, fmt.Errorf("open cache %s: %w", path, err)
	}
	if d.Reparse != "" {
		log.Info("cached skill records are from another parser or format; every skill will be parsed again", "reason", d.Reparse)
	}
	if opts.Holder != "" {
		// Best effort: the lock is what matters, the file only names it.
		_ = os.WriteFile(filepath.Join(dir, statedir.HolderFile), []byte(opts.Holder+"\n"), 0o640)
	}
	return d, nil
}

// openChecked opens path and verifies it. reason is non-empty when the error
// means the file is unusable (and may be moved aside), empty when the error is
// about the environment (lock, permissions, space, a folder in the way).
//
// The file is locked and checked by verifyFile before bbolt maps it, so a
// truncated or malformed file is an error rather than a fault, unless the
// last Close left it as it is (takeClean; walked is then false, and vectors
// holds the vector counts the note lists); bbolt gets the same locked file,
// which openChecked also returns.
func openChecked(path string, timeout time.Duration) (db *bolt.DB, f *os.File, vectors map[string]int, walked bool, reason string, err error) {
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				closeQuietly(db)
				db = nil
			} else if f != nil {
				f.Close()
			}
			f, reason, err = nil, "corrupt", fmt.Errorf("bbolt panicked: %v", r)
		}
	}()
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)

	if f, err = lockFile(path, timeout); err != nil {
		return nil, nil, nil, false, "", err
	}
	vectors, clean := takeClean(filepath.Dir(path), f)
	if walked = !clean; walked {
		if err := verifyLocked(f); err != nil {
			f.Close()
			if environmentError(err) {
				return nil, nil, nil, false, "", err
			}
			return nil, nil, nil, false, "corrupt", err
		}
	}
	db, err = bolt.Open(path, 0o640, &bolt.Options{Timeout: timeout, OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil }})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) || environmentError(err) {
			return nil, nil, nil, false, "", err
		}
		return nil, nil, nil, false, "corrupt", err
	}
	if reason, err := ensureSchema(db); err != nil {
		closeQuietly(db)
		return nil, nil, nil, false, reason, err
	}
	return db, f, vectors, walked, "", nil
}

func closeQuietly(db *bolt.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// ensureSchema creates the buckets of a new file, or checks the version of an
// existing one.
func ensureSchema(db *bolt.DB) (reason string, err error) {
	err = db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta != nil {
			// A file of another schema is moved aside and rebuilt: the
			// cache is derived data, so rebuilding is always safe and
			// migrations are not worth their risk.
			v := string(meta.Get(keySchemaVersion))
			if v != strconv.Itoa(statedir.CacheSchema) {
				reason = "incompatible"
				want := strconv.Itoa(statedir.CacheSchema)
				return fmt.Errorf("cache schema version %q, written by %s; this router writes %s", v, writtenBy(meta, v, want), want)
			}
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				reason = "corrupt"
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keySchemaVersion, []byte(strconv.Itoa(statedir.CacheSchema)))
	})
	return reason, err
}

func lockedError(dir string) error {
	holder, err := os.ReadFile(filepath.Join(dir, statedir.HolderFile))
	who := "another process"
	if err == nil && len(strings.TrimSpace(string(holder))) > 0 {
		who = strings.TrimSpace(string(holder))
	}
	return fmt.Errorf("%w: %s is held by %s; stop that router or give this one another --state-dir", ErrLocked, dir, who)
}

// Path returns the cache file's path.
func (d *DB) Path() string { return d.h.Load().path }

// Close closes the file and, when its structure still passes the check
// Open makes, notes that it closed it cleanly (clean.go); it removes the
// holder note (and a temporary directory).
func (d *DB) Close() error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	d.replaceMu.Lock()
	defer d.replaceMu.Unlock()
	h := d.h.Load()
	if !h.temp {
		_ = os.Remove(filepath.Join(h.dir, statedir.HolderFile))
	}
	if h.broken.Load() {
		// Only when no new file could be opened: leave it to the next
		// start, which checks it.
		return fmt.Errorf("close cache %s: %w", h.path, ErrDamaged)
	}
	noted := false
	if !h.temp {
		d.vectorsMu.Lock()
		err := noteClean(h.dir, h.file, h.vectorCount)
		d.vectorsMu.Unlock()
		if noted = err == nil; !noted {
			d.logger().Warn("cache file not noted as closed cleanly; the next start checks it", "path", h.path, "err", err)
		}
	}
	err := guard(h.bolt.Close)
	if err != nil && noted {
		_ = os.Remove(filepath.Join(h.dir, statedir.CleanNote))
	}
	if h.temp {
		_ = os.RemoveAll(h.dir)
	}
	return err
}

// Generation returns the last stored index generation (0 for a new cache).
func (d *DB) Generation() (uint64, error) {
	var g uint64
	err := d.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyGeneration); len(v) == 8 {
			g = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return g, err
}

// SetGeneration stores the index generation.
func (d *DB) SetGeneration(g uint64) error {
	return d.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyGeneration, binary.BigEndian.AppendUint64(nil, g))
	})
}

// Model returns the fingerprint and name of the model recorded in the cache.
func (d *DB) Model() (fingerprint, name string, err error) {
	err = d.view(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		fingerprint = string(m.Get(keyModelFingerprint))
		name = string(m.Get(keyModelName))
		return nil
	})
	return fingerprint, name, err
}

// SetModel records the model in use. Vectors of other models than it and
// keep (the fast model's, which the router serves while the model's vectors
// are computed) are deleted in the same transaction, so the cache does not
// grow with every model tried.
func (d *DB) SetModel(fingerprint, name string, keep ...string) error {
	kept := func(fp string) bool { return fp == fingerprint || slices.Contains(keep, fp) }
	d.vectorsMu.Lock()
	defer d.vectorsMu.Unlock()
	h := d.h.Load()
	err := d.update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if err := m.Put(keyModelFingerprint, []byte(fingerprint)); err != nil {
			return err
		}
		if err := m.Put(keyModelName, []byte(name)); err != nil {
			return err
		}
		_, err := deleteUnless(tx.Bucket(bucketVectors), func(k []byte) bool { return kept(string(k)) })
		return err
	})
	if err == nil {
		maps.DeleteFunc(h.vectorCount, func(fp string, _ int) bool { return !kept(fp) })
	}
	return err
}
