package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"os"
	"syscall"
	"time"

	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/mcpsag/router/internal/mapfile"
)

// The cache file is checked here, with ordinary reads, before bbolt maps it.
// bbolt trusts the file: a page number past the end of a truncated file makes
// it read unmapped memory (SIGBUS, which no recover catches when it happens in
// one of bbolt's own goroutines), and a malformed page makes it panic. So
// before bbolt sees the file, verifyFile walks every page bbolt could reach
// from the meta page it would pick and checks that each one lies inside the
// file, is referenced once, has the type its parent expects, and holds
// elements whose keys and values stay inside the page, in key order. Only a
// file that passes reaches bbolt; one that fails is moved aside and rebuilt.
//
// The layout below is bbolt's (go.etcd.io/bbolt/internal/common), in the
// machine's byte order as bbolt writes it; TestVerifyLayoutMatchesBbolt ties
// the two together.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	metaSize         = 64 // magic, version, page size, flags u32; root, sequence, freelist, pgid, txid, checksum u64
	metaSumBytes     = 56 // the checksum covers the fields before it
	elementSize      = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64

	boltMagic   = 0xED0CDAED
	boltVersion = 2

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10

	leafFlagBucket = 0x01
	noFreelist     = ^uint64(0)

	minPageSize = 1024
	maxPageSize = 1 << 16
	// maxPages bounds the bookkeeping for one file (16 GiB at 4 KiB pages);
	// a cache this large is not one this router wrote.
	maxPages = 1 << 22
	// maxDepth bounds B+tree and bucket nesting; the router nests two
	// levels of buckets over trees a few pages deep.
	maxDepth = 64
)

// errNoMeta says neither meta page is valid.
var errNoMeta = errors.New("no valid meta page: the file is not a bbolt database, or both of its headers are damaged")

// fileMeta is one decoded meta page.
type fileMeta struct {
	magic, version, pageSize uint32
	root, freelist, pgid     uint64
	txid, checksum           uint64
	sum                      uint64 // computed over the stored bytes
}

func decodeMeta(b []byte) fileMeta {
	ne := binary.NativeEndian
	h := fnv.New64a()
	h.Write(b[:metaSumBytes])
	return fileMeta{
		magic:    ne.Uint32(b[0:]),
		version:  ne.Uint32(b[4:]),
		pageSize: ne.Uint32(b[8:]),
		root:     ne.Uint64(b[16:]),
		freelist: ne.Uint64(b[32:]),
		pgid:     ne.Uint64(b[40:]),
		txid:     ne.Uint64(b[48:]),
		checksum: ne.Uint64(b[56:]),
		sum:      h.Sum64(),
	}
}

// valid applies bbolt's own meta validation (magic, version, checksum), which
// decides which meta page bbolt uses.
func (m fileMeta) valid() error {
	switch {
	case m.magic != boltMagic:
		return fmt.Errorf("bad magic %#x", m.magic)
	case m.version != boltVersion:
		return fmt.Errorf("format version %d, want %d", m.version, boltVersion)
	case m.checksum != m.sum:
		return fmt.Errorf("checksum %016x, computed %016x", m.checksum, m.sum)
	}
	return nil
}

// verifyFile checks the bbolt file f structurally. The walk reads pages
// from data, the file mapped read-only, when it is not nil (no system call
// per page), else with ReadAt. Either way damage is an error here, not a
// fault: the walk never touches a byte past the size the file had when it
// was locked, and openChecked turns a fault into a panic, which is
// recovered here. An empty file passes: bbolt initialises it. Any other
// error means the file is unusable. It never panics: a bug in the walk is
// reported as an error.
func verifyFile(f io.ReaderAt, data []byte, size int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cache check failed: %v", r)
		}
	}()
	if size == 0 {
		return nil
	}
	ps, err := pageSize(f, size)
	if err != nil {
		return err
	}
	if size < 2*int64(ps) {
		return fmt.Errorf("file is %d bytes, shorter than its two %d-byte meta pages", size, ps)
	}
	m, err := pickMeta(f, ps)
	if err != nil {
		return err
	}
	w := &walker{r: f, data: data, ps: ps}
	return w.run(m, size)
}

