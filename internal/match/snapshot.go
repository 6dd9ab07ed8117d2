package match

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strconv"
	"unsafe"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/statedir"
)

// Snapshots let a restart skip analysis: WriteSnapshot saves what Build
// computed (postings, lengths, phrases, vectors as given), ReadSnapshot
// restores it, and Update of the restored index with the current skills
// reuses every skill whose indexed text did not change. A snapshot names no
// host path beyond each skill's folder, which Update matches skills by.
//
// Layout: the magic, then sections of little-endian integers, length-
// prefixed strings and raw arrays, in the order WriteSnapshot writes them,
// then the CRC-32C of all that. Each array starts at an offset that is a
// multiple of its value's size, and the vector rows at a multiple of 64
// (zero bytes pad up to it), so that ReadSnapshot can use the arrays where
// they lie instead of copying them, and the pre-scan's 64-byte loads of the
// int8 rows do not straddle cache lines. The magic is statedir.IndexMagic
// and the version statedir.IndexVersion, which changes with the layout or
// with anything that changes analysis (analyzers, normalisation); another
// version is not read.
const snapshotMagic = statedir.IndexMagic

// ErrSnapshotVersion is returned by ReadSnapshot for a snapshot of another
// version or analysis.
var ErrSnapshotVersion = errors.New("match snapshot of another version")

// snapshotHeader is the JSON header of a snapshot.
type snapshotHeader struct {
	Version int    `json:"version"`
	Config  Config `json:"config"`
	Model   string `json:"model"`
	Slots   int    `json:"slots"`
	Live    int    `json:"live"`
	Dim     int    `json:"dim"`
	// Params is set when the parameters field is indexed.
	Params bool `json:"params,omitempty"`
}

// stub is what a snapshot keeps of a skill: enough for Update to tell
// whether its indexed text changed. For a tool, ToolServer and ToolName
// are its server's name and its own, which its key and the names
// matching reads are made of.
type stub struct {
	Dir, Name, ContentHash, Description, WhenToUse string
	ToolServer, ToolName                           string
	Tags, RegTags, Triggers                        []string
	Hidden                                         bool
	Agent                                          string
}

func (e *enc) stub(st stub) {
	for _, v := range []string{st.Dir, st.Name, st.ContentHash, st.Description, st.WhenToUse, st.Agent, st.ToolServer, st.ToolName} {
		e.str(v)
	}
	for _, list := range [][]string{st.Tags, st.RegTags, st.Triggers} {
		e.u32(uint32(len(list)))
		for _, v := range list {
			e.str(v)
		}
	}
	e.bool(st.Hidden)
}

func (d *dec) stub() stub {
	var st stub
	for _, v := range []*string{&st.Dir, &st.Name, &st.ContentHash, &st.Description, &st.WhenToUse, &st.Agent, &st.ToolServer, &st.ToolName} {
		*v = d.str()
	}
	for _, list := range []*[]string{&st.Tags, &st.RegTags, &st.Triggers} {
		n := int(d.u32())
		if d.err != nil || n > 1<<16 {
			if d.err == nil {
				d.err = fmt.Errorf("a list of %d strings", n)
			}
			return st
		}
		for range n {
			*list = append(*list, d.str())
		}
	}
	st.Hidden = d.bool()
	return st
}

func stubOf(s *skill.Skill) stub {
	st := stub{Dir: s.Dir, Name: s.Name, ContentHash: s.ContentHash, Description: s.Frontmatter.Description,
		Tags: s.Frontmatter.Tags, RegTags: s.Registry.Tags, Triggers: s.Frontmatter.Triggers,
		Hidden: s.Frontmatter.Hidden, Agent: s.Root.Agent}
	if w, ok := s.Frontmatter.Extra["when_to_use"]; ok {
		st.WhenToUse = w
	}
	if s.IsTool() {
		st.ToolServer, st.ToolName = s.Tool.Server, s.Tool.Name
	}
	return st
}

func (st stub) skill() *skill.Skill {
	s := &skill.Skill{Name: st.Name, Dir: st.Dir, ContentHash: st.ContentHash, Root: skill.Root{Agent: st.Agent},
		Frontmatter: skill.Frontmatter{Name: st.Name, Description: st.Description, Tags: st.Tags, Triggers: st.Triggers, Hidden: st.Hidden},
		Registry:    skill.RegistryEntry{Tags: st.RegTags}}
	if len(st.WhenToUse) > 0 {
		s.Frontmatter.Extra = map[string]string{"when_to_use": st.WhenToUse}
	}
	if st.ToolName != "" {
		s.Kind, s.Tool = skill.EntryTool, &skill.Tool{Server: st.ToolServer, Name: st.ToolName}
	}
	return s
}

