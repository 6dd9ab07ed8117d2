package skillfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/statedir"
)

// Listings are the entries of the folders a scan read, each with the
// folder's stamp (device, inode, modification and change times) when it
// was read. Given to the next Scan, they spare it reading a folder whose
// stamp is unchanged: adding, removing or renaming an entry changes its
// folder's times, so the same stamp means the same entries. What a scan takes from a listing is only a folder's own entry
// names and types; SKILL.md and every resource are stat'ed as always, and
// subfolders are read as always. A listing is kept only when its folder's
// times were at least racyMargin older than the scan's start: a change in
// the same tick of the file system's clock as the one before it would keep
// the folder's times, and is caught this way. Listings are recorded on
// Linux only, where a scan reads folders through system calls that give
// their stamps.
type Listings struct {
	// Taken is when the scan that read them started.
	Taken time.Time
	dirs  map[string]*folderListing
	// reused counts the folders a scan took from the listings it was
	// given instead of reading them.
	reused int
}

// folderListing is one folder's entries and its stamp when they were read.
type folderListing struct {
	stamp   dirStamp
	entries []fs.DirEntry
}

// dirStamp identifies a folder's state: a folder whose entries change gets
// another modification and change time.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64 // nanoseconds since 1970
}

// racyMargin is how much older than a scan's start a folder's times must
// be for its listing to be kept (see Listings).
var racyMargin = time.Second

// Len is the number of folders listed.
func (l *Listings) Len() int {
	if l == nil {
		return 0
	}
	return len(l.dirs)
}

// Reused is the number of folders the scan that recorded l took from the
// listings it was given instead of reading them.
func (l *Listings) Reused() int {
	if l == nil {
		return 0
	}
	return l.reused
}

// lookup returns the listing of the folder real, or nil.
func (l *Listings) lookup(real string) *folderListing {
	if l == nil {
		return nil
	}
	return l.dirs[real]
}

// add records a folder read at or after l.Taken, unless its times are too
// recent to tell a later change apart.
func (l *Listings) add(real string, stamp dirStamp, entries []fs.DirEntry) {
	limit := l.Taken.Add(-racyMargin).UnixNano()
	if stamp == (dirStamp{}) || stamp.mtime >= limit || stamp.ctime >= limit {
		return
	}
	l.dirs[real] = &folderListing{stamp: stamp, entries: entries}
}

// merge returns the folders of l and o (which, when l is nil, is o): the
// smaller set is added to the larger, so a scan whose roots are walked
// apart does not copy each root's listings again into a new set.
func (l *Listings) merge(o *Listings) *Listings {
	if l == nil {
		return o
	}
	if len(o.dirs) > len(l.dirs) {
		l, o = o, l
	}
	for k, v := range o.dirs {
		l.dirs[k] = v
	}
	l.reused += o.reused
	return l
}

// ErrListingsFormat is ReadListings' error for what is not listings of
// this format: another version's, after an upgrade, or another file.
var ErrListingsFormat = errors.New("not a listings file of this format")

// listingsMagic starts an encoded Listings; the number is the format.
const listingsMagic = statedir.ListingsMagic

// Entry types as encoded.
const (
	entryRegular = iota
	entryDir
	entrySymlink
	entryOther // anything else, which a scan skips alike
)