// pageSize finds the page size the way bbolt does: from the first meta page
// when it is valid, else by probing for the second one.
func pageSize(f io.ReaderAt, size int64) (int, error) {
	buf := make([]byte, 4096)
	if n, _ := f.ReadAt(buf, 0); n == len(buf) {
		if m := decodeMeta(buf[pageHeaderSize:]); m.valid() == nil {
			return checkPageSize(m.pageSize)
		}
	}
	for i := 0; i <= 14; i++ {
		pos := int64(1024) << i
		if pos >= size-1024 {
			break
		}
		n, err := f.ReadAt(buf, pos)
		if n < pageHeaderSize+metaSize || (err != nil && !errors.Is(err, io.EOF)) {
			continue
		}
		if m := decodeMeta(buf[pageHeaderSize:]); m.valid() == nil {
			return checkPageSize(m.pageSize)
		}
	}
	return 0, errNoMeta
}

func checkPageSize(ps uint32) (int, error) {
	if ps < minPageSize || ps > maxPageSize || bits.OnesCount32(ps) != 1 {
		return 0, fmt.Errorf("page size %d is not a power of two between %d and %d", ps, minPageSize, maxPageSize)
	}
	return int(ps), nil
}

// pickMeta reads both meta pages and returns the one bbolt would use: the
// valid one with the higher transaction id (the first on a tie).
func pickMeta(f io.ReaderAt, ps int) (fileMeta, error) {
	var metas [2]fileMeta
	var errs [2]error
	for i := range metas {
		buf := make([]byte, pageHeaderSize+metaSize)
		if _, err := f.ReadAt(buf, int64(i*ps)); err != nil {
			errs[i] = fmt.Errorf("meta page %d: %w", i, err)
			continue
		}
		metas[i] = decodeMeta(buf[pageHeaderSize:])
		if err := metas[i].valid(); err != nil {
			errs[i] = fmt.Errorf("meta page %d: %w", i, err)
		}
	}
	a, b := 0, 1
	if metas[1].txid > metas[0].txid {
		a, b = 1, 0
	}
	var m fileMeta
	switch {
	case errs[a] == nil:
		m = metas[a]
	case errs[b] == nil:
		m = metas[b]
	default:
		return fileMeta{}, fmt.Errorf("%w (%v; %v)", errNoMeta, errs[0], errs[1])
	}
	if int(m.pageSize) != ps {
		return fileMeta{}, fmt.Errorf("meta pages disagree on the page size (%d and %d)", ps, m.pageSize)
	}
	return m, nil
}

// walker checks the page tree of one meta page.
type walker struct {
	r     io.ReaderAt
	data  []byte // the whole file, mapped; nil: read pages from r
	ps    int
	pgid  uint64 // high-water mark: pages [0, pgid) are in use or free
	used  []bool
	freed []bool
}

func (w *walker) run(m fileMeta, size int64) error {
	filePages := uint64(size) / uint64(w.ps)
	switch {
	case m.pgid > filePages:
		return fmt.Errorf("file is truncated: %d bytes hold %d pages of %d bytes, the meta page (txid %d) says %d", size, filePages, w.ps, m.txid, m.pgid)
	case m.pgid > maxPages:
		return fmt.Errorf("meta page claims %d pages; over the %d this router accepts", m.pgid, maxPages)
	case m.freelist == noFreelist:
		return errors.New("the free page list is not stored in the file (bbolt NoFreelistSync); this router always stores it")
	case m.freelist < 2 || m.freelist >= m.pgid:
		return fmt.Errorf("free list page %d outside [2, %d)", m.freelist, m.pgid)
	case m.root < 2 || m.root >= m.pgid:
		return fmt.Errorf("root page %d outside [2, %d)", m.root, m.pgid)
	}
	w.pgid = m.pgid
	w.used = make([]bool, w.pgid)
	w.freed = make([]bool, w.pgid)
	w.used[0], w.used[1] = true, true
	if err := w.freelist(m.freelist); err != nil {
		return err
	}
	if _, err := w.tree(m.root, nil, nil, 0); err != nil {
		return err
	}
	for id := range w.pgid {
		if !w.used[id] && !w.freed[id] {
			return fmt.Errorf("page %d is neither in use nor free", id)
		}
	}
	return nil
}

