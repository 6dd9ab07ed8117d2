package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpsag/router/internal/statedir"
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

// openTemp opens a new cache in a temporary directory, for dir, which
// cannot hold one because of cause. Temporary caches that routers killed
// before their Close left behind are removed first.
func (d *DB) openTemp(dir string, cause error) (*handle, error) {
	log := d.logger()
	var errs []error
	for _, parent := range tempParents() {
		RemoveAbandoned(parent, statedir.TempCachePrefix, log)
		tmp, err := os.MkdirTemp(parent, statedir.TempCachePrefix)
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

// staleAfter is how old a temporary cache directory must be before it may
// be taken for one a killed router left: a router that just made one has
// not locked its file yet.
const staleAfter = time.Minute

// RemoveAbandoned removes the temporary state directories in parent whose
// names start with prefix and that no process uses: those of this user,
// older than a minute, whose cache file nobody holds locked (a router that
// uses one holds its lock until it removes the directory). A router killed
// before its Close leaves its directory behind.
func RemoveAbandoned(parent, prefix string, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dirs, _ := filepath.Glob(filepath.Join(parent, prefix+"*"))
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleAfter || !ownedByUs(fi) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, statedir.CacheFile), os.O_RDWR, 0)
		if err == nil {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			f.Close() // releases the lock just taken
			if err != nil {
				continue // in use
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			log.Info("removed a temporary state directory a stopped router left", "dir", dir)
		}
	}
}

// ownedByUs reports whether this process's user owns fi.
func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// keepAside is how many moved-aside cache files a state directory keeps:
// the newest, for a look at what went wrong; older ones only take space.
const keepAside = 1

// removeOldAside removes the moved-aside cache files in dir (cache.db.<reason>-<time>)
// but the newest keepAside, keep among them.
func removeOldAside(dir, keep string, log *slog.Logger) {
	names, _ := filepath.Glob(filepath.Join(dir, statedir.CacheFile+".*-*"))
	type aside struct {
		path string
		mod  time.Time
	}
	var all []aside
	for _, p := range names {
		base := filepath.Base(p)
		if base == keep || !isAsideName(base) {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			all = append(all, aside{p, fi.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aside) int { return b.mod.Compare(a.mod) })
	for i, a := range all {
		if i < keepAside-1 {
			continue
		}
		if os.Remove(a.path) == nil {
			log.Info("removed an older moved-aside cache file", "path", a.path)
		}
	}
}

// isAsideName reports whether name is a moved-aside cache file's:
// cache.db.<reason>-<unix time>.
func isAsideName(name string) bool {
	rest, ok := strings.CutPrefix(name, statedir.CacheFile+".")
	if !ok {
		return false
	}
	reason, stamp, ok := strings.Cut(rest, "-")
	if !ok || reason == "" || stamp == "" || strings.ContainsFunc(reason, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return false
	}
	return !strings.ContainsFunc(stamp, func(r rune) bool { return r < '0' || r > '9' })
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
