package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
)

// encoderSrcEnv names a folder with a real BERT sentence encoder in the
// Hugging Face layout (model.safetensors, config.json, tokenizer.json),
// such as sentence-transformers/all-MiniLM-L6-v2, for the tests that
// convert and run it.
const encoderSrcEnv = "MCPSAG_ENCODER_SRC"

// realEncoder converts the encoder named by MCPSAG_ENCODER_SRC into a
// temporary model folder and opens it with cfg, or skips the test.
func realEncoder(t *testing.T, cfg embed.Config) *embed.Model {
	t.Helper()
	src := os.Getenv(encoderSrcEnv)
	if src == "" {
		t.Skipf("%s is not set: it names a folder with a BERT encoder's model.safetensors, config.json and tokenizer.json (all-MiniLM-L6-v2)", encoderSrcEnv)
	}
	if testing.Short() {
		t.Skip("converts and runs a real encoder, through the ONNX runtime too")
	}
	if _, err := os.Stat(filepath.Join(src, "model.safetensors")); err != nil {
		t.Skipf("%s=%s: %v", encoderSrcEnv, src, err)
	}
	out := filepath.Join(t.TempDir(), "model")
	if _, err := convertEncoder(src, out); err != nil {
		t.Fatal(err)
	}
	cfg.Dir = out
	m, err := embed.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// realTexts are varied texts: short queries, a long one past 512 tokens,
// words outside ASCII, code and punctuation.
func realTexts() []string {
	long := strings.Repeat("Set up a deployment pipeline that builds the container image, runs the tests, scans for "+
		"vulnerabilities and rolls back the Helm release when the smoke test fails. ", 20) // past 512 tokens
	return []string{
		"fill in a pdf form", "deploy my app to kubernetes", "rebase my git branch onto main",
		"How do I reset my password?", "résumé of the café's naïve owner", "Straße → İstanbul, ﬁle ‘quoted’ — dash",
		"日本語のテキストを翻訳する", "emoji 🚀 launch the rocket", "SELECT * FROM users WHERE id = 42;",
		"func main() { fmt.Println(\"hello\") }", "a", "Ünïcödé UPPER lower MiXeD", long,
		"Resize all PNG images in ./assets to 512x512 and convert them to WebP.",
		"summarise the latest commits in this repository for the release notes",
		"The quick brown fox jumps over the lazy dog.", "crème brûlée recipe with caramelised sugar",
		"send an email to the team about tomorrow's outage window", "¿Dónde está la biblioteca?",
		"extract tables from a scanned document (OCR) and save them as CSV",
	}
}

// TestRealEncoderNativeIsTheRuntime checks, on a real encoder converted
// by the recipe, that the native evaluation gives the vectors of hugot's
// ONNX runtime on the same graph, for short texts and one of 512 tokens.
// The runtime compiles a graph per input shape, slowly: the shapes are
// few, and the timeout long.
func TestRealEncoderNativeIsTheRuntime(t *testing.T) {
	if raceDetector {
		t.Skip("the ONNX runtime's parallel executor races on its own bookkeeping under the race detector")
	}
	m := realEncoder(t, embed.Config{MaxTokens: 512, BatchSize: 4, BatchBuckets: []int{4}, SequenceBuckets: []int{32, 128},
		Timeout: 10 * time.Minute})
	info := m.LoadInfo()
	if !info.Native || !strings.HasPrefix(info.Evaluator, "encoder-") || !info.NativeTokenizer {
		t.Fatalf("load info %+v: want the native encoder and tokenizer", info)
	}
	texts := realTexts()
	ctx := context.Background()
	for _, kind := range []embed.Kind{embed.Query} { // no prefixes: documents are the same
		got, err := m.Embed(ctx, texts, kind)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.EmbedRuntime(ctx, texts, kind)
		if err != nil {
			t.Fatal(err)
		}
		var cosines []float64
		for i := range texts {
			c := cos64(got[i], want[i])
			cosines = append(cosines, c)
			if c < 0.9999 {
				t.Errorf("%v %.50q: cosine %.6f between native and runtime, want at least 0.9999", kind, texts[i], c)
			}
		}
		slices.Sort(cosines)
		t.Logf("%v: cosine native/runtime min %.9f, median %.9f over %d texts", kind, cosines[0], cosines[len(cosines)/2], len(cosines))
	}
}

// TestRealEncoderSimilarities checks a few similarity orderings that a
// sentence encoder gets right.
func TestRealEncoderSimilarities(t *testing.T) {
	m := realEncoder(t, embed.Config{})
	cases := []struct{ anchor, near, far string }{
		{"How do I reset my password?", "I forgot my login credentials", "The weather is sunny today"},
		{"deploy the app to kubernetes", "roll out a new release on the k8s cluster", "bake a chocolate cake"},
		{"A man is playing a guitar.", "Someone plays an instrument.", "A woman is slicing vegetables."},
		{"convert a csv file to excel", "turn a spreadsheet into xlsx format", "walk the dog in the park"},
	}
	ctx := context.Background()
	for _, c := range cases {
		v, err := m.Embed(ctx, []string{c.anchor, c.near, c.far}, embed.Query)
		if err != nil {
			t.Fatal(err)
		}
		near, far := cos64(v[0], v[1]), cos64(v[0], v[2])
		if near <= far+0.1 {
			t.Errorf("%q: %.3f to %q, %.3f to %q; want the first clearly higher", c.anchor, near, c.near, far, c.far)
		}
	}
}

func cos64(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}
