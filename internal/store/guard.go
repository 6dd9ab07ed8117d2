package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsag/router/internal/statedir"
	bolt "go.etcd.io/bbolt"
)

// The cache file can be damaged while the router uses it: cut short (a
// truncate, a restore gone wrong), overwritten, or rotting under an
// unchanged inode. bbolt reads it through a memory mapping and trusts it,
// so such damage shows up as a fault (SIGBUS past the file's new end, a
// wild read) or a panic on a malformed page, in whichever call reads it.
//
// Every transaction therefore runs guarded (view, update): a fault or panic
// inside it is recovered and returned as an error wrapping ErrDamaged, and
// the file is replaced at once: moved aside as cache.db.corrupt-<time> and
// a new, empty cache opened in its place (or, when the state directory
// cannot hold one, in a temporary directory; Degraded then says so).
// Callers see that one call fail; the next ones use the new file, which
// holds nothing, so every skill is parsed and embedded again (Replaced
// tells the router to build at once). A handle found damaged is never used
// again: a fault inside bbolt can leave one of its locks held (the meta
// pages' lock when a transaction faults as it starts, the writer's lock
// when a rollback faults), so later calls to it would wait forever. Calls
// already waiting on it are let go (txCall); their goroutines, blocked in
// bbolt, stay until the process exits, at most one per call in flight when
// the damage was found.

// ErrDamaged is wrapped by the errors of calls that found the cache file
// damaged while in use. The file has been replaced by an empty cache when
// the call returns: retrying reads nothing stale.
var ErrDamaged = errors.New("cache file damaged while in use")

// handle is one open cache file.
type handle struct {
	bolt   *bolt.DB
	file   *os.File // the locked file bbolt uses
	path   string
	dir    string
	temp   bool   // dir is a temporary directory, removed at Close
	reason string // why the cache is in a temporary directory, or ""
	// broken is set, and brokenCh closed, once a transaction found the
	// file damaged.
	broken   atomic.Bool
	brokenCh chan struct{}

	// vectorCount holds the count of each model's vectors counted so far
	// (VectorCount), kept up to date by every write, so that Status does
	// not walk the bucket (tens of milliseconds at 100,000 vectors,
	// seconds when its pages are not in memory). DB.vectorsMu guards it.
	vectorCount map[string]int
	// retiring are bodies the last ApplyFiles found unreferenced; the
	// next one deletes those still unreferenced. DB.mu guards it.
	retiring map[string]bool
}

func newHandle(db *bolt.DB, f *os.File, path, dir string, vectorCount map[string]int) *handle {
	return &handle{bolt: db, file: f, path: path, dir: dir, vectorCount: vectorCount, brokenCh: make(chan struct{})}
}

// view runs fn in a read transaction of the current file, guarded.
func (d *DB) view(fn func(*bolt.Tx) error) error {
	return d.run(false, fn)
}

// update runs fn in a write transaction of the current file, guarded.
// Writes are serialised here, so that at most one of them can be inside
// bbolt when a file turns out damaged.
func (d *DB) update(fn func(*bolt.Tx) error) error {
	d.writeMu.Lock()
	defer d.writeMu.Unlock()
	return d.run(true, fn)
}

func (d *DB) run(write bool, fn func(*bolt.Tx) error) error {
	h := d.h.Load()
	if h.broken.Load() {
		// Only while replace could not open a new file.
		return fmt.Errorf("%w: %s is being replaced", ErrDamaged, h.path)
	}
	c := &txCall{done: make(chan struct{})}
	go c.run(h, write, fn)
	var err error
	select {
	case <-c.done:
		err = c.err
	case <-h.brokenCh:
		err = c.abandon(h)
	}
	if errors.Is(err, ErrDamaged) {
		d.replace(h, err)
	}
	return err
}

// A txCall is one transaction, run on a goroutine of its own: a fault
// inside bbolt can leave one of its locks held (a fault while it starts a
// transaction leaves the lock of its meta pages held), and a call waiting
// for that lock would wait forever. Its caller stops waiting once the
// handle is found broken, and the call is abandoned: its fn no longer
// runs, and the goroutine, when it is stuck, stays stuck.
type txCall struct {
	done chan struct{}
	err  error // set before done is closed

	mu        sync.Mutex // held while fn runs
	abandoned bool
}

