package match

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
)

// maxQueryTerms caps the distinct terms of one task that BM25 looks up, so a
// 16 KiB task of unique words costs a bounded number of dictionary lookups.
const maxQueryTerms = 256

// sparseField is one indexed field.
type sparseField struct {
	name     string // bleve field name
	weight   float64
	b        float64 // length normalisation
	analyzer Analyzer
	lens     []uint32 // analyzed length per document
	avgLen   float64  // over documents where the field is not empty
}

// sparse is the BM25 side of an Index: a bleve index of the skill fields,
// read through one snapshot. Bleve analyzes and stores the postings; the
// scores are computed here, as BM25F (or, on request, Okapi BM25 summed over
// fields with per-field weights). Bleve's own query scoring mixes in a coordination
// factor, a query norm and squared idf, and ranked 5 to 6 NDCG@10 points
// lower on Seal-Tools (docs/matching.md).
type sparse struct {
	reader    index.IndexReader // snapshot; the bleve index itself is closed
	docOf     []int32           // bleve document number -> our document, -1 for none
	fields    []*sparseField
	analyzers map[Analyzer]analysis.Analyzer
	n         int
	k1        float64
	sum       bool // per-field BM25 sum instead of BM25F
	// grouped are the fields in groups (groups), empty[g] whether no
	// skill has text in group g.
	grouped [][]*sparseField
	empty   []bool
	// vocab is the number of distinct (analyzer, term) pairs indexed.
	vocab int
}

// sparseDoc is the text of one document, field by field, aligned with
// sparse.fields.
type sparseDoc []string

// newSparse indexes docs in memory. Every document goes into one bleve batch,
// which scorch turns into one segment; then a snapshot reader is kept and the
// index (its background goroutines) is closed. The snapshot stays readable:
// its segments are plain memory.
func newSparse(ctx context.Context, fields []*sparseField, docs []sparseDoc, bm BM25) (*sparse, error) {
	im, err := newMapping(fields)
	if err != nil {
		return nil, err
	}
	ans, err := analyzers(im)
	if err != nil {
		return nil, err
	}
	s := &sparse{fields: fields, analyzers: ans, n: len(docs), k1: bm.K1, sum: bm.Scoring == ScoringSum}
	s.grouped = s.groups()
	for _, f := range fields {
		f.lens = make([]uint32, len(docs))
	}
	if len(docs) == 0 {
		s.empty = make([]bool, len(s.grouped))
		return s, nil
	}
	idx, err := bleve.NewUsing("", im, scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("create bm25 index: %w", err)
	}
	defer idx.Close()
	batch := idx.NewBatch()
	for i, d := range docs {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		m := make(map[string]any, len(fields))
		for j, f := range fields {
			if d[j] == "" {
				continue
			}
			m[f.name] = d[j]
			// Bleve keeps only a lossy norm; BM25 needs the length.
			f.lens[i] = uint32(len(ans[f.analyzer].Analyze([]byte(d[j]))))
		}
		if err := batch.Index(strconv.Itoa(i), m); err != nil {
			return nil, fmt.Errorf("index document %d: %w", i, err)
		}
	}
	if err := idx.Batch(batch); err != nil {
		return nil, fmt.Errorf("build bm25 index: %w", err)
	}
	for _, f := range fields {
		var sum, n float64
		for _, l := range f.lens {
			if l > 0 {
				sum += float64(l)
				n++
			}
		}
		if n > 0 {
			f.avgLen = sum / n
		}
	}
	adv, err := idx.Advanced()
	if err != nil {
		return nil, fmt.Errorf("open bm25 index: %w", err)
	}
	if s.reader, err = adv.Reader(); err != nil {
		return nil, fmt.Errorf("open bm25 snapshot: %w", err)
	}
	if err := s.mapDocs(); err != nil {
		return nil, err
	}
	if err := s.countVocab(); err != nil {
		return nil, err
	}
	for _, group := range s.grouped {
		s.empty = append(s.empty, s.emptyGroup(group))
	}
	return s, nil
}

