package match

import (
	"context"
	"math"

	"github.com/blevesearch/bleve/v2/analysis"
)

// maxQueryTerms caps the distinct terms of one task that BM25 looks up, so a
// 16 KiB task of unique words costs a bounded number of dictionary lookups.
const maxQueryTerms = 256

// sparseField is one indexed field.
type sparseField struct {
	name     string
	weight   float64
	b        float64 // length normalisation
	analyzer Analyzer
	lens     []uint32 // analyzed length per document slot
	lenSum   uint64   // over live documents
	lenDocs  int      // live documents where the field is not empty
	avgLen   float64  // lenSum / lenDocs
	// norm and x1 are, per slot, BM25's length normalisation and the
	// weighted, normalised frequency of a term found once: the arithmetic
	// of every posting, done once per document.
	norm []float64
	x1   []float32
}

func (f *sparseField) setAvg() {
	f.avgLen = 0
	if f.lenDocs > 0 {
		f.avgLen = float64(f.lenSum) / float64(f.lenDocs)
	}
}

// prepare computes norm and x1 for every slot from lens, b, weight and
// avgLen.
func (f *sparseField) prepare() {
	if len(f.norm) != len(f.lens) {
		f.norm, f.x1 = make([]float64, len(f.lens)), make([]float32, len(f.lens))
	}
	for d, l := range f.lens {
		norm := 1 - f.b + f.b*float64(l)/f.avgLen
		f.norm[d] = norm
		f.x1[d] = float32(f.weight * 1 / norm)
	}
}

// sparse is the BM25 side of an Index: the postings of the skill fields, one
// vocab per analyzer, analyzed with bleve's analyzers. The scores are BM25F
// (or, on request, Okapi BM25 summed over fields with per-field weights).
// Bleve's own query scoring mixes in a coordination factor, a query norm and
// squared idf, and ranked 5 to 6 NDCG@10 points lower on Seal-Tools
// (docs/matching.md).
type sparse struct {
	fields    []*sparseField
	vocabs    []*vocab // one per analyzer in use, in order of its first field
	analyzers map[Analyzer]analysis.Analyzer
	ta        *textAnalysis
	n         int // live documents
	k1        float64
	sum       bool // per-field BM25 sum instead of BM25F
}

// distinctTerms is the number of distinct (analyzer, term) pairs indexed.
func (s *sparse) distinctTerms() int {
	n := 0
	for _, v := range s.vocabs {
		n += v.terms
	}
	return n
}

// emptyVocab reports whether no document has text in any field of v.
func (s *sparse) emptyVocab(v *vocab) bool {
	for _, fi := range v.fields {
		if s.fields[fi].lenDocs > 0 {
			return false
		}
	}
	return true
}

// countTerms sets v.terms from v.lists.
func (v *vocab) countTerms() {
	v.terms = 0
	for _, pl := range v.lists {
		if pl != nil {
			v.terms++
		}
	}
}

// sparseDoc is the text of one document, field by field, aligned with
// sparse.fields.
type sparseDoc []string

// queryStats describe how a task met the BM25 vocabulary; they feed the
// abstention features.
type queryStats struct {
	terms, known int     // distinct (analyzer, term) pairs, and how many occur in some field
	selfScore    float64 // the score of an ideal document that holds every term (BM25F only)
	// idfMass is the summed idf of the task's distinct forms, per vocab (a
	// form no skill holds counts with the largest idf), leaving out vocabs
	// whose fields are empty in every skill, which cannot hold any term.
	idfMass float64
}

// coverage is the share of the task's terms that occur in some indexed
// field, 0 for a task without terms.
func (st queryStats) coverage() float64 {
	if st.terms == 0 {
		return 0
	}
	return float64(st.known) / float64(st.terms)
}