// WriteSnapshot writes what the index computed to w.
func (ix *Index) WriteSnapshot(w io.Writer) error {
	crc := crc32.New(crcTable)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<20)
	e := &enc{w: bw}
	e.bytes([]byte(snapshotMagic))
	h := snapshotHeader{Version: statedir.IndexVersion, Config: ix.cfg, Model: ix.model, Slots: len(ix.docs), Live: len(ix.byOrd),
		Params: ix.sparse.hasField(fieldParams)}
	if ix.dense != nil {
		h.Dim = ix.dense.dim
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	e.str(string(hj))
	// Slots.
	for d, s := range ix.docs {
		if s == nil {
			e.u8(0)
			continue
		}
		e.u8(1)
		e.stub(stubOf(s))
		e.bool(ix.bodyErr[d])
	}
	e.i32s(ix.byOrd)
	// Sparse.
	for _, f := range ix.sparse.fields {
		e.u32s(f.lens)
		e.u64(f.lenSum)
		e.u64(uint64(f.lenDocs))
	}
	for _, v := range ix.sparse.vocabs {
		terms := make([]string, len(v.lists))
		for t, id := range v.ids {
			terms[id] = t
		}
		e.u32(uint32(len(terms)))
		nf := v.nf()
		for id, t := range terms {
			e.str(t)
			p := v.lists[id]
			if p == nil {
				e.u8(0)
				continue
			}
			wide := p.freqs32 != nil
			e.u8(1)
			e.bool(wide)
			e.u32(uint32(len(p.docs)))
			e.u32s(p.docs)
			if wide {
				e.u32s(p.freqs32)
			} else {
				e.u16s(p.freqs16)
			}
			if len(p.df) != nf {
				return fmt.Errorf("match snapshot: list stats of %d fields, want %d", len(p.df), nf)
			}
			e.u32s(p.df)
		}
	}
	// Phrases.
	ph := ix.phrases
	e.u32(uint32(len(ph.df)))
	for t, n := range ph.df {
		e.str(t)
		e.u32(uint32(n))
	}
	for d := range ix.docs {
		list := ph.perDoc[d]
		e.u32(uint32(len(list)))
		for _, p := range list {
			e.u8(uint8(p.kind))
			e.str(p.text)
			e.u32(uint32(len(p.terms)))
			for _, t := range p.terms {
				e.str(t)
			}
		}
	}
	e.u32(uint32(len(ph.byFirst)))
	for t, refs := range ph.byFirst {
		e.str(t)
		e.u32(uint32(len(refs)))
		for _, r := range refs {
			e.u32(uint32(r.doc))
			e.u32(uint32(r.i))
		}
	}
	// The vector blocks as they are: the unit rows, which slots have one,
	// and the int8 rows.
	if ix.dense != nil {
		e.u32(uint32(len(ix.dense.blocks)))
		has := make([]byte, blockRows)
		for _, b := range ix.dense.blocks {
			for r, h := range b.has {
				has[r] = 0
				if h {
					has[r] = 1
				}
			}
			e.bytes(has)
			e.rows(b.vecs)
			e.i8s(b.q)
			e.f32s(b.scale)
			e.f32s(b.bound)
			e.i32s(b.sum)
		}
	}
	if e.err != nil {
		return e.err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ReadSnapshot restores an index from data, which WriteSnapshot wrote. Its
// skills are stand-ins that carry only what Update compares: use the result
// only as the base of Update, which attaches the current skills (and
// embedder, generation and configuration). It returns ErrSnapshotVersion
// for a snapshot of another version, and an error for a damaged one.
//
// The index uses the vectors and postings where they lie in data when data
// is aligned like them (a file mapped into memory is), and its strings (the
// terms, the stand-ins' texts) wherever they lie, instead of copying them:
// data must stay unchanged as long as the index, or any index updated from
// it, is in use. Update copies what it changes; nothing writes to data.
func ReadSnapshot(data []byte) (*Index, error) {
	d, h, err := readSnapshotHeader(data)
	if err != nil {
		return nil, err
	}
	cfg := h.Config.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match snapshot config: %w", err)
	}
	if h.Slots < 0 || h.Slots > 1<<24 || h.Live > h.Slots {
		return nil, fmt.Errorf("match snapshot: %d slots, %d live", h.Slots, h.Live)
	}
	ix := &Index{cfg: cfg, model: h.Model}
	if err := d.docs(ix, h.Slots); err != nil {
		return nil, err
	}
	if err := d.order(ix, h.Live); err != nil {
		return nil, err
	}
	if ix.sparse, err = d.sparse(cfg, h); err != nil {
		return nil, err
	}
	if ix.phrases, err = d.phrases(h.Slots, h.Live); err != nil {
		return nil, err
	}
	if h.Dim > 0 {
		ix.dense = d.dense(h.Dim, ix.docs)
	}
	if d.err == nil && d.off != len(d.b) {
		d.err = fmt.Errorf("%d bytes after the last section", len(d.b)-d.off)
	}
	if d.err != nil {
		return nil, fmt.Errorf("match snapshot: %w", d.err)
	}
	return ix, nil
}

// readSnapshotHeader checks data's checksum and magic and reads its header
// and version; the decoder it returns reads what follows.
func readSnapshotHeader(data []byte) (*dec, snapshotHeader, error) {
	var h snapshotHeader
	if len(data) < len(snapshotMagic)+4 {
		return nil, h, errors.New("match snapshot: too short (damaged or cut)")
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crcTable) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, h, errors.New("match snapshot: checksum mismatch (damaged or cut)")
	}
	d := &dec{b: body}
	if m := d.take(len(snapshotMagic)); d.err != nil || string(m) != snapshotMagic {
		return nil, h, fmt.Errorf("match snapshot: bad magic: %w", errors.Join(d.err, errors.New("not a snapshot")))
	}
	if err := json.Unmarshal([]byte(d.str()), &h); err != nil || d.err != nil {
		return nil, h, fmt.Errorf("match snapshot header: %w", errors.Join(d.err, err))
	}
	if h.Version != statedir.IndexVersion {
		got, want := strconv.Itoa(h.Version), strconv.Itoa(statedir.IndexVersion)
		return nil, h, fmt.Errorf("%w: %s, written by %s; this router reads %s", ErrSnapshotVersion, got, statedir.WrittenBy(got, want), want)
	}
	return d, h, nil
}

