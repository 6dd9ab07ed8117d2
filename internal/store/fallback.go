package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// OpenOrFallback opens the cache in dir like Open. When dir cannot hold a
// cache (the state directory or cache file cannot be created, opened or
// written: no permission, a read-only or full file system, a folder where the
// file belongs, a damaged file that cannot be moved aside), it opens a new,
// empty cache in a temporary directory instead and Degraded says why.
// The router can then serve, rebuilding from the skill folders; the
// temporary cache is deleted at Close, so the next start tries dir again.
//
// Another process holding dir is never worked around: that error (ErrLocked)
// is returned, since two routers must not serve one state directory.
func OpenOrFallback(dir string, opts Options) (*DB, error) {
	db, err := Open(dir, opts)
	if err == nil || errors.Is(err, ErrLocked) {
		return db, err
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	d := &DB{opts: opts, log: opts.Logger, replaced: make(chan struct{}, 1)}
	h, terr := d.openTemp(dir, err)
	if terr != nil {
		return nil, terr
	}
	d.h.Store(h)
	d.walked = true
	return d, nil
}

// tempPrefix starts the names of temporary cache directories.
const tempPrefix = "mcpsag-cache-"

// openTemp opens a new cache in a temporary directory, for dir, which
// cannot hold one because of cause.
func (d *DB) openTemp(dir string, cause error) (*handle, error) {
	log := d.logger()
	var errs []error
	for _, parent := range tempParents() {
		tmp, err := os.MkdirTemp(parent, tempPrefix)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h, err := d.openHandle(tmp)
		if err != nil {
			_ = os.RemoveAll(tmp)
			errs = append(errs, err)
			continue
		}
		h.temp = true
		h.reason = fmt.Sprintf("cache in %s unusable (%v); using a temporary cache in %s until restart", dir, cause, tmp)
		log.Error("state directory cannot hold the cache; serving from a temporary cache, rebuilt from the skill folders",
			"state_dir", dir, "err", cause, "temporary_dir", tmp)
		return h, nil
	}
	return nil, fmt.Errorf("%w; no temporary cache either: %w", cause, errors.Join(errs...))
}

// tempParents lists where a temporary cache may go: the system temporary
// directory, then shared memory.
func tempParents() []string {
	out := []string{os.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		out = append(out, "/dev/shm")
	}
	return out
}

// Dir returns the directory the cache file is in: the state directory, or
// a temporary one when Degraded says so.
func (d *DB) Dir() string { return d.h.Load().dir }

// Degraded says why the cache lives in a temporary directory instead of
// the state directory (see OpenOrFallback), or why there is none to use, or
// "".
func (d *DB) Degraded() string {
	if why, ok := d.stuck.Load().(string); ok {
		return why
	}
	return d.h.Load().reason
}

func (d *DB) logger() *slog.Logger {
	if d.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.log
}
