package match

import (
	"sort"
)

// vocab is the term dictionary and the postings of the fields that share one
// analyzer. Its lists are immutable: an update copies the lists it changes
// and shares the others with the index it came from.
type vocab struct {
	analyzer Analyzer
	a        int   // analyzerIndex(analyzer)
	fields   []int // the fields (indexes into sparse.fields) of this analyzer, in field order
	ids      map[string]uint32
	lists    []*plist // by term id; nil when no document holds the term
	terms    int      // lists that are not nil: the vocab's distinct terms
}

// nf returns the number of fields of the vocab.
func (v *vocab) nf() int { return len(v.fields) }

// list returns the postings of term, or nil.
func (v *vocab) list(term string) *plist {
	id, ok := v.ids[term]
	if !ok {
		return nil
	}
	return v.lists[id]
}

// plist is one term's postings in one vocab: the documents (slots,
// ascending) that hold the term in some field of the vocab, and the term's
// frequency in each of those fields. Frequencies are 16 bits wide unless one
// of them is larger.
type plist struct {
	docs    []uint32
	freqs16 []uint16 // len(docs)*nf, document-major
	freqs32 []uint32 // used instead of freqs16 when some frequency exceeds 65535
	// df holds, per field, the number of documents with the term in that
	// field.
	df []uint32
}

// freq returns the frequency of posting i in field j.
func (p *plist) freq(i, j, nf int) uint32 {
	if p.freqs32 != nil {
		return p.freqs32[i*nf+j]
	}
	return uint32(p.freqs16[i*nf+j])
}

// find returns the index of doc in p.docs, or -1, searching from lo.
func (p *plist) find(doc uint32, lo int) int {
	i := lo + sort.Search(len(p.docs)-lo, func(k int) bool { return p.docs[lo+k] >= doc })
	if i < len(p.docs) && p.docs[i] == doc {
		return i
	}
	return -1
}

// posting is one document's frequencies of a term, while lists are built.
type posting struct {
	doc   uint32
	freqs []uint32 // by field of the vocab
}

// stats computes df.
func (p *plist) stats(nf int) {
	clear(p.df)
	for i := range p.docs {
		for j := range nf {
			if p.freq(i, j, nf) != 0 {
				p.df[j]++
			}
		}
	}
}

// edit returns a copy of p without the documents drop says to drop and
// with the postings in add (sorted by document), or nil when nothing is
// left.
func (p *plist) edit(drop []bool, add []posting, nf int) *plist {
	n := 0
	wide := false
	if p != nil {
		n = len(p.docs)
		wide = p.freqs32 != nil
	}
	for _, a := range add {
		for _, f := range a.freqs {
			wide = wide || f > 0xffff
		}
	}
	q := &plist{docs: make([]uint32, 0, n+len(add)), df: make([]uint32, nf)}
	if wide {
		q.freqs32 = make([]uint32, 0, (n+len(add))*nf)
	} else {
		q.freqs16 = make([]uint16, 0, (n+len(add))*nf)
	}
	push := func(d uint32, freq func(j int) uint32) {
		q.docs = append(q.docs, d)
		for j := range nf {
			if wide {
				q.freqs32 = append(q.freqs32, freq(j))
			} else {
				q.freqs16 = append(q.freqs16, uint16(freq(j)))
			}
		}
	}
	i, j := 0, 0
	for i < n || j < len(add) {
		if j < len(add) && (i >= n || add[j].doc < p.docs[i]) {
			a := add[j]
			push(a.doc, func(k int) uint32 { return a.freqs[k] })
			j++
			continue
		}
		if d := p.docs[i]; int(d) >= len(drop) || !drop[d] {
			push(d, func(k int) uint32 { return p.freq(i, k, nf) })
		}
		i++
	}
	if len(q.docs) == 0 {
		return nil
	}
	q.stats(nf)
	return q
}

// holdsAny reports whether p holds one of docs (few, any order).
func (p *plist) holdsAny(docs []int32) bool {
	for _, d := range docs {
		if p.find(uint32(d), 0) >= 0 {
			return true
		}
	}
	return false
}

// analyzedDoc is one document's terms, per vocab: each distinct term with
// its frequency in each field of the vocab, and each field's length.
type analyzedDoc struct {
	terms [][]termFreqs // by vocab
	lens  []uint32      // by field
}

type termFreqs struct {
	term  string
	freqs []uint32 // by field of the vocab
}

// analyzeDoc analyzes the fields of one document.
func (s *sparse) analyzeDoc(d sparseDoc) analyzedDoc {
	out := analyzedDoc{terms: make([][]termFreqs, len(s.vocabs)), lens: make([]uint32, len(s.fields))}
	for vi, v := range s.vocabs {
		at := map[string]int{}
		for j, fi := range v.fields {
			text := d[fi]
			if text == "" {
				continue
			}
			toks := s.ta.analyze(v.a, text)
			out.lens[fi] = uint32(len(toks))
			for _, tok := range toks {
				t := string(tok.Term)
				k, ok := at[t]
				if !ok {
					k = len(out.terms[vi])
					at[t] = k
					out.terms[vi] = append(out.terms[vi], termFreqs{term: t, freqs: make([]uint32, v.nf())})
				}
				out.terms[vi][k].freqs[j]++
			}
		}
	}
	return out
}
