package match

import (
	"context"
	"fmt"
	"math"
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
	analyzer Analyzer
	lens     []uint32 // analyzed length per document
	avgLen   float64  // over documents where the field is not empty
}

// sparse is the BM25 side of an Index: a bleve index of the skill fields,
// read through one snapshot. Bleve analyzes and stores the postings; the
// scores are computed here, as textbook Okapi BM25 summed over fields with
// per-field weights. Bleve's own query scoring mixes in a coordination
// factor, a query norm and squared idf, and ranked 5 to 6 NDCG@10 points
// lower on Seal-Tools (docs/matching.md).
type sparse struct {
	reader    index.IndexReader // snapshot; the bleve index itself is closed
	docOf     []int32           // bleve document number -> our document, -1 for none
	fields    []*sparseField
	analyzers map[Analyzer]analysis.Analyzer
	n         int
	k1, b     float64
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
	s := &sparse{fields: fields, analyzers: ans, n: len(docs), k1: bm.K1, b: bm.B}
	for _, f := range fields {
		f.lens = make([]uint32, len(docs))
	}
	if len(docs) == 0 {
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
	return s, nil
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

// score adds each document's BM25 score for text to acc and appends the
// documents it touched (their first nonzero score) to touched. acc must be
// all zero on entry, len(acc) == s.n.
func (s *sparse) score(ctx context.Context, text string, acc []float32, touched []int32) ([]int32, queryStats, error) {
	var st queryStats
	if s.n == 0 {
		return touched, st, nil
	}
	analyzed := map[Analyzer][]string{}
	for _, f := range s.fields {
		if _, ok := analyzed[f.analyzer]; ok {
			continue
		}
		ts := terms(s.analyzers[f.analyzer], text)
		seen := make(map[string]bool, len(ts))
		uniq := ts[:0]
		for _, t := range ts {
			if !seen[t] && len(uniq) < maxQueryTerms {
				seen[t] = true
				uniq = append(uniq, t)
			}
		}
		analyzed[f.analyzer] = uniq
	}
	known := map[Analyzer]map[string]bool{}
	var tfd index.TermFieldDoc
	k1, b := s.k1, s.b
	for _, f := range s.fields {
		if known[f.analyzer] == nil {
			known[f.analyzer] = map[string]bool{}
		}
		for _, t := range analyzed[f.analyzer] {
			if err := ctx.Err(); err != nil {
				return touched, st, err
			}
			tfr, err := s.reader.TermFieldReader(ctx, []byte(t), f.name, true, false, false)
			if err != nil {
				return touched, st, fmt.Errorf("bm25 term %q: %w", t, err)
			}
			df := int(tfr.Count())
			idf := s.idf(df)
			st.selfScore += f.weight * idf * (k1 + 1)
			if df == 0 {
				_ = tfr.Close()
				continue
			}
			known[f.analyzer][t] = true
			w := f.weight * idf
			for {
				p, err := tfr.Next(&tfd)
				if err != nil {
					_ = tfr.Close()
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
				tf := float64(p.Freq)
				norm := 1 - b + b*float64(f.lens[d])/f.avgLen
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += float32(w * tf * (k1 + 1) / (tf + k1*norm))
			}
			_ = tfr.Close()
		}
	}
	for a, ts := range analyzed {
		st.terms += len(ts)
		st.known += len(known[a])
	}
	return touched, st, nil
}

func (s *sparse) hasField(name string) bool {
	for _, f := range s.fields {
		if f.name == name {
			return true
		}
	}
	return false
}
