package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// Model identity and run-time defaults written to mcpsag-model.json.
const (
	modelName = "mcpsag-static-v1"
	// runMaxTokens is the router's token cap for this model, [CLS] and
	// [SEP] included; training used the same cap.
	runMaxTokens = maxTokens + 2
)

// ModelConfig is mcpsag-model.json: the model's defaults for the router.
type ModelConfig struct {
	Name           string  `json:"name"`
	QueryPrefix    string  `json:"query_prefix"`
	DocumentPrefix string  `json:"document_prefix"`
	MaxTokens      int     `json:"max_tokens"`
	MatchThreshold float64 `json:"match_threshold"`
}

func runExport(args []string) error {
	fs := flag.NewFlagSet("export", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory")
	out := fs.String("out", defaultModel, "model folder to write")
	tablePath := fs.String("table", "", "token table (default WORK/table.bin)")
	fs.Parse(args)
	if *tablePath == "" {
		*tablePath = workPath(*work, "table.bin")
	}
	rows, dim, table, vocab, err := readTableVocab(*tablePath, *work)
	if err != nil {
		return err
	}
	tj, err := os.ReadFile(workPath(*work, "tokenizer.json"))
	if err != nil {
		return err
	}
	m := &onnxgraph.StaticEmbedding{
		VocabSize:       rows,
		Dim:             dim,
		Table:           table,
		ProducerName:    "mcpsag-recipe",
		ProducerVersion: "1",
		DocString: "MCPSAG default offline embedding model: static WordPiece token embeddings with idf-like " +
			"weights baked into row lengths; mean-pool last_hidden_state with the attention mask and L2-normalise. " +
			"Built by `go run ./models/recipe build`; see MODEL.md.",
		Encoding: onnxgraph.Int8,
		Metadata: [][2]string{{"mcpsag.model", modelName}, {"mcpsag.recipe", "models/recipe"}},
	}
	threshold, err := exportThreshold(*work, *out, vocab, m)
	if err != nil {
		return err
	}
	manifest := ModelConfig{Name: modelName, MaxTokens: runMaxTokens, MatchThreshold: threshold}
	if err := writeStaticModel(*out, m, tj, manifest); err != nil {
		return err
	}
	b, _ := os.ReadFile(filepath.Join(*out, "model.onnx"))
	fmt.Fprintf(os.Stderr, "export: %s: vocab %d, dim %d, %d bytes, sha256 %s, threshold %.2f\n",
		*out, rows, dim, len(b), sha(b), threshold)
	return nil
}

// readTableVocab reads the token table at tablePath and the vocabulary of
// WORK/tokenizer.json, and checks that they match.
func readTableVocab(tablePath, work string) (rows, dim int, table []float32, vocab []string, err error) {
	rows, dim, table, err = readTable(tablePath)
	if err != nil {
		return 0, 0, nil, nil, err
	}
	vocab, err = readVocab(workPath(work, "tokenizer.json"))
	if err != nil {
		return 0, 0, nil, nil, err
	}
	if rows != len(vocab) {
		return 0, 0, nil, nil, fmt.Errorf("table has %d rows, vocabulary %d", rows, len(vocab))
	}
	return rows, dim, table, vocab, nil
}

// exportThreshold is the model's match_threshold. It is measured on the
// dequantised table, the one that runs, unless the output folder's manifest
// holds one already: that one was fitted on skill routing (routerctl
// calibrate, see MODEL.md) and is kept.
func exportThreshold(work, out string, vocab []string, m *onnxgraph.StaticEmbedding) (float64, error) {
	threshold, err := defaultThreshold(work, vocab, m.Dequantized(), m.Dim)
	if err != nil {
		return 0, err
	}
	var prev ModelConfig
	if readJSON(filepath.Join(out, "mcpsag-model.json"), &prev) == nil && prev.MatchThreshold > 0 {
		fmt.Fprintf(os.Stderr, "export: keeping match_threshold %.2f of the existing manifest (the validation split gives %.2f)\n",
			prev.MatchThreshold, threshold)
		threshold = prev.MatchThreshold
	}
	return threshold, nil
}

// writeStaticModel writes the model folder out: the graph, the tokenizer
// and the manifest (mcpsag-model.json).
func writeStaticModel(out string, m *onnxgraph.StaticEmbedding, tokenizer []byte, manifest any) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := m.WriteFile(filepath.Join(out, "model.onnx")); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "tokenizer.json"), tokenizer, 0o644); err != nil {
		return err
	}
	return writeJSON(filepath.Join(out, "mcpsag-model.json"), manifest)
}

// defaultThreshold is a starting abstention cut: on the validation split's
// sentence->synopsis task, the cosine that 90% of true (query, tool) pairs
// reach, rounded down to 0.05. The matching engine calibrates its own.
func defaultThreshold(work string, vocab []string, table []float32, dim int) (float64, error) {
	tasks, err := validationTasks(work)
	if err != nil {
		return 0, err
	}
	emb := &tableEmbedder{sg: newSegmenter(), wp: newWordPiece(vocab), table: table, dim: dim}
	t := tasks[1]
	qv, _ := emb.Embed(t.Queries)
	dv, _ := emb.Embed(t.Docs)
	var cos []float64
	for i := range qv {
		cos = append(cos, cosineScores(qv[i], dv[i:i+1])[0])
	}
	sort.Float64s(cos)
	q := cos[len(cos)/10]
	return math.Floor(q*20) / 20, nil
}
