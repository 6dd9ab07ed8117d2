package loader

import (
	"errors"
	"log/slog"
	"os"
	"sync"

	"github.com/mcpsag/router/internal/skillfs"
)

// listingsFile keeps the folder listings the last full scan recorded
// (skillfs.Listings) on disk (statedir.ListingsFile) for the next full
// scan: after a restart too, it does not read again a folder whose stamp is
// unchanged. It is derived data, like the snapshot: a missing, stale or
// damaged file only means that scan reads every folder. Only the file holds them between scans: at 100,000 skills they
// are about 10 MB, not worth keeping in memory for scans that come rarely.
type listingsFile struct {
	path string
	log  *slog.Logger

	saving sync.WaitGroup
	mu     sync.Mutex // one write at a time; guards written
	queued uint64     // saves queued, numbered; written by a pass's scan, under the loader's lock
	// written is the number of the last save written: an older one that
	// comes late is dropped.
	written uint64
}

// load returns the listings on disk, or nil when there are none or they
// cannot be used.
func (f *listingsFile) load() *skillfs.Listings {
	data, err := os.ReadFile(f.path)
	if err != nil {
		if !os.IsNotExist(err) {
			f.log.Warn("folder listings unreadable; the scan reads every folder", "file", f.path, "err", err)
		}
		return nil
	}
	l, err := skillfs.ReadListings(data)
	if errors.Is(err, skillfs.ErrListingsFormat) {
		f.log.Info("folder listings of another format (another release wrote them); the scan reads every folder", "file", f.path, "err", err)
		return nil
	}
	if err != nil {
		f.log.Warn("folder listings unusable; the scan reads every folder", "file", f.path, "err", err)
		return nil
	}
	return l
}

// save writes the listings a scan recorded, in the background, unless they
// are those the scan was given (every folder taken from them, none gone).
func (f *listingsFile) save(recorded, known *skillfs.Listings) {
	if recorded == nil || recorded.Len() == known.Len() && recorded.Reused() == recorded.Len() {
		return
	}
	f.queued++
	n := f.queued
	f.saving.Go(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if n < f.written {
			return
		}
		data, err := recorded.MarshalBinary()
		if err == nil {
			err = replaceFileBytes(f.path, data)
		}
		if err != nil {
			f.log.Warn("folder listings not saved; the next scan reads every folder", "file", f.path, "err", err)
			return
		}
		f.written = n
	})
}

// wait waits for the saves under way.
func (f *listingsFile) wait() { f.saving.Wait() }
