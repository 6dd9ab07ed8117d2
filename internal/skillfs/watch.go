package skillfs

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher turns file system events under the skill roots into debounced
// rescan signals. fsnotify is not recursive, so every folder a scan visited is
// watched, plus the workspace and each root's parent so that new roots and
// agent folders are noticed. Events are hints: the owner also rescans on a
// timer, and a scan is the source of truth, so lost events (queue overflow,
// watch limits) only delay convergence.
type Watcher struct {
	fs       *fsnotify.Watcher
	debounce time.Duration
	log      *slog.Logger
	signal   chan struct{}

	mu      sync.Mutex
	watched map[string]bool
	changed map[string]bool // paths named by events since TakeChanged
	lost    bool            // events were lost since TakeChanged
}

// maxChanged bounds the paths remembered between two TakeChanged calls;
// beyond it the owner is told to scan everything.
const maxChanged = 4096

// NewWatcher starts watching nothing yet; call Sync with folders to watch.
func NewWatcher(debounce time.Duration, log *slog.Logger) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Watcher{fs: fw, debounce: debounce, log: log, signal: make(chan struct{}, 1), watched: map[string]bool{}}, nil
}

// Changes delivers one value per burst of events, at most one pending.
func (w *Watcher) Changes() <-chan struct{} { return w.signal }

// Sync makes the watched set equal to dirs: new folders are added, gone ones
// removed. Folders that cannot be watched (watch limits) are logged once per
// sync and left to the periodic rescan. When it adds a folder it also signals
// a change: files created there between the scan that found the folder and
// the new watch raised no event, and one more scan picks them up. Sync
// converges, since a scan that finds no new folder adds no watch.
func (w *Watcher) Sync(dirs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		want[filepath.Clean(d)] = true
	}
	for d := range w.watched {
		if !want[d] {
			_ = w.fs.Remove(d)
			delete(w.watched, d)
		}
	}
	failed, added := 0, 0
	var firstErr error
	for d := range want {
		if w.watched[d] {
			continue
		}
		if err := w.fs.Add(d); err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		w.watched[d] = true
		added++
	}
	if added > 0 {
		w.notify()
	}
	if failed > 0 {
		w.log.Warn("some folders cannot be watched; changes there are picked up by the periodic rescan",
			"folders", failed, "err", firstErr)
	}
}

// Watched returns how many folders are watched.
func (w *Watcher) Watched() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watched)
}

// Run forwards debounced events until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue // metadata-only: indexers and virus scanners touch these
			}
			w.note(ev.Name)
			if timer == nil {
				timer = time.NewTimer(w.debounce)
			} else {
				timer.Reset(w.debounce)
			}
			fire = timer.C
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("file event queue overflowed; rescanning everything")
				w.mu.Lock()
				w.lost = true
				w.mu.Unlock()
				w.notify()
				continue
			}
			w.log.Warn("file watcher error", "err", err)
		case <-fire:
			fire = nil
			w.notify()
		}
	}
}

// note remembers the path of an event.
func (w *Watcher) note(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed == nil {
		w.changed = map[string]bool{}
	}
	if len(w.changed) >= maxChanged {
		w.lost = true
		return
	}
	w.changed[filepath.Clean(p)] = true
}

// TakeChanged returns the paths named by the events seen since the last
// call, and forgets them. all is set when some events were lost (the queue
// overflowed, or too many paths changed): then only a scan of everything
// is safe. A path may be a file or a folder, and may no longer exist.
func (w *Watcher) TakeChanged() (paths []string, all bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range w.changed {
		paths = append(paths, p)
	}
	all = w.lost
	w.changed, w.lost = nil, false
	return paths, all
}

func (w *Watcher) notify() {
	select {
	case w.signal <- struct{}{}:
	default: // one pending signal is enough
	}
}

// Close stops watching.
func (w *Watcher) Close() error { return w.fs.Close() }
