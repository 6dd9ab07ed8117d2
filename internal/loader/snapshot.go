package loader

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/mapfile"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/statedir"
)

// The index snapshot (statedir.SnapshotFile) is derived data, like the
// cache: a missing, stale or damaged snapshot only means the next start
// analyzes more.
//
// snapshotMagic starts the file; the length of a JSON header with the model
// identity follows, then the header, padded with spaces so that the match
// index's own snapshot, which comes last, starts at a multiple of 64 bytes:
// read from a mapping of the file, the index's arrays are aligned where
// they lie and are used there (see match.ReadSnapshot).
const snapshotMagic = statedir.SnapshotMagic

// snapshotMeta is the snapshot's header.
type snapshotMeta struct {
	// Model is the identity of the model that made the vectors, zero
	// when the index has none.
	Model embed.Identity `json:"model"`
	// BodyChars is how many characters of each body the embedded texts
	// held.
	BodyChars int       `json:"body_chars"`
	Skills    int       `json:"skills"`
	Written   time.Time `json:"written"`
	// ContentID is the generation's; a restart that serves the same one
	// does not write the snapshot again.
	ContentID string `json:"content_id,omitempty"`
}

// snapshotDelay is how long the generations must stay unchanged before the
// snapshot is written: a burst of edits costs one write, and a write does
// not compete with the build that serves an edit.
const snapshotDelay = 2 * time.Second

// snapshotWriter saves the latest generation's index in the background, one
// write at a time, once the generations have stayed unchanged for
// snapshotDelay: a generation published meanwhile replaces the one waiting.
// After the write it prunes the vector cache to the texts of the latest
// generation that asked for it.
type snapshotWriter struct {
	path string
	log  *slog.Logger
	// lastScans writes the scan behind each snapshot written.
	lastScans *lastScanFile
	// pruneVectors prunes the vector cache to the texts of a generation's
	// entries (assembly.pruneVectors).
	pruneVectors func(*Generation)

	loaded    chan struct{} // closed once startLoad's read is done
	base      *match.Index
	baseSpace vectorSpace
	onDisk    string // the ContentID of the generation in the file
	// scanOnDisk is the ContentID of the generation whose scan is in
	// lastScans' file.
	scanOnDisk string

	mu       sync.Mutex
	pending  *Generation // to write
	pruneFor *Generation // to prune the vector cache to
	since    time.Time   // when pending was queued
	running  bool
	now      bool // flush asked: write without waiting
	done     *sync.Cond
}

// save queues g's index for writing (unless the file holds it already) and,
// with prune, a pruning of the vector cache to g's texts, done after the
// write.
func (w *snapshotWriter) save(g *Generation, prune bool) {
	if w.path == "" || g.Index == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if prune {
		w.pruneFor = g
	}
	if g.ContentID == w.onDisk && (w.lastScans == nil || g.ContentID == w.scanOnDisk) {
		w.pending = nil
	} else {
		w.pending, w.since = g, time.Now()
	}
	if w.running || w.pending == nil && w.pruneFor == nil {
		return
	}
	w.running = true
	go w.run()
}

func (w *snapshotWriter) run() {
	for {
		w.mu.Lock()
		if w.pending != nil && !w.now {
			if wait := snapshotDelay - time.Since(w.since); wait > 0 {
				w.mu.Unlock()
				time.Sleep(min(wait, 100*time.Millisecond))
				continue
			}
		}
		g, prune := w.pending, w.pruneFor
		w.pending, w.pruneFor = nil, nil
		if g == nil && prune == nil {
			w.running = false
			if w.done != nil {
				w.done.Broadcast()
			}
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		if g != nil {
			w.writeAll(g)
		}
		if prune != nil {
			w.pruneVectors(prune)
		}
	}
}

// flush writes what is pending now and waits until it is written.
func (w *snapshotWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		w.done = sync.NewCond(&w.mu)
	}
	w.now = true
	for w.running {
		w.done.Wait()
	}
	w.now = false
}

// writeAll writes g's snapshot and the scan behind it, each unless the
// file holds it already.
func (w *snapshotWriter) writeAll(g *Generation) {
	w.mu.Lock()
	index, scan := g.ContentID != w.onDisk, w.lastScans != nil && g.ContentID != w.scanOnDisk
	w.mu.Unlock()
	if index {
		start := time.Now()
		if err := w.write(g); err != nil {
			w.log.Warn("writing the index snapshot failed; the next start analyzes every skill", "path", w.path, "err", err)
			return
		}
		w.mu.Lock()
		w.onDisk = g.ContentID
		w.mu.Unlock()
		w.log.Debug("index snapshot written", "path", w.path, "skills", g.Index.Len(), "duration", time.Since(start).String())
	}
	if scan {
		if err := w.lastScans.write(g); err != nil {
			w.log.Warn("writing the last scan failed; the next start scans the roots before it serves", "err", err)
			return
		}
		w.mu.Lock()
		w.scanOnDisk = g.ContentID
		w.mu.Unlock()
	}
}

