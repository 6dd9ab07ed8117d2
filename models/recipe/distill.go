package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpsag/router/internal/encoder"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// The distill command makes a static embedding model from an encoder model
// folder, as model2vec does: every token of the vocabulary is run through
// the encoder alone ([CLS] token [SEP]) and its own output row taken,
// the rows are reduced to fewer dimensions by PCA, and each row is weighted
// by its token's rank in the vocabulary (log(2 + id), a Zipf prior: a BERT
// WordPiece vocabulary lists frequent tokens first). The static model runs
// in microseconds, like mcpsag-static-v1; docs/matching.md compares the two.

func runDistill(args []string) error {
	fs := flag.NewFlagSet("distill", flag.ExitOnError)
	src := fs.String("encoder", "", "encoder model folder (model.onnx in the encoder graph format, tokenizer.json) (required)")
	out := fs.String("out", "", "static model folder to write (required)")
	dim := fs.Int("dim", 256, "dimensions kept by PCA")
	name := fs.String("name", "", "model name (default: the folder's name)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: go run ./models/recipe distill -encoder DIR -out DIR [-dim 256]\n\n"+
			"Distills a static token-embedding model from an encoder model folder.\n\n")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if *src == "" || *out == "" {
		fs.Usage()
		return errors.New("-encoder and -out are required")
	}
	if *name == "" {
		*name = filepath.Base(*out)
	}
	start := time.Now()
	e, m, tok, err := readEncoderFolder(*src)
	if err != nil {
		return err
	}
	special, cls, sep, err := bertSpecialTokens(tok)
	if err != nil {
		return err
	}
	vocab, hidden := e.Config.VocabSize, e.Config.Hidden
	rows := tokenRows(m, vocab, cls, sep)
	fmt.Printf("distill: %d tokens embedded in %s\n", vocab, time.Since(start).Round(time.Millisecond))
	table := pcaRows(rows, vocab, hidden, *dim)
	for id := range vocab {
		w := float32(math.Log(2 + float64(id)))
		row := table[id**dim : (id+1)**dim]
		for j := range row {
			row[j] *= w
		}
	}
	for _, id := range special {
		clear(table[id**dim : (id+1)**dim])
	}
	st := &onnxgraph.StaticEmbedding{
		VocabSize: vocab, Dim: *dim, Table: table, Encoding: onnxgraph.Int8,
		ProducerName: "mcpsag-recipe", ProducerVersion: "1",
		DocString: "Static token embeddings distilled from an encoder (go run ./models/recipe distill): each token's " +
			"output alone, reduced by PCA, weighted by log(2 + id); mean-pool last_hidden_state with the attention mask.",
		Metadata: [][2]string{{"mcpsag.model", *name}, {"mcpsag.recipe", "models/recipe distill"}},
	}
	if err := writeStaticModel(*out, st, tok, map[string]any{"name": *name, "max_tokens": 512}); err != nil {
		return err
	}
	fmt.Printf("distill: %s written in %s\n", *out, time.Since(start).Round(time.Millisecond))
	return nil
}

// readEncoderFolder reads an encoder model folder: its graph, the model
// made of it, and its tokenizer.json.
func readEncoderFolder(dir string) (*onnxgraph.Encoder, *encoder.Model, []byte, error) {
	graph, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return nil, nil, nil, err
	}
	e, err := onnxgraph.ReadEncoder(graph)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", dir, err)
	}
	m, err := encoder.New(e)
	if err != nil {
		return nil, nil, nil, err
	}
	tok, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, nil, nil, err
	}
	return e, m, tok, nil
}

// tokenRows returns, for every token id, the encoder's output row of that
// token run alone between cls and sep (vocab x hidden, float64).
func tokenRows(m *encoder.Model, vocab, cls, sep int) []float64 {
	hidden := m.Config().Hidden
	out := make([]float64, vocab*hidden)
	const batch = 256
	for lo := 0; lo < vocab; lo += batch {
		hi := min(vocab, lo+batch)
		seqs := make([]encoder.Sequence, hi-lo)
		for i := range seqs {
			seqs[i] = encoder.Sequence{IDs: []int{cls, lo + i, sep}, TypeIDs: []int{0, 0, 0}, Mask: []int{1, 1, 1}}
		}
		states, err := m.LastHiddenState(seqs, 0)
		if err != nil {
			panic(err) // ids in range by construction
		}
		for i, s := range states {
			for j, x := range s[hidden : 2*hidden] { // the token's own row
				out[(lo+i)*hidden+j] = float64(x)
			}
		}
	}
	return out
}

// pcaRows centres the n x k rows and projects them on their dim principal
// components, returning float32 rows.
func pcaRows(rows []float64, n, k, dim int) []float32 {
	mean := make([]float64, k)
	for r := range n {
		for j, x := range rows[r*k : (r+1)*k] {
			mean[j] += x / float64(n)
		}
	}
	for r := range n {
		row := rows[r*k : (r+1)*k]
		for j := range row {
			row[j] -= mean[j]
		}
	}
	_, vecs := symEigen(gram(rows, n, k), k)
	basis := make([]float64, k*dim) // the first dim eigenvectors, as columns
	for i := range k {
		copy(basis[i*dim:(i+1)*dim], vecs[i*k:i*k+dim])
	}
	proj := mulSmall(rows, n, k, basis, dim)
	out := make([]float32, len(proj))
	for i, x := range proj {
		out[i] = float32(x)
	}
	return out
}

// bertSpecialTokens returns the ids of tokenizer.json's added (special) tokens,
// and those of [CLS] and [SEP].
func bertSpecialTokens(tok []byte) (ids []int, cls, sep int, err error) {
	var t struct {
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(tok, &t); err != nil {
		return nil, 0, 0, fmt.Errorf("tokenizer.json: %w", err)
	}
	cls, sep = -1, -1
	for _, a := range t.AddedTokens {
		ids = append(ids, a.ID)
		switch a.Content {
		case "[CLS]":
			cls = a.ID
		case "[SEP]":
			sep = a.ID
		}
	}
	if cls < 0 || sep < 0 {
		return nil, 0, 0, errors.New("tokenizer.json: no [CLS] and [SEP] tokens: not a BERT tokenizer")
	}
	return ids, cls, sep, nil
}
