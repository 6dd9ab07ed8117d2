package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
)

// The encoding of a file record, the on-disk format of the files bucket
// (inside the seal). It is binary and positional: a warm restart decodes
// every record, and at 100,000 skills JSON took longer to decode than the
// rest of the records' reading. Integers are varints, strings a length and
// their bytes, lists and maps a count and their elements (maps in key
// order, so the same record always encodes to the same bytes). Any change
// here must bump statedir.RecordFormat (and add its changelog line).
// TestSkillFieldsCached and TestFilledRecordRoundTrip fail when a field of
// skill.Skill, or of a struct it stores, is not carried through here.
//
//	record    = mtime_ns size sha256 problems has_good [version]
//	version   = name frontmatter body_line body_tokens sha256 frontmatter_sha256 size mtime_ns problems
//	fm        = name description license compatibility metadata allowed_tools triggers tags flags extra
//	flags     = bit 0 hidden, bit 1 disable_model_invocation, bit 2 user_invocable set, bit 3 its value
//	problem   = severity code field file line message

const (
	flagHidden = 1 << iota
	flagDisableModelInvocation
	flagUserInvocableSet
	flagUserInvocable
)

func encodeRecord(r *FileRecord) []byte {
	var e recordEncoder
	e.int(r.ModTimeNano)
	e.int(r.Size)
	e.str(r.ContentHash)
	e.problems(r.Problems)
	if g := r.Good; g == nil {
		e.b = append(e.b, 0)
	} else {
		e.b = append(e.b, 1)
		e.str(g.Name)
		e.frontmatter(&g.Frontmatter)
		e.int(int64(g.BodyLine))
		e.int(int64(g.BodyTokens))
		e.str(g.ContentHash)
		e.str(g.FrontmatterHash)
		e.int(g.Size)
		e.int(g.ModTimeNano)
		e.problems(g.Problems)
	}
	return e.b
}

type recordEncoder struct{ b []byte }

func (e *recordEncoder) int(v int64) { e.b = binary.AppendVarint(e.b, v) }

func (e *recordEncoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *recordEncoder) strs(ss []string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(ss)))
	for _, s := range ss {
		e.str(s)
	}
}

func (e *recordEncoder) strMap(m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = binary.AppendUvarint(e.b, uint64(len(keys)))
	for _, k := range keys {
		e.str(k)
		e.str(m[k])
	}
}

func (e *recordEncoder) problems(ps []skill.Problem) {
	e.b = binary.AppendUvarint(e.b, uint64(len(ps)))
	for _, p := range ps {
		e.int(int64(p.Severity))
		e.str(p.Code)
		e.str(p.Field)
		e.str(p.File)
		e.int(int64(p.Line))
		e.str(p.Message)
	}
}

func (e *recordEncoder) frontmatter(f *skill.Frontmatter) {
	e.str(f.Name)
	e.str(f.Description)
	e.str(f.License)
	e.str(f.Compatibility)
	e.strMap(f.Metadata)
	e.strs(f.AllowedTools)
	e.strs(f.Triggers)
	e.strs(f.Tags)
	var flags byte
	if f.Hidden {
		flags |= flagHidden
	}
	if f.DisableModelInvocation {
		flags |= flagDisableModelInvocation
	}
	if f.UserInvocable != nil {
		flags |= flagUserInvocableSet
		if *f.UserInvocable {
			flags |= flagUserInvocable
		}
	}
	e.b = append(e.b, flags)
	e.strMap(f.Extra)
}

// errRecordShort says a record ends before its last field.
var errRecordShort = errors.New("record ends early")

// decodeRecord decodes what encodeRecord wrote. Any other bytes give an
// error, never a panic: lengths and counts are checked against what is
// left before anything is allocated for them.
func decodeRecord(b []byte) (*FileRecord, error) {
	d := recordDecoder{b: b}
	r := &FileRecord{ModTimeNano: d.int(), Size: d.int(), ContentHash: d.str(), Problems: d.problems()}
	switch d.byte() {
	case 0:
	case 1:
		g := &Version{Name: d.str()}
		// The names, and the two hashes of a file whose last version
		// parsed, are usually equal: they share one string.
		d.frontmatter(&g.Frontmatter, g.Name)
		g.BodyLine, g.BodyTokens = d.smallInt(), d.smallInt()
		g.ContentHash, g.FrontmatterHash = d.strLike(r.ContentHash), d.str()
		g.Size, g.ModTimeNano = d.int(), d.int()
		g.Problems = d.problems()
		g.FoldedName = skillmd.FoldName(g.Name)
		r.Good = g
	default:
		d.fail(errors.New("bad good-version marker"))
	}
	if d.err == nil && len(d.b) > 0 {
		d.fail(fmt.Errorf("%d bytes after the record", len(d.b)))
	}
	if d.err != nil {
		return nil, d.err
	}
	return r, nil
}

type recordDecoder struct {
	b   []byte
	err error
}

func (d *recordDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *recordDecoder) byte() byte {
	if len(d.b) == 0 {
		d.fail(errRecordShort)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *recordDecoder) int() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errRecordShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// smallInt is an int field that must fit in 32 bits.
func (d *recordDecoder) smallInt() int {
	v := d.int()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

// count reads a length or count of items of at least min bytes each, and
// checks that that many could follow.
func (d *recordDecoder) count(min int) int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errRecordShort)
		return 0
	}
	d.b = d.b[n:]
	if v > uint64(len(d.b)/min) {
		d.fail(fmt.Errorf("%d items of %d bytes or more in %d bytes", v, min, len(d.b)))
		return 0
	}
	return int(v)
}

func (d *recordDecoder) str() string {
	n := d.count(1)
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// strLike is str, returning like itself when the string equals it.
func (d *recordDecoder) strLike(like string) string {
	n := d.count(1)
	s := like
	if string(d.b[:n]) != like { // compared without a copy
		s = string(d.b[:n])
	}
	d.b = d.b[n:]
	return s
}

func (d *recordDecoder) strs() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.str()
	}
	return out
}

func (d *recordDecoder) strMap() map[string]string {
	n := d.count(2)
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := range n {
		k := d.str()
		if i > 0 && k <= prev {
			d.fail(fmt.Errorf("map key %q out of order", k))
			return nil
		}
		m[k], prev = d.str(), k
	}
	return m
}

func (d *recordDecoder) problems() []skill.Problem {
	n := d.count(6)
	if n == 0 {
		return nil
	}
	out := make([]skill.Problem, n)
	for i := range out {
		out[i] = skill.Problem{Severity: skill.Severity(d.smallInt()), Code: d.str(), Field: d.str(), File: d.str(), Line: d.smallInt(), Message: d.str()}
	}
	return out
}

// frontmatter decodes f; its name shares name's string when equal.
func (d *recordDecoder) frontmatter(f *skill.Frontmatter, name string) {
	f.Name, f.Description, f.License, f.Compatibility = d.strLike(name), d.str(), d.str(), d.str()
	f.Metadata = d.strMap()
	f.AllowedTools, f.Triggers, f.Tags = d.strs(), d.strs(), d.strs()
	flags := d.byte()
	if flags&^(flagHidden|flagDisableModelInvocation|flagUserInvocableSet|flagUserInvocable) != 0 {
		d.fail(fmt.Errorf("unknown frontmatter flags %#x", flags))
	}
	f.Hidden = flags&flagHidden != 0
	f.DisableModelInvocation = flags&flagDisableModelInvocation != 0
	if flags&flagUserInvocableSet != 0 {
		v := flags&flagUserInvocable != 0
		f.UserInvocable = &v
	}
	f.Extra = d.strMap()
}
