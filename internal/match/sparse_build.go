package match

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"
)

// Building the sparse index: analyzing documents into postings, from
// scratch (newSparse) or as an edit of the last generation's (update).

// newSparseShell returns an empty sparse index over fields: analyzers and
// one vocab per analyzer, no documents.
func newSparseShell(fields []*sparseField, bm BM25) (*sparse, error) {
	im, err := newMapping(fields)
	if err != nil {
		return nil, err
	}
	ans, err := analyzers(im)
	if err != nil {
		return nil, err
	}
	s := &sparse{fields: fields, analyzers: ans, ta: newTextAnalysis(ans), k1: bm.K1, sum: bm.Scoring == ScoringSum}
	at := map[Analyzer]*vocab{}
	for i, f := range fields {
		v := at[f.analyzer]
		if v == nil {
			v = &vocab{analyzer: f.analyzer, a: analyzerIndex(f.analyzer), ids: map[string]uint32{}}
			at[f.analyzer] = v
			s.vocabs = append(s.vocabs, v)
		}
		v.fields = append(v.fields, i)
	}
	return s, nil
}

// newSparse indexes docs (document slot i is docs[i]) in memory. Documents
// are analyzed in parallel, a chunk at a time, and their postings appended
// in slot order, so every list comes out sorted.
func newSparse(ctx context.Context, fields []*sparseField, docs []sparseDoc, bm BM25) (*sparse, error) {
	s, err := newSparseShell(fields, bm)
	if err != nil {
		return nil, err
	}
	lists, err := s.collect(ctx, docs)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		f.sumLens()
	}
	for vi, v := range s.vocabs {
		v.pack(lists[vi])
	}
	return s, nil
}

// building is a postings list while newSparse collects it.
type building struct {
	docs  []uint32
	freqs []uint32 // nf per posting
}

// collect analyzes docs into s's fields' lengths and returns each vocab's
// postings lists, numbered by term id.
func (s *sparse) collect(ctx context.Context, docs []sparseDoc) ([][]building, error) {
	n := len(docs)
	s.n = n
	for _, f := range s.fields {
		f.lens = make([]uint32, n)
	}
	lists := make([][]building, len(s.vocabs))
	const chunk = 2048
	analyzed := make([]analyzedDoc, min(chunk, n))
	for lo := 0; lo < n; lo += chunk {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(n, lo+chunk)
		s.analyzeAll(docs[lo:hi], analyzed)
		for i := lo; i < hi; i++ {
			ad := analyzed[i-lo]
			for fi, l := range ad.lens {
				s.fields[fi].lens[i] = l
			}
			for vi, v := range s.vocabs {
				for _, tf := range ad.terms[vi] {
					id, ok := v.ids[tf.term]
					if !ok {
						id = uint32(len(lists[vi]))
						v.ids[tf.term] = id
						lists[vi] = append(lists[vi], building{})
					}
					b := &lists[vi][id]
					b.docs = append(b.docs, uint32(i))
					b.freqs = append(b.freqs, tf.freqs...)
				}
			}
		}
	}
	return lists, nil
}

// sumLens sums the field's lengths over the documents that have it.
func (f *sparseField) sumLens() {
	f.lenSum, f.lenDocs = 0, 0
	for _, l := range f.lens {
		if l > 0 {
			f.lenSum += uint64(l)
			f.lenDocs++
		}
	}
	f.setAvg()
	f.prepare()
}

// pack makes v's postings lists from those collected, in one arena for
// every list's documents and one for their 16-bit frequencies, and frees
// the collected ones as it goes.
func (v *vocab) pack(lists []building) {
	nf := v.nf()
	total := 0
	for _, b := range lists {
		total += len(b.docs)
	}
	docArena := make([]uint32, 0, total)
	freqArena := make([]uint16, 0, total*nf)
	v.lists = make([]*plist, len(lists))
	for id, b := range lists {
		wide := false
		for _, f := range b.freqs {
			wide = wide || f > 0xffff
		}
		p := &plist{df: make([]uint32, nf)}
		start := len(docArena)
		docArena = append(docArena, b.docs...)
		p.docs = docArena[start:len(docArena):len(docArena)]
		if wide {
			p.freqs32 = b.freqs
		} else {
			fs := len(freqArena)
			for _, f := range b.freqs {
				freqArena = append(freqArena, uint16(f))
			}
			p.freqs16 = freqArena[fs:len(freqArena):len(freqArena)]
		}
		p.stats(nf)
		v.lists[id] = p
		lists[id] = building{}
	}
	v.countTerms()
}