// MarshalBinary encodes l: the magic, when it was taken, the number of
// folders, of entries, and of bytes of folder paths and of entry names in
// all, then each folder in path order (its path as the length it shares
// with the previous one and the rest, its stamp, its entries' names and
// types), then a CRC-32C of all before it. The totals let a decoder
// allocate each of its arrays once.
func (l *Listings) MarshalBinary() ([]byte, error) {
	paths := make([]string, 0, len(l.dirs))
	var entries, pathBytes, nameBytes int
	for p, d := range l.dirs {
		paths = append(paths, p)
		pathBytes += len(p)
		entries += len(d.entries)
		for _, e := range d.entries {
			nameBytes += len(e.Name())
		}
	}
	slices.Sort(paths)
	out := append([]byte(listingsMagic), make([]byte, 0, 64*len(paths))...)
	out = binary.AppendVarint(out, l.Taken.UnixNano())
	out = binary.AppendUvarint(out, uint64(len(paths)))
	out = binary.AppendUvarint(out, uint64(entries))
	out = binary.AppendUvarint(out, uint64(pathBytes))
	out = binary.AppendUvarint(out, uint64(nameBytes))
	prev := ""
	for _, p := range paths {
		d := l.dirs[p]
		out = appendShared(out, prev, p)
		out = binary.AppendUvarint(out, d.stamp.dev)
		out = binary.AppendUvarint(out, d.stamp.ino)
		out = binary.AppendVarint(out, d.stamp.mtime)
		out = binary.AppendVarint(out, d.stamp.ctime)
		out = binary.AppendUvarint(out, uint64(len(d.entries)))
		for _, e := range d.entries {
			out = appendString(out, e.Name())
			out = append(out, entryCode(e.Type()))
		}
		prev = p
	}
	return seal(out), nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// seal appends the CRC-32C of out to it, as the encodings of this package
// end.
func seal(out []byte) []byte {
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// unseal returns what follows magic in data, an encoding that seal ended,
// without its checksum: errFormat when data does not start with magic, an
// error naming what when the checksum does not match.
func unseal(data []byte, magic string, errFormat error, what string) ([]byte, error) {
	if len(data) < len(magic)+4 {
		return nil, errFormat
	}
	if got := string(data[:len(magic)]); got != magic {
		return nil, fmt.Errorf("%w: magic %q, written by %s; this router reads %q", errFormat, got, statedir.WrittenBy(got, magic), magic)
	}
	body := data[:len(data)-4]
	if binary.LittleEndian.Uint32(data[len(data)-4:]) != crc32.Checksum(body, castagnoli) {
		return nil, fmt.Errorf("%s fail their checksum", what)
	}
	return body[len(magic):], nil
}

// ReadListings decodes what MarshalBinary wrote. Any damage, and any other
// format, is an error: the caller then scans without listings.
func ReadListings(data []byte) (*Listings, error) {
	body, err := unseal(data, listingsMagic, ErrListingsFormat, "listings")
	if err != nil {
		return nil, err
	}
	r := &listingReader{b: body}
	l := &Listings{Taken: time.Unix(0, r.varint())}
	d, err := newListingDecoder(r, len(data))
	if err != nil {
		return nil, err
	}
	if err := d.decode(); err != nil {
		return nil, err
	}
	if l.dirs, err = d.folderMap(); err != nil {
		return nil, err
	}
	return l, nil
}

// listingDecoder decodes the folders of a listings file. The paths, names,
// listings and entries are carved out of a few allocations of their exact
// size: a restart at 100,000 skills decodes them all, into fresh memory,
// before its scan starts.
type listingDecoder struct {
	r                *listingReader
	totalEntries     int
	pathBytes        uint64
	nameBytes        uint64
	folders          []folderListing
	counts, pathEnds []int // each folder's number of entries and the end of its path in paths
	entries          []dirent
	nameEnds         []int // the end of each entry's name in names
	paths, names     strings.Builder
}

// newListingDecoder reads the totals that follow the time a listing was
// taken, and allocates for them; size is the size of the whole input.
func newListingDecoder(r *listingReader, size int) (*listingDecoder, error) {
	n := r.count(1)
	d := &listingDecoder{r: r, totalEntries: r.count(2)}
	// An entry's name is in the input whole; the paths' total is checked
	// as they are decoded.
	d.pathBytes, d.nameBytes = r.uvarint(), r.uvarint()
	if r.err != nil || d.nameBytes > uint64(len(r.b)) {
		return nil, errors.New("listings: a total is out of range")
	}
	d.folders = make([]folderListing, n)
	d.counts, d.pathEnds = make([]int, n), make([]int, n)
	d.entries = make([]dirent, 0, d.totalEntries)
	d.nameEnds = make([]int, 0, d.totalEntries)
	// Paths share prefixes, so their total can exceed the input's size: a
	// few times over, at most, in what a scan writes; more, and the total
	// is checked before it is believed.
	d.paths.Grow(int(min(d.pathBytes, 16*uint64(size))))
	d.names.Grow(int(d.nameBytes))
	return d, nil
}

// decode reads every folder and checks the totals.
func (d *listingDecoder) decode() error {
	r := d.r
	var path []byte // the current folder's
	for i := range d.folders {
		shared := r.uvarint()
		rest := r.bytes()
		if shared > uint64(len(path)) || i > 0 && string(rest) <= string(path[shared:]) {
			return errors.New("listings: a folder is out of order")
		}
		path = append(path[:shared], rest...)
		if len(path) > maxPathBytes || d.paths.Len()+len(path) > int(d.pathBytes) {
			return errors.New("listings: the folder paths are longer than their total")
		}
		d.paths.Write(path)
		d.pathEnds[i] = d.paths.Len()
		d.folders[i].stamp = dirStamp{dev: r.uvarint(), ino: r.uvarint(), mtime: r.varint(), ctime: r.varint()}
		d.counts[i] = r.count(2)
		if len(d.entries)+d.counts[i] > d.totalEntries {
			return errors.New("listings: more entries than their total")
		}
		if err := d.decodeEntries(d.counts[i]); err != nil {
			return err
		}
		if r.err != nil {
			break
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return errors.New("listings: truncated or with bytes after the last folder")
	}
	if len(d.entries) != d.totalEntries || d.paths.Len() != int(d.pathBytes) || d.names.Len() != int(d.nameBytes) {
		return errors.New("listings: the totals do not match the folders")
	}
	return nil
}

// decodeEntries reads the n entries of one folder.
func (d *listingDecoder) decodeEntries(n int) error {
	var prev []byte
	for j := range n {
		name := d.r.bytes()
		typ, ok := entryType(d.r.byte())
		if !ok || !validEntryName(string(name)) || j > 0 && string(name) <= string(prev) {
			return errors.New("listings: an entry is invalid or out of order")
		}
		prev = name
		d.entries = append(d.entries, dirent{typ: typ})
		d.names.Write(name)
		d.nameEnds = append(d.nameEnds, d.names.Len())
	}
	return nil
}

// folderMap returns the decoded folders by path.
func (d *listingDecoder) folderMap() (map[string]*folderListing, error) {
	dirs := make(map[string]*folderListing, len(d.folders))
	ifaces := make([]fs.DirEntry, len(d.entries))
	allPaths, allNames := d.paths.String(), d.names.String()
	pathStart, nameStart, e := 0, 0, 0
	for i := range d.folders {
		f := &d.folders[i]
		p := allPaths[pathStart:d.pathEnds[i]]
		pathStart = d.pathEnds[i]
		if !filepath.IsAbs(p) {
			return nil, errors.New("listings: a folder is not absolute")
		}
		f.entries = ifaces[e : e+d.counts[i] : e+d.counts[i]]
		for j := range f.entries {
			ent := &d.entries[e]
			ent.dir, ent.name = p, allNames[nameStart:d.nameEnds[e]]
			nameStart = d.nameEnds[e]
			f.entries[j] = ent
			e++
		}
		dirs[p] = f
	}
	return dirs, nil
}

// maxPathBytes bounds a listed folder's path, as Linux's PATH_MAX does.
const maxPathBytes = 4096

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func entryCode(t fs.FileMode) byte {
	switch {
	case t.IsRegular():
		return entryRegular
	case t.IsDir():
		return entryDir
	case t&fs.ModeSymlink != 0:
		return entrySymlink
	}
	return entryOther
}

// entryType is the type of an encoded entry. An entry that is not a
// regular file, folder or link comes back as irregular: a scan treats
// every such entry alike.
func entryType(code byte) (fs.FileMode, bool) {
	switch code {
	case entryRegular:
		return 0, true
	case entryDir:
		return fs.ModeDir, true
	case entrySymlink:
		return fs.ModeSymlink, true
	case entryOther:
		return fs.ModeIrregular, true
	}
	return 0, false
}

func validEntryName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// listingReader decodes varints and strings, remembering the first error.
type listingReader struct {
	b   []byte
	err error
}

func (r *listingReader) fail() {
	if r.err == nil {
		r.err = errors.New("truncated")
	}
	r.b = nil
}

// skip moves past the n bytes of a varint just decoded; n <= 0 (binary's
// answer for a varint cut short or too long) fails.
func (r *listingReader) skip(n int) {
	if n <= 0 {
		r.fail()
		return
	}
	r.b = r.b[n:]
}

func (r *listingReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	r.skip(n)
	return v
}

func (r *listingReader) varint() int64 {
	v, n := binary.Varint(r.b)
	r.skip(n)
	return v
}

// count reads a length that at least minBytes bytes per item must follow.
func (r *listingReader) count(minBytes int) int {
	v := r.uvarint()
	if v > uint64(len(r.b)/minBytes) {
		r.fail()
		return 0
	}
	return int(v)
}

// bytes reads a length and that many bytes, which alias the input.
func (r *listingReader) bytes() []byte {
	n := r.count(1)
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *listingReader) byte() byte {
	if len(r.b) == 0 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// dirent is a folder entry a scan listed or took from a listing.
type dirent struct {
	dir, name string
	typ       fs.FileMode
}

func (d dirent) Name() string               { return d.name }
func (d dirent) IsDir() bool                { return d.typ.IsDir() }
func (d dirent) Type() fs.FileMode          { return d.typ }
func (d dirent) Info() (fs.FileInfo, error) { return os.Lstat(filepath.Join(d.dir, d.name)) }
func (d dirent) String() string             { return fs.FormatDirEntry(d) }
