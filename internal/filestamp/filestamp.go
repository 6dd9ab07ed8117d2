// Package filestamp tells whether files changed since they were last read.
// The router reloads its configuration, TLS key pair, tokens file, allowlist
// and model files while it runs; each of them asks a Watch rather than
// comparing modification times by hand.
//
// A Stamp covers size, modification time and, for files up to MaxHashBytes,
// the content's sha256, so an edit that keeps both size and time (a copy that
// preserves times, a coarse file system clock) is still seen. An absent or
// unreadable file has a stamp of its own, so its appearance is a change too.
//
// A Meta is the cheaper identity of one file, from a stat alone (device,
// inode, size and times): it tells a file the router wrote or read apart
// from one another process wrote since, not damage below the file system.
// The cache's clean-close note and the check of the index snapshot under a
// running router use it.
package filestamp

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// MaxHashBytes is the largest file whose content goes into a stamp; larger
// files (model weights) are stamped by size and modification time only.
const MaxHashBytes = 4 << 20

// Stamp identifies the state of a set of files.
type Stamp string

// Of returns the stamp of paths, in order.
func Of(paths ...string) Stamp {
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%q ", p)
		f, err := os.Open(p)
		if err != nil {
			fmt.Fprintf(h, "absent\n")
			continue
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			fmt.Fprintf(h, "unreadable\n")
			continue
		}
		fmt.Fprintf(h, "%d %d ", fi.Size(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() && fi.Size() <= MaxHashBytes {
			if _, err := io.Copy(h, io.LimitReader(f, MaxHashBytes+1)); err != nil {
				fmt.Fprintf(h, "read error")
			}
		}
		f.Close()
		h.Write([]byte("\n"))
	}
	return Stamp(hex.EncodeToString(h.Sum(nil)))
}

// Watch reports changes of a set of files. It is safe for concurrent use.
type Watch struct {
	// Paths are the files watched.
	Paths []string
	// Interval throttles checks: Changed looks at the files at most once
	// per Interval and reports no change in between. Zero checks on every
	// call.
	Interval time.Duration
	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time

	mu      sync.Mutex
	seen    Stamp
	marked  bool
	checked time.Time
}

// Changed reports whether the files differ from what Mark (or the last
// Changed that returned true) recorded, and records them as seen. The first
// call returns true.
func (w *Watch) Changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.marked && w.Interval > 0 && now.Sub(w.checked) < w.Interval {
		return false
	}
	w.checked = now
	s := Of(w.Paths...)
	if w.marked && s == w.seen {
		return false
	}
	w.seen, w.marked = s, true
	return true
}

// Mark records the files as they are now, as seen.
func (w *Watch) Mark() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen, w.marked, w.checked = Of(w.Paths...), true, w.now()
}

func (w *Watch) now() time.Time {
	if w.Now == nil {
		return time.Now()
	}
	return w.Now()
}