// update returns the sparse index of the next generation: the documents of
// slots drop removed, docs analyzed into the slots fill, over slots slots of
// which live hold a document. fields are the new generation's fields (same
// names and analyzers, maybe other weights). It also returns how many
// postings lists it copied.
func (s *sparse) update(ctx context.Context, fields []*sparseField, bm BM25, slots int, drop, fill []int32, docs []sparseDoc, live int) (*sparse, int, error) {
	ns := &sparse{fields: fields, analyzers: s.analyzers, ta: s.ta, n: live, k1: bm.K1, sum: bm.Scoring == ScoringSum}
	for i, f := range fields {
		old := s.fields[i]
		f.lens = make([]uint32, slots)
		copy(f.lens, old.lens)
		f.lenSum, f.lenDocs = old.lenSum, old.lenDocs
	}
	dropped := make([]bool, slots)
	for _, d := range drop {
		dropped[d] = true
		for _, f := range fields {
			if l := f.lens[d]; l > 0 {
				f.lenSum -= uint64(l)
				f.lenDocs--
			}
			f.lens[d] = 0
		}
	}
	analyzed := make([]analyzedDoc, len(docs))
	s.analyzeAll(docs, analyzed)
	for k, d := range fill {
		for fi, l := range analyzed[k].lens {
			f := fields[fi]
			f.lens[d] = l
			if l > 0 {
				f.lenSum += uint64(l)
				f.lenDocs++
			}
		}
	}
	for _, f := range fields {
		f.setAvg()
		f.prepare()
	}
	copied := 0
	for vi, v := range s.vocabs {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		nv, n := v.update(vi, drop, fill, dropped, analyzed)
		ns.vocabs = append(ns.vocabs, nv)
		copied += n
	}
	return ns, copied, nil
}

// update returns the vocabulary of the next generation, v being the vi-th
// of the current one: the postings lists that hold a document of the slots
// drop (dropped, by slot) or that gain one of analyzed, in the slots fill,
// are copied and edited; the others are shared. It also returns how many
// lists it copied.
func (v *vocab) update(vi int, drop, fill []int32, dropped []bool, analyzed []analyzedDoc) (*vocab, int) {
	nv := &vocab{analyzer: v.analyzer, a: v.a, fields: v.fields, ids: v.ids, lists: slices.Clone(v.lists), terms: v.terms}
	adds := map[uint32][]posting{}
	cloned := false
	for k, d := range fill {
		for _, tf := range analyzed[k].terms[vi] {
			id, ok := nv.ids[tf.term]
			if !ok {
				if !cloned {
					nv.ids, cloned = maps.Clone(v.ids), true
				}
				id = uint32(len(nv.lists))
				nv.ids[tf.term] = id
				nv.lists = append(nv.lists, nil)
			}
			adds[id] = append(adds[id], posting{doc: uint32(d), freqs: tf.freqs})
		}
	}
	affected := map[uint32]bool{}
	for id := range adds {
		affected[id] = true
	}
	if len(drop) > 0 {
		for id, pl := range v.lists {
			if pl != nil && !affected[uint32(id)] && pl.holdsDropped(drop, dropped) {
				affected[uint32(id)] = true
			}
		}
	}
	for id := range affected {
		add := adds[id]
		slices.SortFunc(add, func(a, b posting) int { return int(int64(a.doc) - int64(b.doc)) })
		was := nv.lists[id] != nil
		nv.lists[id] = nv.lists[id].edit(dropped, add, nv.nf())
		switch is := nv.lists[id] != nil; {
		case was && !is:
			nv.terms--
		case !was && is:
			nv.terms++
		}
	}
	return nv, len(affected)
}

// holdsDropped reports whether the list holds a document of the slots drop
// (dropped, by slot): looked up in the list when they are few, else by a
// walk of the list.
func (pl *plist) holdsDropped(drop []int32, dropped []bool) bool {
	if len(drop) <= 16 {
		return pl.holdsAny(drop)
	}
	for _, d := range pl.docs {
		if dropped[d] {
			return true
		}
	}
	return false
}

// analyzeAll analyzes docs into out, on up to GOMAXPROCS goroutines.
func (s *sparse) analyzeAll(docs []sparseDoc, out []analyzedDoc) {
	workers := min(runtime.GOMAXPROCS(0), (len(docs)+63)/64)
	if workers < 2 {
		for i, d := range docs {
			out[i] = s.analyzeDoc(d)
		}
		return
	}
	var wg sync.WaitGroup
	per := (len(docs) + workers - 1) / workers
	for lo := 0; lo < len(docs); lo += per {
		hi := min(len(docs), lo+per)
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = s.analyzeDoc(docs[i])
			}
		})
	}
	wg.Wait()
}
