// Package embedtest writes tiny embedding models for tests: a BERT-style
// WordPiece tokenizer.json with a few hundred tokens and a static
// token-embedding ONNX graph (package onnxgraph) whose vectors are made so
// that words about the same topic point the same way. The model is built
// deterministically from Go, so the test suite needs no downloaded weights.
//
// Vectors: topic words are the topic's basis vector plus a little
// deterministic noise, so "pdf form" and "fill pdf forms" are close and
// "kubernetes deploy" is far from both; other words, word pieces and
// punctuation are small noise vectors; [CLS], [SEP] and [PAD] are zero; [UNK]
// is a small fixed vector. Every lowercase ASCII word can be tokenized into
// pieces (single letters and "##" letters are in the vocabulary), so [UNK]
// only appears for other scripts and symbols.
package embedtest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/mcpsag/router/internal/onnxgraph"
)

// TinyDim is the dimension of the model WriteTinyModel writes.
const TinyDim = 32

// Special tokens, in vocabulary order (ids 0 to 4).
var specials = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}

// Topics lists the topic vocabulary; topic i points along basis vector i.
var Topics = [][]string{
	{"pdf", "pdfs", "form", "forms", "fill", "fillable", "document", "documents", "page", "pages", "sign", "signature", "acrobat", "field", "fields"},
	{"kubernetes", "k8s", "deploy", "deployment", "cluster", "pod", "pods", "helm", "container", "containers", "docker", "kubectl", "manifest", "rollout"},
	{"git", "commit", "commits", "branch", "merge", "rebase", "repository", "repo", "pull", "push", "diff"},
	{"sql", "database", "databases", "query", "table", "tables", "postgres", "mysql", "schema", "migration", "index"},
	{"image", "images", "photo", "photos", "resize", "crop", "png", "jpeg", "picture", "thumbnail"},
	{"email", "emails", "mail", "inbox", "send", "message", "messages", "smtp", "reply"},
	{"http", "api", "request", "endpoint", "rest", "url", "fetch", "web", "browser"},
	{"test", "tests", "testing", "unit", "assert", "coverage", "benchmark"},
	{"spreadsheet", "excel", "csv", "cell", "cells", "column", "columns", "rows", "xlsx"},
	{"calendar", "meeting", "meetings", "schedule", "event", "events", "appointment"},
	{"python", "code", "script", "function", "lint", "format"},
	{"translate", "translation", "language", "english", "french"},
}

// Generic words carry little meaning and get small vectors.
var generic = []string{
	"a", "an", "the", "and", "or", "to", "of", "in", "on", "for", "with", "from", "by", "is", "are", "it",
	"this", "that", "my", "your", "new", "use", "using", "create", "make", "get", "set", "read", "write",
	"edit", "update", "delete", "list", "run", "check", "into", "file", "files", "data", "tool", "help",
	"how", "what", "all", "some", "out", "up", "do", "can", "please", "me", "i", "we", "you",
}

var suffixes = []string{"##s", "##es", "##ed", "##ing", "##er", "##ly", "##ion"}

var punctuation = []string{".", ",", ":", ";", "-", "_", "/", "(", ")", "!", "?", "'", "\"", "#", "@", "&", "*", "+", "=", "[", "]"}

