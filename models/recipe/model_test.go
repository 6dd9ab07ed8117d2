package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sugarme/tokenizer/pretrained"

	"github.com/mcpsag/router/internal/match"
)

// shippedModel is the committed model folder, relative to this package.
var shippedModel = filepath.Join("..", "mcpsag-static-v1")

func loadShipped(t testing.TB) *hugotEmbedder {
	t.Helper()
	if _, err := os.Stat(filepath.Join(shippedModel, "model.onnx")); err != nil {
		t.Skipf("no model in %s: %v", shippedModel, err)
	}
	h, err := newHugotEmbedder(shippedModel)
	if err != nil {
		t.Fatalf("load %s: %v", shippedModel, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func cos(a, b []float32) float32 {
	return match.Dot(a, b)
}

// TestUnknownWordsGetUsefulVectors checks that words outside the vocabulary
// (new jargon, product-like names) are split into known pieces, get a
// non-zero vector, and land nearer related text than unrelated text.
func TestUnknownWordsGetUsefulVectors(t *testing.T) {
	h := loadShipped(t)
	tk, err := pretrained.FromFile(filepath.Join(shippedModel, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		word, related, unrelated string
	}{
		{"chatbot", "talk with a conversational assistant", "partition a hard disk"},
		{"cloudfunctions", "run functions on cloud servers", "crossword puzzle game"}, // "serverless" is a whole word since man pages are in the data
		{"cybersecurity", "protect networks against attacks and intrusions", "bake bread at home"},
		{"pdfmerger", "combine several PDF documents into one", "weather forecast for tomorrow"},
		{"cryptowallet", "store bitcoin and other cryptocurrency", "edit subtitles of a video"},
	}
	for _, c := range cases {
		t.Run(c.word, func(t *testing.T) {
			enc, err := tk.EncodeSingle(c.word, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(enc.Tokens) < 2 || slices.Contains(enc.Tokens, "[UNK]") {
				t.Fatalf("%q tokenises to %v, want several known pieces", c.word, enc.Tokens)
			}
			v, err := h.Embed([]string{c.word, c.related, c.unrelated})
			if err != nil {
				t.Fatal(err)
			}
			if cos(v[0], v[0]) < 0.99 {
				t.Fatalf("%q has no vector (norm² %.3f)", c.word, cos(v[0], v[0]))
			}
			rel, unrel := cos(v[0], v[1]), cos(v[0], v[2])
			t.Logf("%q %v: related %.3f, unrelated %.3f", c.word, enc.Tokens, rel, unrel)
			if rel < unrel+0.1 {
				t.Errorf("%q: cosine to related text %.3f, to unrelated %.3f; want related ahead by 0.1", c.word, rel, unrel)
			}
		})
	}
}

// TestTokenizerEdgeInputs runs hostile text through the shipped tokenizer:
// none may panic (hugot exits the process on a tokenizer error). Invalid
// UTF-8 is made valid first, as the router's embedder does for every model:
// sugarme's BERT normaliser (clean_text, as in every BERT tokenizer.json)
// panics on it.
func TestTokenizerEdgeInputs(t *testing.T) {
	h := loadShipped(t)
	inputs := []string{
		"", " ", "\x00\x01\x02", "\xff\xfe invalid utf-8 \xc3", "emoji 🚀🔥 and ZWJ 👩‍💻",
		"Ṁ̇ combining a\u0301\u0302\u0303", "İstanbul ǅ ß ﬁ", "中文 日本語 한국어", "tab\there\r\nnew line",
		strings.Repeat("long ", 2000), strings.Repeat("x", 500),
	}
	for _, in := range inputs {
		if _, err := h.Embed([]string{strings.ToValidUTF8(in, "\uFFFD")}); err != nil {
			t.Errorf("embed %q: %v", in[:min(len(in), 20)], err)
		}
	}
}

// TestWordPieceMatchesTokenizer checks that the recipe's own WordPiece
// (used to tokenise the training corpus) gives the ids the exported
// tokenizer gives at run time.
func TestWordPieceMatchesTokenizer(t *testing.T) {
	path := filepath.Join(shippedModel, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		t.Skip("no shipped tokenizer")
	}
	vocab, err := readVocab(path)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := pretrained.FromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sg, wp := newSegmenter(), newWordPiece(vocab)
	for _, s := range []string{
		"Find a chatbot for customer-support tickets!", "Convert HEIC photos to JPEG, then upload (fast).",
		"kubectl port-forward svc/api 8080:80", "naïve café résumé", "getWeatherForecast v2.1_beta",
	} {
		enc, err := tk.EncodeSingle(s, true)
		if err != nil {
			t.Fatal(err)
		}
		want := []int{2}
		for _, id := range encodeText(sg, wp, s) {
			want = append(want, int(id))
		}
		want = append(want, 3)
		if !slices.Equal(enc.Ids, want) {
			t.Errorf("%q: tokenizer %v, recipe %v", s, enc.Ids, want)
		}
	}
}

func TestBuildVocabDeterministic(t *testing.T) {
	counts := map[string]int{}
	for i, w := range strings.Fields("server servers serverless chat chatting chatbot bot robot robots less useless") {
		counts[w] = 100 + i
	}
	a, b := buildVocab(counts), buildVocab(counts)
	if !slices.Equal(a, b) {
		t.Fatal("two builds differ")
	}
	if !slices.Contains(a, "server") || !slices.Contains(a, "[UNK]") {
		t.Fatalf("vocab %v lacks expected entries", a)
	}
}

// BenchmarkQueryEmbedding embeds one short query at a time through hugot,
// after warming the sequence shapes the queries use, and reports the p50.
func BenchmarkQueryEmbedding(b *testing.B) {
	h := loadShipped(b)
	queries := []string{
		"Can you help me find research papers on a specific topic?",
		"convert a video to gif",
		"What is the weather like in Paris tomorrow?",
		"I need a tool that translates my documents into Spanish",
		"book a flight",
		"summarise this pdf",
	}
	for _, q := range queries { // compile each shape once
		if _, err := h.Embed([]string{q}); err != nil {
			b.Fatal(err)
		}
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		if _, err := h.Embed([]string{queries[i%len(queries)]}); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(durs, func(i, j int) bool { return durs[i] < durs[j] })
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkModelLoad measures loading the shipped model folder through hugot.
func BenchmarkModelLoad(b *testing.B) {
	if _, err := os.Stat(filepath.Join(shippedModel, "model.onnx")); err != nil {
		b.Skip("no shipped model")
	}
	for b.Loop() {
		h, err := newHugotEmbedder(shippedModel)
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}

// TestLoadNoSkill: a file of requests that need no skill loads; one request
// that names a relevant skill is refused, naming it. The project's everyday
// requests are such a file.
func TestLoadNoSkill(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(good, []byte(`{"id":"a","query":"what is 2 plus 2","relevant":[]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"id":"a","query":"what is 2 plus 2","relevant":[]}`+"\n"+`{"id":"b","query":"fill the form","relevant":["pdf"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if qs, err := loadNoSkill(good); err != nil || len(qs) != 1 {
		t.Errorf("good file: %d requests, %v", len(qs), err)
	}
	if _, err := loadNoSkill(bad); err == nil || !strings.Contains(err.Error(), "request b") {
		t.Errorf("a request with a relevant skill: %v, want an error naming request b", err)
	}
	qs, err := loadNoSkill(filepath.Join("..", "..", "testdata", "everyday-requests", "queries.jsonl"))
	if err != nil || len(qs) < 150 {
		t.Errorf("the everyday requests: %d, %v", len(qs), err)
	}
}