// docs reads the n slots' stand-ins into ix.
func (d *dec) docs(ix *Index, n int) error {
	ix.docs = make([]*skill.Skill, n)
	ix.hidden = make([]bool, n)
	ix.bodyErr = make([]bool, n)
	ix.ord = make([]int32, n)
	for s := range n {
		if d.u8() == 0 {
			continue
		}
		st := d.stub()
		if d.err != nil {
			return fmt.Errorf("match snapshot slot %d: %w", s, d.err)
		}
		ix.docs[s] = st.skill()
		ix.hidden[s] = st.Hidden
		ix.bodyErr[s] = d.bool()
		if d.err != nil {
			return fmt.Errorf("match snapshot slot %d: %w", s, d.err)
		}
	}
	return nil
}

// order reads the catalog order of ix's live slots.
func (d *dec) order(ix *Index, live int) error {
	ix.byOrd = d.i32s(live)
	ix.slotOf = make(map[string]int32, len(ix.byOrd))
	for i, s := range ix.byOrd {
		if s < 0 || int(s) >= len(ix.docs) || ix.docs[s] == nil {
			return fmt.Errorf("match snapshot: order names slot %d", s)
		}
		ix.ord[s] = int32(i)
		ix.slotOf[ix.docs[s].Key()] = s
	}
	return nil
}

// sparse reads the fields' lengths and the vocabularies' postings.
func (d *dec) sparse(cfg Config, h snapshotHeader) (*sparse, error) {
	n := h.Slots
	fields := sparseFields(cfg.Fields, cfg.BM25, h.Params)
	sp, err := newSparseShell(fields, cfg.BM25)
	if err != nil {
		return nil, err
	}
	sp.n = h.Live
	for _, f := range fields {
		f.lens = d.u32s(n)
		f.lenSum = d.u64()
		f.lenDocs = int(d.u64())
		f.setAvg()
		f.prepare()
	}
	for _, v := range sp.vocabs {
		if err := d.vocab(v, n); err != nil {
			return nil, err
		}
	}
	return sp, nil
}