// page reads page id with its overflow pages and checks its header.
func (w *walker) page(id uint64) (hdr pageHeader, span []byte, err error) {
	if id < 2 || id >= w.pgid {
		return hdr, nil, fmt.Errorf("page %d outside [2, %d)", id, w.pgid)
	}
	first, err := w.read(id, 1)
	if err != nil {
		return hdr, nil, err
	}
	hdr = decodePageHeader(first)
	if hdr.id != id {
		return hdr, nil, fmt.Errorf("page %d identifies itself as page %d", id, hdr.id)
	}
	if uint64(hdr.overflow) >= w.pgid-id {
		return hdr, nil, fmt.Errorf("page %d: %d overflow pages run past the high-water mark %d", id, hdr.overflow, w.pgid)
	}
	if hdr.overflow == 0 {
		return hdr, first, nil
	}
	span, err = w.read(id, int(hdr.overflow)+1)
	return hdr, span, err
}

// read returns count pages from page id on. run has checked that pages
// below the high-water mark lie inside the file.
func (w *walker) read(id uint64, count int) ([]byte, error) {
	off, n := int64(id)*int64(w.ps), int64(count)*int64(w.ps)
	if w.data != nil {
		if off+n > int64(len(w.data)) {
			return nil, fmt.Errorf("page %d: %d pages run past the end of the file", id, count)
		}
		return w.data[off : off+n : off+n], nil
	}
	buf := make([]byte, n)
	if _, err := w.r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	return buf, nil
}

// claim marks pages [id, id+overflow] as in use, once.
func (w *walker) claim(id uint64, overflow uint32) error {
	for p := id; p <= id+uint64(overflow); p++ {
		if w.used[p] {
			return fmt.Errorf("page %d is referenced twice", p)
		}
		w.used[p] = true
	}
	return nil
}

// freelist reads the free page list and marks its pages free.
func (w *walker) freelist(id uint64) error {
	hdr, span, err := w.page(id)
	if err != nil {
		return fmt.Errorf("free list: %w", err)
	}
	if hdr.flags != flagFreelist {
		return fmt.Errorf("free list page %d has type %#x", id, hdr.flags)
	}
	if err := w.claim(id, hdr.overflow); err != nil {
		return fmt.Errorf("free list: %w", err)
	}
	ne := binary.NativeEndian
	room := uint64(len(span)-pageHeaderSize) / 8
	first, count := uint64(0), uint64(hdr.count)
	if hdr.count == 0xFFFF {
		first, count = 1, ne.Uint64(span[pageHeaderSize:])
	}
	if count > room-first {
		return fmt.Errorf("free list page %d lists %d pages; it has room for %d", id, count, room-first)
	}
	for i := range count {
		p := ne.Uint64(span[pageHeaderSize+8*(first+i):])
		if p < 2 || p >= w.pgid {
			return fmt.Errorf("free list names page %d, outside [2, %d)", p, w.pgid)
		}
		if w.freed[p] {
			return fmt.Errorf("free list names page %d twice", p)
		}
		w.freed[p] = true
	}
	return nil
}

type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func decodePageHeader(b []byte) pageHeader {
	ne := binary.NativeEndian
	return pageHeader{id: ne.Uint64(b[0:]), flags: ne.Uint16(b[8:]), count: ne.Uint16(b[10:]), overflow: ne.Uint32(b[12:])}
}

// element is one decoded branch or leaf element with its key and value
// sliced from the page.
type element struct {
	flags uint32
	child uint64 // branch elements
	key   []byte
	value []byte // leaf elements
}