// countVocab counts the distinct terms of each analyzer group over its
// fields. Each field's dictionary is sorted, so a group's union is counted
// by merging them, without a set.
func (s *sparse) countVocab() error {
	for _, group := range s.grouped {
		dicts := make([]index.FieldDict, 0, len(group))
		heads := make([]*index.DictEntry, 0, len(group))
		closeAll := func() {
			for _, d := range dicts {
				_ = d.Close()
			}
		}
		for _, f := range group {
			d, err := s.reader.FieldDict(f.name)
			if err != nil {
				closeAll()
				return fmt.Errorf("bm25 dictionary of %s: %w", f.name, err)
			}
			dicts = append(dicts, d)
			e, err := d.Next()
			if err != nil {
				closeAll()
				return fmt.Errorf("bm25 dictionary of %s: %w", f.name, err)
			}
			heads = append(heads, e)
		}
		for {
			least := -1
			for i, e := range heads {
				if e != nil && (least < 0 || e.Term < heads[least].Term) {
					least = i
				}
			}
			if least < 0 {
				break
			}
			s.vocab++
			term := heads[least].Term
			for i, e := range heads {
				for e != nil && e.Term == term {
					next, err := dicts[i].Next()
					if err != nil {
						closeAll()
						return fmt.Errorf("bm25 dictionary of %s: %w", group[i].name, err)
					}
					e = next
				}
				heads[i] = e
			}
		}
		closeAll()
	}
	return nil
}

// mapDocs builds the bleve document number -> document table.
func (s *sparse) mapDocs() error {
	it, err := s.reader.DocIDReaderAll()
	if err != nil {
		return fmt.Errorf("list bm25 documents: %w", err)
	}
	defer it.Close()
	for {
		id, err := it.Next()
		if err != nil {
			return fmt.Errorf("list bm25 documents: %w", err)
		}
		if id == nil {
			return nil
		}
		ext, err := s.reader.ExternalID(id)
		if err != nil {
			return fmt.Errorf("bm25 document id: %w", err)
		}
		doc, err := strconv.Atoi(ext)
		if err != nil || doc < 0 || doc >= s.n {
			return fmt.Errorf("bm25 document id %q is not one of ours", ext)
		}
		num := id.Value()
		if num > uint64(4*s.n+1024) {
			return fmt.Errorf("bm25 document number %d is out of range", num)
		}
		for uint64(len(s.docOf)) <= num {
			s.docOf = append(s.docOf, -1)
		}
		s.docOf[num] = int32(doc)
	}
}