// vocab reads one vocabulary's terms and postings lists, of n slots.
func (d *dec) vocab(v *vocab, n int) error {
	terms := int(d.u32())
	if d.err != nil || terms > 1<<24 {
		return fmt.Errorf("match snapshot: %d terms: %w", terms, errors.Join(d.err, errors.New("damaged")))
	}
	nf := v.nf()
	v.lists = make([]*plist, terms)
	for id := range terms {
		v.ids[d.str()] = uint32(id)
		if d.u8() == 0 {
			continue
		}
		wide := d.bool()
		l := int(d.u32())
		if d.err != nil || l > n {
			return fmt.Errorf("match snapshot: a list of %d documents: %w", l, errors.Join(d.err, errors.New("damaged")))
		}
		p := &plist{docs: d.u32s(l)}
		if wide {
			p.freqs32 = d.u32s(l * nf)
		} else {
			p.freqs16 = d.u16s(l * nf)
		}
		p.df = d.u32s(nf)
		for _, doc := range p.docs {
			if int(doc) >= n {
				return fmt.Errorf("match snapshot: a list names slot %d", doc)
			}
		}
		v.lists[id] = p
	}
	v.countTerms()
	return nil
}

// phrases reads the trigger phrases of n slots, live of them in use.
func (d *dec) phrases(n, live int) (*phrases, error) {
	ph := &phrases{perDoc: make([][]phrase, n), byFirst: map[string][]phraseRef{}, df: map[string]int32{}, n: live}
	for range int(d.u32()) {
		t := d.str()
		ph.df[t] = int32(d.u32())
		if d.err != nil {
			return nil, fmt.Errorf("match snapshot phrases: %w", d.err)
		}
	}
	for s := range n {
		k := int(d.u32())
		if d.err != nil || k > maxTriggersPerSkill+1 {
			return nil, fmt.Errorf("match snapshot: %d phrases: %w", k, errors.Join(d.err, errors.New("damaged")))
		}
		for range k {
			p := phrase{doc: int32(s), kind: phraseKind(d.u8()), text: d.str()}
			t := int(d.u32())
			if d.err != nil || t > maxPhraseTerms {
				return nil, fmt.Errorf("match snapshot: phrase of %d terms: %w", t, errors.Join(d.err, errors.New("damaged")))
			}
			for range t {
				p.terms = append(p.terms, d.str())
			}
			ph.perDoc[s] = append(ph.perDoc[s], p)
		}
	}
	for range int(d.u32()) {
		t := d.str()
		k := int(d.u32())
		if d.err != nil || k > n*(maxTriggersPerSkill+1) {
			return nil, fmt.Errorf("match snapshot: %d phrase refs: %w", k, errors.Join(d.err, errors.New("damaged")))
		}
		refs := make([]phraseRef, k)
		for i := range refs {
			refs[i] = phraseRef{doc: int32(d.u32()), i: int32(d.u32())}
			if r := refs[i]; int(r.doc) >= n || int(r.i) >= len(ph.perDoc[r.doc]) {
				return nil, errors.New("match snapshot: a phrase ref names no phrase")
			}
		}
		ph.byFirst[t] = refs
	}
	return ph, nil
}

// dense reads the vector blocks of the slots docs (nil: a free slot),
// which a valid index gives dim values per row.
func (d *dec) dense(dim int, docs []*skill.Skill) *dense {
	if dim > 1<<16 {
		d.err = fmt.Errorf("vectors of %d values", dim)
		return nil
	}
	dn := &dense{dim: dim, stride: (dim + 63) &^ 63}
	nb := int(d.u32())
	if d.err == nil && nb != (len(docs)+blockRows-1)/blockRows {
		d.err = fmt.Errorf("%d vector blocks for %d slots", nb, len(docs))
	}
	for bi := 0; bi < nb && d.err == nil; bi++ {
		b := &denseBlock{has: make([]bool, blockRows)}
		for r, h := range d.take(blockRows) {
			i := bi*blockRows + r
			switch {
			case h > 1 || h == 1 && (i >= len(docs) || docs[i] == nil):
				d.err = fmt.Errorf("vector block %d: row %d marked %d", bi, r, h)
			case h == 1:
				b.has[r] = true
				dn.count++
			}
		}
		b.vecs = d.rows(blockRows * dim)
		b.q = d.i8s(blockRows * dn.stride)
		b.scale, b.bound, b.sum = d.f32s(blockRows), d.f32s(blockRows), d.i32s(blockRows)
		dn.blocks = append(dn.blocks, b)
	}
	return dn
}

