package match

import (
	"errors"
	"fmt"

	"github.com/mcpsag/router/internal/skill"
)

// The sections of a snapshot, in the order they follow the header: each
// section's writer, then its reader.

// slots writes each slot's stand-in and body error, then the catalog
// order of the live ones.
func (e *enc) slots(ix *Index) {
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
}

// sparse writes the fields' lengths and the vocabularies' postings.
func (e *enc) sparse(sp *sparse) error {
	for _, f := range sp.fields {
		e.u32s(f.lens)
		e.u64(f.lenSum)
		e.u64(uint64(f.lenDocs))
	}
	for _, v := range sp.vocabs {
		if err := e.vocab(v); err != nil {
			return err
		}
	}
	return nil
}

// vocab writes one vocabulary's terms, each with its postings list.
func (e *enc) vocab(v *vocab) error {
	terms := make([]string, len(v.lists))
	for t, id := range v.ids {
		terms[id] = t
	}
	e.u32(uint32(len(terms)))
	nf := v.nf()
	for id, t := range terms {
		e.str(t)
		if err := e.plist(v.lists[id], nf); err != nil {
			return err
		}
	}
	return nil
}

// plist writes one postings list (nil: none) of nf fields.
func (e *enc) plist(p *plist, nf int) error {
	if p == nil {
		e.u8(0)
		return nil
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
	return nil
}

// phrases writes the trigger phrases of the slots: their terms' document
// frequencies, each slot's phrases, and the phrases by first term.
func (e *enc) phrases(ph *phrases, slots int) {
	e.u32(uint32(len(ph.df)))
	for t, n := range ph.df {
		e.str(t)
		e.u32(uint32(n))
	}
	for d := range slots {
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
}

// dense writes the vector blocks as they are: which slots have a vector,
// the unit rows, the int8 rows and their scales, bounds and sums.
func (e *enc) dense(dn *dense) {
	e.u32(uint32(len(dn.blocks)))
	has := make([]byte, blockRows)
	for _, b := range dn.blocks {
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
