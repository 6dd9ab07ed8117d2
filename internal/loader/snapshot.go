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
	"github.com/mcpsag/router/internal/filestamp"
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
//
// The router reads the snapshot once, at a start, into memory of its own
// (mapfile.ReadPrivate) and serves from that copy: another process that
// rewrites or cuts the file afterwards cannot change what is served or
// make a read fault. Such a change is still noticed (check): the router
// reports it and writes the snapshot again.
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
	// scans is the file the scan behind each snapshot written goes to.
	scans lastScanFile

	loaded    chan struct{} // closed once startLoad's read is done
	base      *match.Index
	baseSpace vectorSpace
	onDisk    string // the ContentID of the generation in the file
	// scanOnDisk is the ContentID of the generation whose scan is in
	// lastScans' file.
	scanOnDisk string

	// mu guards the fields below, which the background writer, a pass
	// (save) and Status (check) share: it cannot be the loader's lock,
	// which a pass holds for seconds while the writer and Status go on.
	mu       sync.Mutex
	pending  *Generation // to write
	pruneFor *Generation // to prune the vector cache to
	since    time.Time   // when pending was queued
	running  bool
	now      bool // flush asked: write without waiting
	done     *sync.Cond
	// latest is the last generation save was given: what the file is
	// written from again when another process changed it.
	latest *Generation
	// stamp is the file as this writer last read or wrote it; zero when
	// it did neither.
	stamp filestamp.Meta
	// writing is set while a write replaces the file.
	writing bool
	// changed says how the file differs from stamp once check found it
	// changed by another process, until it is written again.
	changed string
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
	w.latest = g
	if prune {
		w.pruneFor = g
	}
	if g.ContentID == w.onDisk && g.ContentID == w.scanOnDisk {
		w.pending = nil
	} else {
		w.pending, w.since = g, time.Now()
	}
	w.startLocked()
}

// startLocked starts the background writer when there is work for it and
// it is not running. The caller holds mu.
func (w *snapshotWriter) startLocked() {
	if w.running || w.pending == nil && w.pruneFor == nil {
		return
	}
	w.running = true
	go w.run()
}

// check compares the snapshot file with what this writer last read or
// wrote. When another process changed it (wrote to it in place, cut it,
// renamed another file over it), the latest generation's snapshot is
// queued for writing; until it is written, check returns why, for Status.
// A file removed is not a change (any file of the state folder may be
// removed at any time), nor is one this writer never read or wrote. It
// costs one stat.
func (w *snapshotWriter) check() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.changed != "" || w.writing || w.stamp == (filestamp.Meta{}) {
		return w.changed
	}
	now, err := filestamp.MetaAt(w.path)
	if err != nil || now == w.stamp {
		return ""
	}
	w.changed = fmt.Sprintf("the index snapshot %s was changed by another process while the router used it (%s); "+
		"the router serves from its own copy, read at the start, and writes the snapshot again", w.path, metaChange(w.stamp, now))
	w.log.Warn("the index snapshot was changed by another process; nothing else may write to the state folder's files while a router uses them. Serving from the router's own copy and writing the snapshot again",
		"path", w.path, "change", metaChange(w.stamp, now))
	w.onDisk = ""
	if w.latest != nil && w.pending == nil {
		w.pending, w.since = w.latest, time.Now()
		w.startLocked()
	}
	return w.changed
}

// metaChange says how a file changed from was to now.
func metaChange(was, now filestamp.Meta) string {
	switch {
	case now.Dev != was.Dev || now.Ino != was.Ino:
		return "another file put in its place"
	case now.Size < was.Size:
		return fmt.Sprintf("cut from %d to %d bytes", was.Size, now.Size)
	case now.Size > was.Size:
		return fmt.Sprintf("grown from %d to %d bytes", was.Size, now.Size)
	}
	return "written to in place"
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
			prune.pruneVectors(w.log)
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
	index, scan := g.ContentID != w.onDisk, g.ContentID != w.scanOnDisk
	w.mu.Unlock()
	if index {
		start := time.Now()
		w.mu.Lock()
		w.writing = true
		w.mu.Unlock()
		err := w.write(g)
		var stamp filestamp.Meta
		if err == nil {
			stamp, _ = filestamp.MetaAt(w.path)
		}
		w.mu.Lock()
		w.writing = false
		if err == nil {
			w.onDisk, w.stamp, w.changed = g.ContentID, stamp, ""
		}
		w.mu.Unlock()
		if err != nil {
			w.log.Warn("writing the index snapshot failed; the next start analyzes every skill", "path", w.path, "err", err)
			return
		}
		w.log.Debug("index snapshot written", "path", w.path, "skills", g.Index.Len(), "duration", time.Since(start).String())
	}
	if scan {
		if err := w.scans.write(g); err != nil {
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
		var stamp filestamp.Meta
		w.base, w.baseSpace, w.onDisk, stamp = w.read()
		w.mu.Lock()
		w.stamp = stamp
		w.mu.Unlock()
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

// read reads the snapshot file; stamp is the file as it was read, zero
// when it was not.
func (w *snapshotWriter) read() (_ *match.Index, _ vectorSpace, contentID string, stamp filestamp.Meta) {
	if w.path == "" {
		return nil, vectorSpace{}, "", stamp
	}
	start := time.Now()
	ix, meta, stamp, err := readSnapshot(w.path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			w.log.Warn("index snapshot unusable; analyzing every skill", "path", w.path, "err", err)
		}
		return nil, vectorSpace{}, "", filestamp.Meta{}
	}
	w.log.Debug("index snapshot read", "path", w.path, "skills", meta.Skills, "duration", time.Since(start).String())
	return ix, vectorSpace{model: meta.Model, bodyChars: meta.BodyChars}, meta.ContentID, stamp
}

// readSnapshot reads the snapshot file at path into memory of the
// process's own (mapfile.ReadPrivate), which nothing writes to. The index
// it returns uses its vectors and postings where they lie in that memory,
// and so do the indexes updated from it, which share what did not change:
// the memory stays for the life of the process (one copy per start). stamp
// is the file as it was before it was read: a change made while it was
// read shows as a change later, if the checksum did not catch it.
func readSnapshot(path string) (_ *match.Index, _ snapshotMeta, stamp filestamp.Meta, _ error) {
	var meta snapshotMeta
	stamp, err := filestamp.MetaAt(path)
	if err != nil {
		return nil, meta, stamp, err
	}
	data, release, err := mapfile.ReadPrivate(path)
	if err != nil {
		return nil, meta, stamp, err
	}
	ix, err := decodeSnapshot(data, &meta)
	if err != nil {
		release()
		return nil, meta, stamp, err
	}
	return ix, meta, stamp, nil
}

// decodeSnapshot decodes a snapshot file's contents into its index and
// meta.
func decodeSnapshot(data []byte, meta *snapshotMeta) (*match.Index, error) {
	head := len(snapshotMagic) + 4
	if len(data) < head {
		return nil, errors.New("not an index snapshot: too short")
	}
	if got := string(data[:len(snapshotMagic)]); got != snapshotMagic {
		return nil, fmt.Errorf("not an index snapshot of this version: magic %q, written by %s; this router reads %q",
			got, statedir.WrittenBy(got, snapshotMagic), snapshotMagic)
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