// enc writes the snapshot's encoding; the first error sticks.
type enc struct {
	w   *bufio.Writer
	n   int // bytes written
	err error
	buf [8]byte
}

func (e *enc) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
		e.n += len(b)
	}
}
func (e *enc) u8(v uint8) { e.bytes([]byte{v}) }
func (e *enc) bool(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}
func (e *enc) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}
func (e *enc) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}
func (e *enc) str(s string) {
	e.u32(uint32(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += len(s)
	}
}

// array writes v after the zero bytes that bring the offset to a multiple
// of align.
func array[T number](e *enc, v []T, align int) {
	var pad [rowAlign]byte
	e.bytes(pad[:padding(e.n, align)])
	e.bytes(asBytes(v))
}
func (e *enc) u32s(v []uint32)  { array(e, v, 4) }
func (e *enc) i32s(v []int32)   { array(e, v, 4) }
func (e *enc) u16s(v []uint16)  { array(e, v, 2) }
func (e *enc) f32s(v []float32) { array(e, v, 4) }

// i8s writes int8 vector rows, rows the float32 ones.
func (e *enc) i8s(v []int8)     { array(e, v, rowAlign) }
func (e *enc) rows(v []float32) { array(e, v, rowAlign) }

// rowAlign is the alignment of the vector rows in a snapshot: a cache line.
const rowAlign = 64

// padding is the number of bytes from offset off to the next multiple of
// size.
func padding(off, size int) int { return (size - off%size) % size }

// number is a value type of the snapshot's arrays.
type number interface {
	int8 | uint16 | uint32 | int32 | float32
}

func sizeOf[T number]() int {
	var zero T
	return int(unsafe.Sizeof(zero))
}

// bytesOf views a numeric slice as its bytes, in host order.
func bytesOf[T number](v []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*sizeOf[T]())
}

// dec reads the snapshot's encoding from memory; the first error sticks
// and later reads return zero values.
type dec struct {
	b   []byte
	off int
	err error
}

// take returns the next n bytes of b, capped so that appending copies.
func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.err = io.ErrUnexpectedEOF
		return nil
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}
func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (d *dec) bool() bool { return d.u8() != 0 }
func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// str reads a string where it lies in b, not a copy of it: like the
// vectors and postings, it is valid as long as b is unchanged.
func (d *dec) str() string {
	n := int(d.u32())
	if d.err == nil && n > 1<<24 {
		d.err = fmt.Errorf("string of %d bytes", n)
	}
	b := d.take(n)
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// numeric reads an array of n values that starts at the next multiple of
// align: where they lie in b when the host is little-endian and b holds
// them aligned, else in a new slice.
func numeric[T number](d *dec, n, align int) []T {
	if d.err != nil || n < 0 || n > 1<<30 {
		if d.err == nil {
			d.err = fmt.Errorf("array of %d values", n)
		}
		return nil
	}
	size := sizeOf[T]()
	d.take(padding(d.off, align))
	raw := d.take(n * size)
	if d.err != nil {
		return nil
	}
	if n == 0 {
		return []T{}
	}
	p := unsafe.Pointer(unsafe.SliceData(raw))
	if littleEndian && uintptr(p)%uintptr(size) == 0 {
		return unsafe.Slice((*T)(p), n)
	}
	out := make([]T, n)
	b := bytesOf(out)
	copy(b, raw)
	if !littleEndian {
		swapBytes(b, size)
	}
	return out
}
func (d *dec) u32s(n int) []uint32  { return numeric[uint32](d, n, 4) }
func (d *dec) i32s(n int) []int32   { return numeric[int32](d, n, 4) }
func (d *dec) u16s(n int) []uint16  { return numeric[uint16](d, n, 2) }
func (d *dec) f32s(n int) []float32 { return numeric[float32](d, n, 4) }
func (d *dec) i8s(n int) []int8     { return numeric[int8](d, n, rowAlign) }
func (d *dec) rows(n int) []float32 { return numeric[float32](d, n, rowAlign) }

// asBytes is v's bytes as the snapshot stores them: little-endian (a copy,
// swapped, on a big-endian host).
func asBytes[T number](v []T) []byte {
	b := bytesOf(v)
	if !littleEndian {
		b = slices.Clone(b)
		swapBytes(b, sizeOf[T]())
	}
	return b
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// swapBytes reverses the byte order of every size-byte value in b.
func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		for a, z := i, i+size-1; a < z; a, z = a+1, z-1 {
			b[a], b[z] = b[z], b[a]
		}
	}
}