// Vocab returns the tiny vocabulary in id order.
func Vocab() []string {
	v := append([]string(nil), specials...)
	for _, words := range Topics {
		v = append(v, words...)
	}
	v = append(v, generic...)
	v = append(v, suffixes...)
	v = append(v, punctuation...)
	for c := 'a'; c <= 'z'; c++ {
		v = append(v, string(c), "##"+string(c))
	}
	for c := '0'; c <= '9'; c++ {
		v = append(v, string(c), "##"+string(c))
	}
	// Drop duplicates ("a" and "i" are both generic words and letters).
	seen := map[string]bool{}
	out := v[:0]
	for _, t := range v {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// Model describes a model folder written by this package.
type Model struct {
	Dir   string
	Dim   int
	Vocab []string  // token strings in id order
	Table []float32 // row-major, len(Vocab)*Dim, as stored in model.onnx
}

// Row returns the table row of a token, or nil if the token is not in the
// vocabulary.
func (m *Model) Row(token string) []float32 {
	for i, t := range m.Vocab {
		if t == token {
			return m.Table[i*m.Dim : (i+1)*m.Dim]
		}
	}
	return nil
}

// WriteTinyModel writes model.onnx and tokenizer.json for a TinyDim model
// into dir, creating dir if needed.
func WriteTinyModel(dir string) (*Model, error) {
	return WriteTinyModelDim(dir, TinyDim)
}

// WriteTinyModelDim is WriteTinyModel with another dimension, for
// wrong-dimension tests. dim must be at least len(Topics).
func WriteTinyModelDim(dir string, dim int) (*Model, error) {
	if dim < len(Topics) {
		return nil, fmt.Errorf("embedtest: dim %d is below the %d topics", dim, len(Topics))
	}
	vocab := Vocab()
	m := &Model{Dir: dir, Dim: dim, Vocab: vocab, Table: table(vocab, dim)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	g := &onnxgraph.StaticEmbedding{
		VocabSize:    len(vocab),
		Dim:          dim,
		Table:        m.Table,
		ProducerName: "mcpsag-embedtest",
		DocString:    "tiny static embedding model for tests",
	}
	if err := g.WriteFile(filepath.Join(dir, "model.onnx")); err != nil {
		return nil, err
	}
	if err := WriteTokenizer(filepath.Join(dir, "tokenizer.json"), vocab); err != nil {
		return nil, err
	}
	return m, nil
}

// WriteCorruptModel writes a valid tokenizer.json next to a model.onnx that
// is not a valid ONNX protobuf.
func WriteCorruptModel(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := WriteTokenizer(filepath.Join(dir, "tokenizer.json"), Vocab()); err != nil {
		return err
	}
	junk := []byte("\x0a\xff\xff\xff\xff\x0fnot an onnx model")
	return os.WriteFile(filepath.Join(dir, "model.onnx"), junk, 0o644)
}

// table builds the embedding table; see the package comment.
func table(vocab []string, dim int) []float32 {
	topicOf := map[string]int{}
	for i, words := range Topics {
		for _, w := range words {
			topicOf[w] = i
		}
	}
	t := make([]float32, len(vocab)*dim)
	for id, tok := range vocab {
		row := t[id*dim : (id+1)*dim]
		switch tok {
		case "[PAD]", "[CLS]", "[SEP]", "[MASK]":
			continue
		case "[UNK]":
			for j := range row {
				row[j] = 0.05
			}
			continue
		}
		r := rng(tok)
		sigma := float32(0.05)
		if topic, ok := topicOf[tok]; ok {
			sigma = 0.15
			row[topic] = 1
		} else if isGeneric(tok) {
			sigma = 0.1
		}
		for j := range row {
			row[j] += sigma * float32(r.NormFloat64())
		}
	}
	return t
}

func isGeneric(tok string) bool {
	for _, g := range generic {
		if g == tok {
			return true
		}
	}
	return false
}

// rng returns a generator seeded from the token, so a token's vector does
// not depend on its position in the vocabulary.
func rng(tok string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(tok))
	return rand.New(rand.NewPCG(h.Sum64(), 0x6d637073616721))
}

// WriteTokenizer writes a BERT-style tokenizer.json (BertNormalizer with
// lowercasing, BertPreTokenizer, WordPiece, "[CLS] $A [SEP]" template) for
// the given vocabulary, which must start with the special tokens [PAD]
// [UNK] [CLS] [SEP].
func WriteTokenizer(path string, vocab []string) error {
	ids := map[string]int{}
	for i, t := range vocab {
		ids[t] = i
	}
	for _, s := range specials[:4] {
		if _, ok := ids[s]; !ok {
			return fmt.Errorf("embedtest: vocabulary lacks %s", s)
		}
	}
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": addedTokens(ids),
		"normalizer": map[string]any{
			"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
			"strip_accents": nil, "lowercase": true,
		},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": templateProcessing(ids),
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{
			"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 100, "vocab": ids,
		},
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// addedToken is an entry of tokenizer.json's added_tokens.
type addedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedTokens returns the special tokens of a vocabulary (token to id) as
// tokenizer.json lists them.
func addedTokens(ids map[string]int) []addedToken {
	var added []addedToken
	for _, s := range specials {
		if id, ok := ids[s]; ok {
			added = append(added, addedToken{ID: id, Content: s, Special: true})
		}
	}
	return added
}

// templateProcessing returns the "[CLS] $A [SEP]" post-processor of a
// vocabulary (token to id).
func templateProcessing(ids map[string]int) map[string]any {
	special := func(tok string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": tok, "type_id": 0}}
	}
	seq := func(id string, typeID int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": id, "type_id": typeID}}
	}
	return map[string]any{
		"type":   "TemplateProcessing",
		"single": []any{special("[CLS]"), seq("A", 0), special("[SEP]")},
		"pair":   []any{special("[CLS]"), seq("A", 0), special("[SEP]"), seq("B", 1), special("[SEP]")},
		"special_tokens": map[string]any{
			"[CLS]": map[string]any{"id": "[CLS]", "ids": []int{ids["[CLS]"]}, "tokens": []string{"[CLS]"}},
			"[SEP]": map[string]any{"id": "[SEP]", "ids": []int{ids["[SEP]"]}, "tokens": []string{"[SEP]"}},
		},
	}
}