func (c *txCall) run(h *handle, write bool, fn func(*bolt.Tx) error) {
	defer close(c.done)
	guarded := func(tx *bolt.Tx) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.abandoned {
			return errAbandoned
		}
		return fn(tx)
	}
	c.err = guard(func() error {
		if write {
			return h.bolt.Update(guarded)
		}
		return h.bolt.View(guarded)
	})
}

// abandon stops c's fn from running from now on (waiting for it to end when
// it runs) and returns c's result when it has one, or ErrDamaged.
func (c *txCall) abandon(h *handle) error {
	c.mu.Lock()
	c.abandoned = true
	c.mu.Unlock()
	select {
	case <-c.done:
		if c.err != errAbandoned {
			return c.err
		}
	default:
	}
	return fmt.Errorf("%w: %s was found damaged by another call", ErrDamaged, h.path)
}

var errAbandoned = errors.New("transaction abandoned")

// guard runs fn with faults turned into panics, and a panic into an error
// wrapping ErrDamaged.
func guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrDamaged, r)
		}
	}()
	return fn()
}

// replace moves the damaged file of h aside and opens a new cache in its
// place, unless that happened already. The old file stays open, and
// mapped, until the process exits: an abandoned call (txCall) may still be
// in bbolt, reading or writing it, and bbolt's Close could wait forever on
// a lock a fault left held.
func (d *DB) replace(h *handle, cause error) {
	d.replaceMu.Lock()
	defer d.replaceMu.Unlock()
	if d.h.Load() != h || h.broken.Swap(true) {
		return // replaced already, or no new file could be opened
	}
	close(h.brokenCh)
	log := d.logger()
	aside := ""
	if !h.temp {
		aside = fmt.Sprintf("%s.corrupt-%d", h.path, time.Now().Unix())
		if err := os.Rename(h.path, aside); err != nil {
			log.Error("cannot move the damaged cache file aside", "path", h.path, "err", err)
			aside = ""
		}
	}
	next, err := d.openReplacement(h)
	if err != nil {
		log.Error("cache file damaged while in use, and no new cache could be opened; cache calls fail until restart",
			"path", h.path, "damage", cause, "err", err)
		d.stuck.Store(fmt.Sprintf("cache file damaged while in use, and no new cache could be opened (%v); restart the router", err))
		return
	}
	log.Error("cache file damaged while in use; moved aside and replaced by an empty cache, rebuilt from the skill folders",
		"path", h.path, "moved_to", aside, "damage", cause, "cache_dir", next.dir)
	if aside != "" {
		removeOldAside(h.dir, filepath.Base(aside), log)
	}
	d.h.Store(next)
	d.replacements.Add(1)
	select {
	case d.replaced <- struct{}{}:
	default:
	}
	if h.temp {
		_ = os.RemoveAll(h.dir)
	}
}

// openReplacement opens a new cache where h was, or in a temporary
// directory when that fails.
func (d *DB) openReplacement(h *handle) (*handle, error) {
	if !h.temp {
		next, err := d.openHandle(h.dir)
		if err == nil {
			return next, nil
		}
		d.logger().Warn("cannot open a new cache in the state directory; trying a temporary one", "dir", h.dir, "err", err)
	}
	return d.openTemp(h.dir, ErrDamaged)
}

// openHandle opens (or creates) a cache file in dir for a replacement: the
// file is new, so its check is quick, and its records version is set.
func (d *DB) openHandle(dir string) (*handle, error) {
	path := filepath.Join(dir, statedir.CacheFile)
	db, f, _, _, _, err := openChecked(path, d.opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	h := newHandle(db, f, path, dir, map[string]int{})
	if _, err := checkRecordsVersion(db, d.opts.ParserVersion, d.opts.Release); err != nil {
		closeQuietly(db)
		return nil, err
	}
	return h, nil
}

// Replaced receives a value after the cache file was found damaged while
// in use and replaced by an empty one (see ErrDamaged); the router then
// builds again, parsing every skill.
func (d *DB) Replaced() <-chan struct{} { return d.replaced }

// Replacements counts the files replaced since Open. A builder that keeps
// what it wrote in memory compares it across builds: when it changed, the
// file no longer holds what was written.
func (d *DB) Replacements() uint64 { return d.replacements.Load() }