// queryStats describe how a task met the BM25 vocabulary; they feed the
// abstention features.
type queryStats struct {
	terms, known int     // distinct (analyzer, term) pairs, and how many occur in some field
	selfScore    float64 // the score of an ideal document that holds every term
	// idfMass is the summed idf of the task's distinct forms, per
	// analyzer group (sparse.groups; a form no skill holds counts with the
	// largest idf), leaving out groups whose fields are empty in every
	// skill, which cannot hold any term.
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
// gives it (empty for an analyzer no field uses).
type queryTerm map[Analyzer]string

// queryTerms analyzes text with every analyzer in use and groups the
// forms of each word by its position, so "forms" is one term whose stemmed
// fields look up "form" and whose plain fields look up "forms". Terms are
// distinct and in order of first occurrence, at most maxQueryTerms.
func (s *sparse) queryTerms(text string) []queryTerm {
	byPos := map[int]queryTerm{}
	var order []int
	done := map[Analyzer]bool{}
	for _, f := range s.fields {
		if done[f.analyzer] {
			continue
		}
		done[f.analyzer] = true
		for _, tok := range s.analyzers[f.analyzer].Analyze([]byte(text)) {
			qt := byPos[tok.Position]
			if qt == nil {
				qt = queryTerm{}
				byPos[tok.Position] = qt
				order = append(order, tok.Position)
			}
			qt[f.analyzer] = string(tok.Term)
		}
	}
	sort.Ints(order)
	seen := map[string]bool{}
	var out []queryTerm
	for _, pos := range order {
		qt := byPos[pos]
		key := string(qt[AnalyzerStem]) + "\x00" + qt[AnalyzerLight] + "\x00" + qt[AnalyzerPlain]
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, qt)
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}

// score adds each document's BM25 score for text to acc and appends the
// documents it touched (their first nonzero score) to touched. acc must be
// all zero on entry, len(acc) == s.n; tf is scratch of the same length, all
// zero, and left all zero. When cover is not nil it has length s.n and is
// all zero on entry: each document touched gets the summed idf of the
// task's forms it holds, per group (sparse.groups) that holds them, in any
// of the group's fields (the caller clears it with acc).
//
// With BM25F (the default) each term's frequencies in the fields of one
// group are weighted, length-normalised per field and summed before one
// saturation, and its idf counts the documents holding it in any of them;
// the per-field sum scores each field as its own BM25 document.
func (s *sparse) score(ctx context.Context, text string, acc, tf, cover []float32, touched []int32) ([]int32, queryStats, error) {
	var st queryStats
	if s.n == 0 {
		return touched, st, nil
	}
	qts := s.queryTerms(text)
	known := map[Analyzer]map[string]bool{}
	counted := map[Analyzer]map[string]bool{}
	for _, f := range s.fields {
		if known[f.analyzer] == nil {
			known[f.analyzer] = map[string]bool{}
			counted[f.analyzer] = map[string]bool{}
		}
	}
	looked := map[string]bool{} // forms already scored, per group
	var tfd index.TermFieldDoc
	var termDocs []int32
	k1 := s.k1
	groups := s.grouped
	for _, qt := range qts {
		if err := ctx.Err(); err != nil {
			return touched, st, err
		}
		for gi, group := range groups {
			// Two task words can share a form ("form", "forms" when
			// stemmed): score it once per group.
			a := group[0].analyzer
			t := qt[a]
			key := string(a) + "\x00" + t
			if t == "" || looked[key] {
				continue
			}
			looked[key] = true
			counted[a][t] = true
			termDocs = termDocs[:0]
			for _, f := range group {
				tfr, err := s.reader.TermFieldReader(ctx, []byte(t), f.name, true, false, false)
				if err != nil {
					clearTF(tf, termDocs)
					return touched, st, fmt.Errorf("bm25 term %q: %w", t, err)
				}
				df := int(tfr.Count())
				if s.sum {
					st.selfScore += f.weight * s.idf(df) * (k1 + 1)
				}
				if df == 0 {
					_ = tfr.Close()
					continue
				}
				known[a][t] = true
				w := f.weight * s.idf(df)
				b := f.b
				for {
					p, err := tfr.Next(&tfd)
					if err != nil {
						_ = tfr.Close()
						clearTF(tf, termDocs)
						return touched, st, fmt.Errorf("bm25 postings %q: %w", t, err)
					}
					if p == nil {
						break
					}
					num := p.ID.Value()
					if num >= uint64(len(s.docOf)) || s.docOf[num] < 0 {
						continue
					}
					d := s.docOf[num]
					freq := float64(p.Freq)
					norm := 1 - b + b*float64(f.lens[d])/f.avgLen
					if tf[d] == 0 {
						termDocs = append(termDocs, d)
					}
					if s.sum {
						if acc[d] == 0 {
							touched = append(touched, d)
						}
						acc[d] += float32(w * freq * (k1 + 1) / (freq + k1*norm))
						tf[d] = 1 // marks d as holding the form
						continue
					}
					tf[d] += float32(f.weight * freq / norm)
				}
				_ = tfr.Close()
			}
			idf := s.idf(len(termDocs))
			if !s.empty[gi] {
				st.idfMass += idf
			}
			if !s.sum {
				st.selfScore += idf * (k1 + 1)
			}
			for _, d := range termDocs {
				x := float64(tf[d])
				tf[d] = 0
				if cover != nil {
					cover[d] += float32(idf)
				}
				if s.sum {
					continue
				}
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += float32(idf * x * (k1 + 1) / (x + k1))
			}
		}
	}
	for a, ts := range counted {
		st.terms += len(ts)
		st.known += len(known[a])
	}
	return touched, st, nil
}

// clearTF zeroes the scratch frequencies of docs, so a scoring that stops
// early leaves tf as it found it.
func clearTF(tf []float32, docs []int32) {
	for _, d := range docs {
		tf[d] = 0
	}
}

// groups returns the fields in the groups BM25F combines: fields that
// share an analyzer hold the same terms, so their frequencies are summed
// before one saturation; a field with another analyzer holds other terms
// (a plain "forms" is not a stemmed "form") and is scored on its own. The
// per-field sum scores each field alone but reads the same groups.
func (s *sparse) groups() [][]*sparseField {
	var out [][]*sparseField
	at := map[Analyzer]int{}
	for _, f := range s.fields {
		i, ok := at[f.analyzer]
		if !ok {
			i = len(out)
			at[f.analyzer] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], f)
	}
	return out
}

// emptyGroup reports whether no skill has text in any field of group.
func (s *sparse) emptyGroup(group []*sparseField) bool {
	for _, f := range group {
		if f.avgLen > 0 {
			return false
		}
	}
	return true
}

func (s *sparse) hasField(name string) bool {
	for _, f := range s.fields {
		if f.name == name {
			return true
		}
	}
	return false
}
