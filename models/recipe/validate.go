package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
)

// The validation split: Debian packages whose description group hashes into
// the held-out share (see isValidation). Two retrieval tasks mirror routing:
//   - synopsis -> long description (a short request against longer text);
//   - first sentence of the long description -> "package: synopsis"
//     (a wordier request against a one-line tool description).
// Every hyperparameter of the recipe was chosen on these numbers.

// ValTask is one retrieval task: queries[i] is relevant to docs[i].
type ValTask struct {
	Name          string
	Queries, Docs []string
}

func validationTasks(work string) ([]ValTask, error) {
	var pairs []Pair
	if err := readJSON(workPath(work, "pairs.json"), &pairs); err != nil {
		return nil, err
	}
	t1 := ValTask{Name: "synopsis->description"}
	t2 := ValTask{Name: "sentence->synopsis"}
	docs := map[string]*ValTask{
		"man":   {Name: "man:name-line->description"},
		"godoc": {Name: "godoc:sentence->identifier"},
		"pydoc": {Name: "pydoc:docstring->name"},
	}
	for _, p := range pairs {
		if !isValidation(p) {
			continue
		}
		if t := docs[p.Source]; t != nil {
			t.Queries = append(t.Queries, p.A)
			t.Docs = append(t.Docs, p.B)
			continue
		}
		t1.Queries = append(t1.Queries, p.A)
		t1.Docs = append(t1.Docs, p.B)
		first := p.B
		if i := strings.Index(first, ". "); i > 0 {
			first = first[:i+1]
		}
		t2.Queries = append(t2.Queries, first)
		t2.Docs = append(t2.Docs, p.A)
	}
	tasks := []ValTask{t1, t2}
	for _, src := range []string{"man", "godoc", "pydoc"} {
		if len(docs[src].Queries) > 0 {
			tasks = append(tasks, *docs[src])
		}
	}
	return tasks, nil
}

// An Embedder turns texts into L2-normalised vectors.
type Embedder interface {
	Embed(texts []string) ([][]float32, error)
}

// tableEmbedder embeds in-process from the token table, exactly as the ONNX
// graph plus mean pooling does (up to float rounding); the recipe uses it to
// select hyperparameters quickly.
type tableEmbedder struct {
	sg    *Segmenter
	wp    *WordPiece
	table []float32
	dim   int
}

func (e *tableEmbedder) Embed(texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		ids := encodeText(e.sg, e.wp, t)
		if len(ids) > maxTokens {
			ids = ids[:maxTokens]
		}
		v := make([]float64, e.dim)
		for _, id := range ids {
			for j, x := range e.table[int(id)*e.dim : int(id)*e.dim+e.dim] {
				v[j] += float64(x)
			}
		}
		out[i] = normalized(v)
	}
	return out, nil
}

func normalized(v []float64) []float32 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	out := make([]float32, len(v))
	if s == 0 {
		return out
	}
	s = 1 / math.Sqrt(s)
	for i, x := range v {
		out[i] = float32(x * s)
	}
	return out
}

func cosineScores(q []float32, docs [][]float32) []float64 {
	out := make([]float64, len(docs))
	for i, d := range docs {
		s := float32(0)
		for j := range q {
			s += q[j] * d[j]
		}
		out[i] = float64(s)
	}
	return out
}

// validationWeights are the hybrid dense weights compared on the
// validation split; eval reports only the one it is given (default 0.4).
var validationWeights = []float64{0.3, 0.4, 0.5}

// evalTask scores one task: BM25, dense, and hybrid at each dense weight.
func evalTask(queries, docs []string, rel []map[int]bool, emb Embedder, weights []float64) (map[string]Metrics, error) {
	bm := newBM25(docs)
	dv, err := emb.Embed(docs)
	if err != nil {
		return nil, err
	}
	qv, err := emb.Embed(queries)
	if err != nil {
		return nil, err
	}
	res := map[string]Metrics{}
	add := func(k string, ranked []int, r map[int]bool) {
		m := res[k]
		m.Add(ranked, r)
		res[k] = m
	}
	for i, q := range queries {
		if len(rel[i]) == 0 {
			continue
		}
		bs := bm.Scores(q)
		ds := cosineScores(qv[i], dv)
		add("bm25", rankScores(bs, 10, true), rel[i])
		add("dense", rankScores(ds, 10, false), rel[i])
		for _, w := range weights {
			add(fmt.Sprintf("hybrid%.1f", w), rankScores(hybridScores(ds, bs, w), 10, false), rel[i])
		}
	}
	return res, nil
}

func printMetrics(name string, res map[string]Metrics, weights []float64) {
	keys := []string{"bm25", "dense"}
	for _, w := range weights {
		keys = append(keys, fmt.Sprintf("hybrid%.1f", w))
	}
	for _, k := range keys {
		nd, r5, h1, mrr := res[k].Percent()
		fmt.Printf("%-24s %-10s n=%-5d NDCG@10 %5.1f  R@5 %5.1f  Hit@1 %5.1f  MRR@10 %5.1f\n", name, k, res[k].N, nd, r5, h1, mrr)
	}
}

func runValidate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory")
	tablePath := fs.String("table", "", "token table to score in-process (default WORK/table.bin)")
	model := fs.String("model", "", "score an exported model folder through hugot instead")
	fs.Parse(args)
	tasks, err := validationTasks(*work)
	if err != nil {
		return err
	}
	var emb Embedder
	if *model != "" {
		h, err := newHugotEmbedder(*model)
		if err != nil {
			return err
		}
		defer h.Close()
		emb = h
	} else {
		if *tablePath == "" {
			*tablePath = workPath(*work, "table.bin")
		}
		_, dim, table, vocab, err := readTableVocab(*tablePath, *work)
		if err != nil {
			return err
		}
		emb = &tableEmbedder{sg: newSegmenter(), wp: newWordPiece(vocab), table: table, dim: dim}
	}
	for _, t := range tasks {
		rel := make([]map[int]bool, len(t.Queries))
		for i := range rel {
			rel[i] = map[int]bool{i: true}
		}
		res, err := evalTask(t.Queries, t.Docs, rel, emb, validationWeights)
		if err != nil {
			return err
		}
		printMetrics(t.Name, res, validationWeights)
	}
	fmt.Fprintln(os.Stderr)
	return nil
}