// elements decodes the elements of a page held in span (a page and its
// overflow, or an inline bucket's page), checking every range against span.
func elements(span []byte, hdr pageHeader, where place) ([]element, error) {
	n := int(hdr.count)
	if pageHeaderSize+n*elementSize > len(span) {
		return nil, fmt.Errorf("%s: %d elements do not fit in %d bytes", where, n, len(span))
	}
	ne := binary.NativeEndian
	out := make([]element, n)
	for i := range out {
		off := pageHeaderSize + i*elementSize
		e := span[off : off+elementSize]
		var pos, ksize, vsize uint64
		if hdr.flags == flagBranch {
			pos, ksize = uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
			out[i].child = ne.Uint64(e[8:])
		} else {
			out[i].flags = ne.Uint32(e[0:])
			pos, ksize, vsize = uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		}
		start := uint64(off) + pos
		if ksize == 0 {
			return nil, fmt.Errorf("%s: element %d has an empty key", where, i)
		}
		if start+ksize+vsize > uint64(len(span)) {
			return nil, fmt.Errorf("%s: element %d (%d+%d bytes at %d) runs past the page's %d bytes", where, i, ksize, vsize, start, len(span))
		}
		out[i].key = span[start : start+ksize]
		out[i].value = span[start+ksize : start+ksize+vsize]
	}
	return out, nil
}

// tree checks the B+tree page id and everything below it. Keys must lie in
// [lo, hi) (nil: unbounded), strictly increasing, as bbolt's own check
// requires. It returns the subtree's largest key.
func (w *walker) tree(id uint64, lo, hi []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("page %d: nested over %d levels", id, maxDepth)
	}
	hdr, span, err := w.page(id)
	if err != nil {
		return nil, err
	}
	if hdr.flags != flagBranch && hdr.flags != flagLeaf {
		return nil, fmt.Errorf("page %d has type %#x where a branch or leaf page belongs", id, hdr.flags)
	}
	if err := w.claim(id, hdr.overflow); err != nil {
		return nil, err
	}
	for p := id; p <= id+uint64(hdr.overflow); p++ {
		if w.freed[p] {
			return nil, fmt.Errorf("page %d is in use and on the free list", p)
		}
	}
	where := place{page: id}
	elems, err := elements(span, hdr, where)
	if err != nil {
		return nil, err
	}
	if hdr.flags == flagBranch && len(elems) == 0 {
		return nil, fmt.Errorf("%s: a branch page without children", where)
	}
	var maxKey []byte
	prev := lo
	for i, e := range elems {
		if err := keyInRange(e.key, prev, hi, i, where); err != nil {
			return nil, err
		}
		if hdr.flags == flagLeaf {
			if err := w.leafElement(e, i, where, depth); err != nil {
				return nil, err
			}
			prev, maxKey = e.key, e.key
			continue
		}
		next := hi
		if i+1 < len(elems) {
			next = elems[i+1].key
		}
		sub, err := w.tree(e.child, bytes.Clone(e.key), bytes.Clone(next), depth+1)
		if err != nil {
			return nil, err
		}
		if sub == nil {
			sub = e.key
		}
		prev, maxKey = sub, sub
	}
	return bytes.Clone(maxKey), nil
}

// keyInRange checks element i's key against the previous key (or the lower
// bound for the first) and the upper bound.
func keyInRange(key, prev, hi []byte, i int, where place) error {
	switch c := bytes.Compare(prev, key); {
	case prev == nil:
	case i == 0 && c > 0:
		return fmt.Errorf("%s: first key sorts before its parent's", where)
	case i > 0 && c >= 0:
		return fmt.Errorf("%s: key %d is out of order", where, i)
	}
	if hi != nil && bytes.Compare(key, hi) >= 0 {
		return fmt.Errorf("%s: key %d sorts past the next sibling's", where, i)
	}
	return nil
}

