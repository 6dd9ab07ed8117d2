package skillfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// A scan's result can be saved and read back, so that a restart can serve
// what the last scan found before it scans again (see ReadScanResult).

// ErrScanFormat is ReadScanResult's error for what is not a scan result of
// this format: another version's, after an upgrade, or another file.
var ErrScanFormat = errors.New("not a scan result of this format")

// ErrScanRoots is ReadScanResult's error for a scan result of other roots
// than those given: the configuration changed since it was saved.
var ErrScanRoots = errors.New("the scan result is of other roots")

// scanMagic starts an encoded scan result; the number is the format.
const scanMagic = statedir.ScanMagic

// MarshalScanResult encodes what res found of roots (its files, folders
// and problems; not its listings): the magic, the roots, the files in
// order (each with the index of its root, its path as the length it
// shares with the previous file's and the rest, its path relative to the
// root, size, modification time and resources), the folders (paths as
// the files' are), the problems, then a CRC-32C of all before it. Every
// file's root must be one of roots.
func MarshalScanResult(res *ScanResult, roots []skill.Root) ([]byte, error) {
	out := append([]byte(scanMagic), make([]byte, 0, 96*len(res.Files)+48*len(res.Dirs))...)
	out = appendRoots(out, roots)
	// The total of the strings decoded, and their number, let a decoder
	// allocate for them once.
	textBytes, textStrings := res.textTotals()
	out = binary.AppendUvarint(out, uint64(textBytes))
	out = binary.AppendUvarint(out, uint64(textStrings))
	out, err := appendFiles(out, res.Files, roots)
	if err != nil {
		return nil, err
	}
	out = binary.AppendUvarint(out, uint64(len(res.Dirs)))
	prev := ""
	for _, d := range res.Dirs {
		out = appendShared(out, prev, d)
		prev = d
	}
	out = binary.AppendUvarint(out, uint64(len(res.Problems)))
	for _, p := range res.Problems {
		out = binary.AppendVarint(out, int64(p.Severity))
		out = appendString(out, p.Code)
		out = appendString(out, p.Field)
		out = appendString(out, p.File)
		out = binary.AppendVarint(out, int64(p.Line))
		out = appendString(out, p.Message)
	}
	return seal(out), nil
}

func appendRoots(out []byte, roots []skill.Root) []byte {
	out = binary.AppendUvarint(out, uint64(len(roots)))
	for _, r := range roots {
		out = appendString(out, r.Path)
		out = appendString(out, r.Display)
		out = appendString(out, string(r.Kind))
		out = appendString(out, r.Agent)
		out = binary.AppendVarint(out, int64(r.Order))
	}
	return out
}

// textTotals returns the total length and the number of the strings of
// res's files and folders.
func (res *ScanResult) textTotals() (textBytes, textStrings int) {
	textStrings = len(res.Dirs)
	for i := range res.Files {
		f := &res.Files[i]
		textBytes += len(f.Path) + len(f.RelPath)
		textStrings += 2 + len(f.Resources)
		for _, r := range f.Resources {
			textBytes += len(r.Path)
		}
	}
	for _, d := range res.Dirs {
		textBytes += len(d)
	}
	return textBytes, textStrings
}

// appendFiles encodes the files, each of whose roots must be one of roots.
func appendFiles(out []byte, files []Found, roots []skill.Root) ([]byte, error) {
	out = binary.AppendUvarint(out, uint64(len(files)))
	prevPath, prevRel, ri := "", "", 0
	for i := range files {
		f := &files[i]
		if ri >= len(roots) || roots[ri] != f.Root {
			if ri = slices.Index(roots, f.Root); ri < 0 {
				return nil, fmt.Errorf("%s: its root %s is not one of the roots given", f.Path, f.Root.Path)
			}
		}
		if f.Dir != filepath.Dir(f.Path) {
			return nil, fmt.Errorf("%s: its folder is %s", f.Path, f.Dir)
		}
		out = binary.AppendUvarint(out, uint64(ri))
		out = appendShared(out, prevPath, f.Path)
		out = appendShared(out, prevRel, f.RelPath)
		prevPath, prevRel = f.Path, f.RelPath
		out = binary.AppendVarint(out, f.Size)
		out = binary.AppendVarint(out, f.ModTime.UnixNano())
		out = binary.AppendUvarint(out, uint64(len(f.Resources)))
		for _, r := range f.Resources {
			out = appendString(out, r.Path)
			out = binary.AppendVarint(out, r.Size)
		}
		out = appendBool(out, f.ResourcesTruncated)
	}
	return out, nil
}

// ReadScanResult decodes what MarshalScanResult wrote of the same roots.
// Any damage is an error, and so is another format (ErrScanFormat) or
// other roots (ErrScanRoots). The strings of the result share a few
// allocations: a restart at 100,000 skills decodes them all.
func ReadScanResult(data []byte, roots []skill.Root) (ScanResult, error) {
	var res ScanResult
	body, err := unseal(data, scanMagic, ErrScanFormat, "scan results")
	if err != nil {
		return res, err
	}
	r := &listingReader{b: body}
	if !r.sameRoots(roots) {
		return res, ErrScanRoots
	}
	// Every string is decoded into text, and sliced out of it once it is
	// whole; ends are the ends of the strings in text. Paths share
	// prefixes, so their total can exceed the input's size: a few times
	// over in what a scan writes; more is checked before it is believed.
	t := &scanText{r: r, total: r.uvarint()}
	t.count = r.count(1)
	t.ends = make([]int, 0, t.count)
	t.text.Grow(int(min(t.total, 16*uint64(len(data)))))
	r.files(&res, roots, t)
	nDirs := r.count(2)
	var prevDir []byte
	for range nDirs {
		if prevDir = t.addShared(prevDir); r.err != nil {
			break
		}
	}
	r.problems(&res)
	if r.err != nil || len(r.b) != 0 {
		return ScanResult{}, errors.New("scan result: truncated or with bytes after its end")
	}
	if uint64(t.text.Len()) != t.total || len(t.ends) != t.count {
		return ScanResult{}, errors.New("scan result: the totals do not match the strings")
	}
	return res, t.strings(&res, nDirs)
}

