package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// OpenOrFallback opens the cache in dir like Open. When dir cannot hold a
// cache (the state directory or cache file cannot be created, opened or
// written: no permission, a read-only or full file system, a folder where the
// file belongs, a damaged file that cannot be moved aside), it opens a new,
// empty cache in a temporary directory instead and sets DB.Degraded to why.
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
	cause := err
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	for _, parent := range tempParents() {
		tmp, terr := os.MkdirTemp(parent, "mcpsag-cache-")
		if terr != nil {
			errs = append(errs, terr)
			continue
		}
		db, terr = Open(tmp, opts)
		if terr != nil {
			_ = os.RemoveAll(tmp)
			errs = append(errs, terr)
			continue
		}
		db.temp = true
		db.Degraded = fmt.Sprintf("cache in %s unusable (%v); using a temporary cache in %s until restart", dir, cause, tmp)
		log.Error("state directory cannot hold the cache; serving from a temporary cache, rebuilt from the skill folders",
			"state_dir", dir, "err", cause, "temporary_dir", tmp)
		return db, nil
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
// the temporary one when Degraded.
func (d *DB) Dir() string { return d.dir }

func (d *DB) logger() *slog.Logger {
	if d.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.log
}