// leafElement checks a leaf element; a bucket's value holds its header and,
// for a small bucket, its whole (inline) page.
func (w *walker) leafElement(e element, i int, where place, depth int) error {
	if e.flags&^leafFlagBucket != 0 {
		return fmt.Errorf("%s: element %d has unknown flags %#x", where, i, e.flags)
	}
	if e.flags&leafFlagBucket == 0 {
		return nil
	}
	if len(e.value) < bucketHeaderSize {
		return fmt.Errorf("%s: bucket %d's header is %d bytes", where, i, len(e.value))
	}
	root := binary.NativeEndian.Uint64(e.value)
	if root != 0 {
		if _, err := w.tree(root, nil, nil, depth+1); err != nil {
			return fmt.Errorf("bucket %q: %w", clipKey(e.key), err)
		}
		return nil
	}
	if depth > maxDepth {
		return fmt.Errorf("%s: buckets nested over %d levels", where, maxDepth)
	}
	inline := e.value[bucketHeaderSize:]
	if len(inline) < pageHeaderSize {
		return fmt.Errorf("%s: inline bucket %q is %d bytes", where, clipKey(e.key), len(inline))
	}
	hdr := decodePageHeader(inline)
	if hdr.flags != flagLeaf {
		return fmt.Errorf("%s: inline bucket %q has page type %#x", where, clipKey(e.key), hdr.flags)
	}
	iw := place{page: where.page, bucket: e.key}
	elems, err := elements(inline, hdr, iw)
	if err != nil {
		return err
	}
	var prev []byte
	for j, c := range elems {
		if err := keyInRange(c.key, prev, nil, j, iw); err != nil {
			return err
		}
		if err := w.leafElement(c, j, iw, depth+1); err != nil {
			return err
		}
		prev = c.key
	}
	return nil
}

// place names a page, or an inline bucket in a page, for error messages;
// it is formatted only when there is an error.
type place struct {
	page   uint64
	bucket []byte // the key of an inline bucket; nil for the page itself
}

func (p place) String() string {
	if p.bucket == nil {
		return fmt.Sprintf("page %d", p.page)
	}
	return fmt.Sprintf("inline bucket %q in page %d", clipKey(p.bucket), p.page)
}

func clipKey(k []byte) string {
	if len(k) > 40 {
		return string(k[:40]) + "..."
	}
	return string(k)
}

// lockFile opens path for bbolt and takes its exclusive lock, waiting up to
// timeout (bolterrors.ErrTimeout after). The lock is bbolt's own (flock on
// the file); handing the same file to bbolt keeps it held from the check to
// the open, so no other router can write the file between the two.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, bolterrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// verifyLocked checks the locked file f.
//
// It maps the file read-only for the walk: on a warm restart with a large
// cache, reading every page with its own system calls took as long as the
// rest of the restart. Where the file cannot be mapped, it reads the pages.
func verifyLocked(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	data, release, ok := mapfile.Map(f)
	if !ok {
		return verifyFile(f, nil, fi.Size())
	}
	defer release()
	return verifyFile(f, data, int64(len(data)))
}

// environmentError reports whether err is about where the cache lives (no
// space, read-only, no permission, a folder in the way) rather than about
// the file's content: such a file must not be moved aside.
func environmentError(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EISDIR, syscall.EFBIG, syscall.ENOTDIR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// damageNote describes damage to the cache file at path that bbolt works
// around by itself, for a warning: an empty file (an interrupted first
// write), or one meta page failing its checksum (bbolt then uses the other,
// the previous transaction, and the next write repairs it). It returns ""
// for a missing or unremarkable file, and never fails.
func damageNote(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	if fi.Size() == 0 {
		return "the cache file is empty (an interrupted first write?); building it from the skill folders"
	}
	ps, err := pageSize(f, fi.Size())
	if err != nil {
		return ""
	}
	for i := range 2 {
		buf := make([]byte, pageHeaderSize+metaSize)
		if _, err := f.ReadAt(buf, int64(i*ps)); err != nil {
			return fmt.Sprintf("meta page %d unreadable: %v; using the other one (the previous transaction)", i, err)
		}
		if err := decodeMeta(buf[pageHeaderSize:]).valid(); err != nil {
			return fmt.Sprintf("meta page %d is damaged (%v); using the other one (the previous transaction), and the next write repairs it", i, err)
		}
	}
	return ""
}