// idf is BM25's inverse document frequency (the Lucene variant, never
// negative).
func (s *sparse) idf(df int) float64 {
	n := float64(s.n)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// queryTerm is one distinct word of a task, in the form each analyzer
// gives it (by analyzerIndex; empty for an analyzer no field uses).
type queryTerm [numAnalyzers]string

// analyzedTask is a task as the index reads it: its distinct terms, and its
// terms under the stemming analyzer in order (for trigger phrases).
type analyzedTask struct {
	terms []queryTerm
	stem  []string
}

// analyzeTask analyzes text (prepared by normalizeText) with every analyzer
// in use and groups the forms of each word by its position, so "forms" is
// one term whose stemmed fields look up "form" and whose plain fields look
// up "forms". Terms are distinct and in order of first occurrence, at most
// maxQueryTerms. sc lends the maps it works with.
func (s *sparse) analyzeTask(text string, sc *scratch) analyzedTask {
	var at analyzedTask
	if text == "" {
		return at
	}
	forms := s.taskForms(text)
	stem := forms[analyzerIndex(AnalyzerStem)]
	at.stem = make([]string, len(stem))
	for i, t := range stem {
		at.stem[i] = string(t.Term)
	}
	at.terms = s.alignForms(forms, sc)
	return at
}

// taskForms analyzes text with the stemming analyzer and every other one a
// vocab uses.
func (s *sparse) taskForms(text string) [numAnalyzers]analysis.TokenStream {
	shared := s.ta.shared(text)
	var forms [numAnalyzers]analysis.TokenStream
	stem := analyzerIndex(AnalyzerStem)
	for _, a := range []int{stem, analyzerIndex(AnalyzerLight), analyzerIndex(AnalyzerPlain)} {
		used := a == stem
		for _, v := range s.vocabs {
			used = used || v.a == a
		}
		if !used {
			continue
		}
		if shared != nil {
			forms[a] = s.ta.finish(a, shared)
		} else {
			forms[a] = s.ta.full[a].Analyze([]byte(text))
		}
	}
	return forms
}

// alignForms groups the forms of each word by its position into the task's
// terms: distinct, in order of first occurrence, at most maxQueryTerms.
func (s *sparse) alignForms(forms [numAnalyzers]analysis.TokenStream, sc *scratch) []queryTerm {
	// Every analyzer drops the same stop words, so their tokens align; a
	// fallback without a shared chain aligns them by position.
	byPos, seen := sc.termAt, sc.termSeen
	var order []int
	var all []queryTerm
	for _, v := range s.vocabs {
		for _, tok := range forms[v.a] {
			k, ok := byPos[tok.Position]
			if !ok {
				k = len(all)
				byPos[tok.Position] = k
				all = append(all, queryTerm{})
				order = append(order, tok.Position)
			}
			all[k][v.a] = string(tok.Term)
		}
	}
	idx := make([]int, len(order))
	for i := range idx {
		idx[i] = i
	}
	// Positions come in increasing order from each analyzer; sort in case
	// a fallback chain disagrees.
	sortByPosition(idx, order)
	var terms []queryTerm
	for _, i := range idx {
		qt := all[i]
		if seen[qt] {
			continue
		}
		seen[qt] = true
		terms = append(terms, qt)
		if len(terms) == maxQueryTerms {
			break
		}
	}
	return terms
}

func sortByPosition(idx, pos []int) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && pos[idx[j]] < pos[idx[j-1]]; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// qpair is one (vocab, form) of a task that BM25F scores: its postings and
// idf.
type qpair struct {
	v   *vocab
	pl  *plist
	idf float64
}

// sparseResult is what scoring leaves besides the scratch's acc and
// touched: how the task met the vocabulary.
type sparseResult struct {
	stats queryStats
}

// score computes each document's BM25 score for the task into sc.acc and
// appends the documents it touched (their first nonzero score) to
// sc.touched, or, when the task's postings cover most documents, sets
// sc.everySlot instead. acc must be all zero on entry for every slot. Each touched
// document also gets in sc.cover (all zero on entry) the summed idf of the
// task's forms it holds in some field of their vocab, added in task order:
// how much of the task one skill covers.
//
// With BM25F (the default) each term's frequencies in the fields of one
// vocab are weighted, length-normalised per field and summed before one
// saturation, and its idf counts the documents holding it in any of them;
// the per-field sum scores each field as its own BM25 document. Every
// posting is scored: with the norms computed once per document, a posting
// costs a multiply-add, and long tasks at 10,000 skills stay within a
// couple of milliseconds (docs/benchmarks.md).
func (s *sparse) score(ctx context.Context, task analyzedTask, sc *scratch) (sparseResult, error) {
	var res sparseResult
	if s.n == 0 {
		return res, nil
	}
	pairs, total := s.taskPairs(task, sc.pairs[:0], sc.pairsSeen, &res.stats)
	sc.pairs = pairs
	if s.sum {
		return res, s.scoreSum(ctx, pairs, sc)
	}
	// When the postings cover most documents, a test per posting to list
	// the touched ones costs more than reading every slot's score after.
	track := total < len(sc.acc)/2
	sc.everySlot = !track
	for _, p := range pairs {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		s.scoreAll(p, sc, track)
	}
	return res, nil
}

// taskPairs appends to pairs the task's distinct (vocab, form) pairs that
// some document holds, in task order (each term, then each vocab), and
// returns them with their postings total. It fills st: the distinct forms,
// those known, the ideal document's BM25F score and the idf mass (a form no
// document holds counts with the largest idf; vocabs without text in any
// document are left out, as no form can be found there). seen, empty,
// collects the pairs looked up.
func (s *sparse) taskPairs(task analyzedTask, pairs []qpair, seen map[[2]string]bool, st *queryStats) ([]qpair, int) {
	total := 0
	k1 := s.k1
	for _, qt := range task.terms {
		for _, v := range s.vocabs {
			form := qt[v.a]
			if form == "" {
				continue
			}
			key := [2]string{string(v.analyzer), form}
			if seen[key] {
				continue
			}
			seen[key] = true
			st.terms++
			pl := v.list(form)
			df := 0
			if pl != nil {
				df = len(pl.docs)
				st.known++
			}
			idf := s.idf(df)
			if !s.emptyVocab(v) {
				st.idfMass += idf
			}
			if !s.sum {
				st.selfScore += idf * (k1 + 1)
			}
			if pl == nil {
				continue
			}
			total += df
			pairs = append(pairs, qpair{v: v, pl: pl, idf: idf})
		}
	}
	return pairs, total
}

// contribution is document i of p's list's share of the score: exactly the
// arithmetic of the exhaustive pass.
func (s *sparse) contribution(p *qpair, i int) float32 {
	v := p.v
	nf := v.nf()
	d := p.pl.docs[i]
	var x32 float32
	for j, fi := range v.fields {
		fr := p.pl.freq(i, j, nf)
		if fr == 0 {
			continue
		}
		f := s.fields[fi]
		if fr == 1 {
			x32 += f.x1[d]
		} else {
			x32 += float32(f.weight * float64(fr) / f.norm[d])
		}
	}
	x := float64(x32)
	k1 := s.k1
	return float32(p.idf * x * (k1 + 1) / (x + k1))
}

// scoreAll adds p's share to every document of its list. For each
// document it computes
//
//	x = Σ over the vocab's fields of float32(weight · freq / norm)
//	share = float32(idf · x · (k1 + 1) / (x + k1))
//
// (norm = 1 − b + b · length / average length), the same operations in
// the same order for every path, so scores are bit for bit reproducible.
func (s *sparse) scoreAll(p qpair, sc *scratch, track bool) {
	acc, cover := sc.acc, sc.cover
	k1 := s.k1
	idf := p.idf
	held := float32(idf)
	if p.v.nf() == 1 && p.pl.freqs16 != nil {
		f := s.fields[p.v.fields[0]]
		norm, w := f.norm, f.weight
		freqs := p.pl.freqs16[:len(p.pl.docs)]
		for i, d := range p.pl.docs {
			// A frequency of 1 gives f.x1[d]: the same operations.
			x := float64(float32(w * float64(freqs[i]) / norm[d]))
			c := float32(idf * x * (k1 + 1) / (x + k1))
			if track && acc[d] == 0 {
				sc.touched = append(sc.touched, int32(d))
			}
			acc[d] += c
			cover[d] += held
		}
		return
	}
	for i, d := range p.pl.docs {
		c := s.contribution(&p, i)
		if track && acc[d] == 0 {
			sc.touched = append(sc.touched, int32(d))
		}
		acc[d] += c
		cover[d] += held
	}
}

// scoreSum is the per-field Okapi BM25 sum, scored exhaustively: each
// field of a pair's vocab that holds its form scores it as a BM25 document
// of its own, with the field's document frequency.
func (s *sparse) scoreSum(ctx context.Context, pairs []qpair, sc *scratch) error {
	k1 := s.k1
	acc := sc.acc
	for pi := range pairs {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := &pairs[pi]
		v, pl := p.v, p.pl
		nf := v.nf()
		for j, fi := range v.fields {
			df := int(pl.df[j])
			if df == 0 {
				continue
			}
			f := s.fields[fi]
			w := f.weight * s.idf(df)
			b := f.b
			for i, d := range pl.docs {
				fr := pl.freq(i, j, nf)
				if fr == 0 {
					continue
				}
				freq := float64(fr)
				norm := 1 - b + b*float64(f.lens[d])/f.avgLen
				if acc[d] == 0 {
					sc.touched = append(sc.touched, int32(d))
				}
				acc[d] += float32(w * freq * (k1 + 1) / (freq + k1*norm))
			}
		}
		for _, d := range pl.docs {
			sc.cover[d] += float32(p.idf)
		}
	}
	return nil
}

func (s *sparse) hasField(name string) bool {
	for _, f := range s.fields {
		if f.name == name {
			return true
		}
	}
	return false
}