// scanWritten records that the scan file holds the scan behind the
// generation of contentID (which was read from it).
func (w *snapshotWriter) scanWritten(contentID string) {
	w.mu.Lock()
	w.scanOnDisk = contentID
	w.mu.Unlock()
}

// write writes g's snapshot to a temporary file and renames it over the
// snapshot.
func (w *snapshotWriter) write(g *Generation) error {
	err := replaceFile(w.path, func(bw *bufio.Writer) error {
		m := snapshotMeta{Model: g.space.model, BodyChars: g.space.bodyChars, Skills: g.Index.Len(), Written: time.Now(), ContentID: g.ContentID}
		meta, err := json.Marshal(m)
		if err != nil {
			return err
		}
		for (len(snapshotMagic)+4+len(meta))%64 != 0 {
			meta = append(meta, ' ')
		}
		bw.WriteString(snapshotMagic)
		bw.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(meta))))
		bw.Write(meta)
		return g.Index.WriteSnapshot(bw)
	})
	if err != nil {
		return fmt.Errorf("write index snapshot %s: %w", w.path, err)
	}
	return nil
}

// replaceFile writes a file through write into a temporary file beside
// path, syncs it and renames it over path: a reader sees the old file or
// the new one, whole, even after a crash.
func replaceFile(path string, write func(*bufio.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), statedir.TempPattern(filepath.Base(path)))
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = func() error {
		bw := bufio.NewWriterSize(f, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// startLoad reads the snapshot in the background, once after is closed (at
// once when it is nil); load returns it.
func (w *snapshotWriter) startLoad(after <-chan struct{}) {
	w.loaded = make(chan struct{})
	go func() {
		defer close(w.loaded)
		if after != nil {
			<-after
		}
		w.base, w.baseSpace, w.onDisk = w.read()
	}()
}

// load returns the snapshot startLoad read, once: nil when there is none or
// it cannot be used (another version, damaged); the build then analyzes
// every skill.
func (w *snapshotWriter) load() (*match.Index, vectorSpace) {
	if w.loaded == nil {
		return nil, vectorSpace{}
	}
	<-w.loaded
	base, space := w.base, w.baseSpace
	w.base = nil // the first generation owns it now
	return base, space
}

// read reads the snapshot file.
func (w *snapshotWriter) read() (*match.Index, vectorSpace, string) {
	if w.path == "" {
		return nil, vectorSpace{}, ""
	}
	start := time.Now()
	ix, meta, err := readSnapshot(w.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("index snapshot unusable; analyzing every skill", "path", w.path, "err", err)
		}
		return nil, vectorSpace{}, ""
	}
	w.log.Debug("index snapshot read", "path", w.path, "skills", meta.Skills, "duration", time.Since(start).String())
	return ix, vectorSpace{model: meta.Model, bodyChars: meta.BodyChars}, meta.ContentID
}

// readSnapshot reads the snapshot file at path from a read-only mapping of
// it. The index it returns uses its vectors and postings in place, and so
// do the indexes updated from it, which share what did not change: the
// mapping stays for the life of the process (one per start; pages the
// kernel may drop and read again), and so does the file's disk space once
// a newer snapshot replaces it. A file that cannot be mapped is read into
// memory instead.
func readSnapshot(path string) (*match.Index, snapshotMeta, error) {
	var meta snapshotMeta
	data, unmap, err := mapfile.Read(path)
	if err != nil {
		return nil, meta, err
	}
	ix, err := decodeSnapshot(data, &meta)
	if err != nil {
		unmap()
		return nil, meta, err
	}
	return ix, meta, nil
}

// decodeSnapshot decodes a snapshot file's contents into its index and
// meta.
func decodeSnapshot(data []byte, meta *snapshotMeta) (*match.Index, error) {
	head := len(snapshotMagic) + 4
	if len(data) < head || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("not an index snapshot of this version: bad magic")
	}
	n := int(binary.LittleEndian.Uint32(data[len(snapshotMagic):]))
	if n > 64<<20 || n > len(data)-head {
		return nil, fmt.Errorf("snapshot header of %d bytes in a file of %d", n, len(data))
	}
	if err := json.Unmarshal(data[head:head+n], meta); err != nil {
		return nil, fmt.Errorf("snapshot header: %w", err)
	}
	return match.ReadSnapshot(data[head+n:])
}

// replaceFileBytes is replaceFile writing data.
func replaceFileBytes(path string, data []byte) error {
	return replaceFile(path, func(w *bufio.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// removeLeftovers removes from the state folder dir the temporary files a
// process stopped mid-write (killed, or its machine lost) left of the
// index snapshot and the folder listings. A new builder calls it: its store
// holds the state folder's lock, and nothing of its own is being written.
func removeLeftovers(dir string, log *slog.Logger) {
	for _, name := range statedir.Leftovers {
		leftovers, _ := filepath.Glob(filepath.Join(dir, statedir.TempPattern(name)))
		for _, p := range leftovers {
			if err := os.Remove(p); err == nil {
				log.Info("removed a temporary file left by a write that did not finish", "file", p)
			}
		}
	}
}