// sameRoots reads the roots a scan result was made of and reports whether
// they are roots.
func (r *listingReader) sameRoots(roots []skill.Root) bool {
	n := r.count(5)
	if r.err == nil && n != len(roots) {
		return false
	}
	for i := range n {
		got := skill.Root{Path: string(r.bytes()), Display: string(r.bytes()), Kind: skill.SourceKind(r.bytes()),
			Agent: string(r.bytes()), Order: int(r.varint())}
		if r.err == nil && got != roots[i] {
			return false
		}
	}
	return true
}

// scanText gathers the strings of a scan result, decoded by r, in one
// buffer: count strings of total bytes, as the result says; ends are their
// ends in it.
type scanText struct {
	r     *listingReader
	text  strings.Builder // its String is the bytes written, not a copy
	total uint64
	count int
	ends  []int
	next  int // the next string strings takes
}

// add adds b as the next string.
func (t *scanText) add(b []byte) {
	if uint64(t.text.Len()+len(b)) > t.total {
		t.r.fail()
		return
	}
	t.text.Write(b)
	t.ends = append(t.ends, t.text.Len())
}

// addShared reads the next string as the length it shares with prev and
// the rest, adds it, and returns it.
func (t *scanText) addShared(prev []byte) []byte {
	shared, rest := t.r.uvarint(), t.r.bytes()
	if shared > uint64(len(prev)) || int(shared)+len(rest) > maxPathBytes {
		t.r.fail()
		return nil
	}
	cur := append(prev[:shared], rest...) // prev is in text already
	t.add(cur)
	return cur
}

// files reads res's files, their strings into t.
func (r *listingReader) files(res *ScanResult, roots []skill.Root, t *scanText) {
	if nFiles := r.count(7); nFiles > 0 {
		res.Files = make([]Found, nFiles)
	}
	var resources []skill.Resource
	var prevPath, prevRel []byte
	for i := range res.Files {
		f := &res.Files[i]
		ri := r.uvarint()
		if ri >= uint64(len(roots)) {
			r.fail()
			return
		}
		f.Root = roots[ri]
		prevPath = t.addShared(prevPath)
		prevRel = t.addShared(prevRel)
		f.Size = r.varint()
		f.ModTime = time.Unix(0, r.varint())
		if k := r.count(2); k > 0 {
			if cap(resources)-len(resources) < k {
				resources = make([]skill.Resource, 0, max(k, 64))
			}
			f.Resources = resources[len(resources) : len(resources)+k : len(resources)+k]
			resources = resources[:len(resources)+k]
			for j := range f.Resources {
				t.add(r.bytes())
				f.Resources[j].Size = r.varint()
			}
		}
		f.ResourcesTruncated = r.bool()
		if r.err != nil {
			return
		}
	}
}

// problems reads res's problems.
func (r *listingReader) problems(res *ScanResult) {
	if nProblems := r.count(6); nProblems > 0 {
		res.Problems = make([]skill.Problem, nProblems)
	}
	for i := range res.Problems {
		p := &res.Problems[i]
		p.Severity = skill.Severity(r.varint())
		p.Code, p.Field, p.File = string(r.bytes()), string(r.bytes()), string(r.bytes())
		p.Line = int(r.varint())
		p.Message = string(r.bytes())
	}
}

// strings slices the whole text into the strings of res's files and its
// nDirs folders, in the order they were added.
func (t *scanText) strings(res *ScanResult, nDirs int) error {
	all := t.text.String()
	start := 0
	take := func() string {
		s := all[start:t.ends[t.next]]
		start = t.ends[t.next]
		t.next++
		return s
	}
	for i := range res.Files {
		f := &res.Files[i]
		f.Path, f.RelPath = take(), take()
		f.Dir = filepath.Dir(f.Path)
		for j := range f.Resources {
			f.Resources[j].Path = take()
		}
		if !filepath.IsAbs(f.Path) || filepath.Base(f.Path) != SkillFile {
			return fmt.Errorf("scan result: %q is not the path of a %s", f.Path, SkillFile)
		}
	}
	if nDirs > 0 {
		res.Dirs = make([]string, nDirs)
	}
	for i := range res.Dirs {
		res.Dirs[i] = take()
	}
	return nil
}

// appendShared appends s as the length of the prefix it shares with prev
// and the rest.
func appendShared(out []byte, prev, s string) []byte {
	shared := commonPrefix(prev, s)
	out = binary.AppendUvarint(out, uint64(shared))
	return appendString(out, s[shared:])
}

func appendBool(out []byte, v bool) []byte {
	if v {
		return append(out, 1)
	}
	return append(out, 0)
}

func (r *listingReader) bool() bool {
	switch r.byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.fail()
	return false
}
