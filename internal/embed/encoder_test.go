package embed

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/encoder/encodertest"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// TestEncoderTokenizerIsHF checks the tokenization of an encoder graph's
// texts against the ids Hugging Face's tokenizers library gives with the
// tokenizer.json of all-MiniLM-L6-v2 (testdata/minilm-tokens.json, made
// with it): lowercasing, accent stripping (strip_accents null), words
// outside ASCII, CJK and punctuation. It needs that tokenizer.json, from
// the folder MCPSAG_ENCODER_SRC names.
func TestEncoderTokenizerIsHF(t *testing.T) {
	src := os.Getenv("MCPSAG_ENCODER_SRC")
	if src == "" {
		t.Skip("MCPSAG_ENCODER_SRC is not set: it names a folder with the tokenizer.json of all-MiniLM-L6-v2")
	}
	tokBytes, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "minilm-tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Text string
		IDs  []int
	}
	if err := json.Unmarshal(golden, &cases); err != nil {
		t.Fatal(err)
	}
	tk, err := loadTokenizer(tokBytes, 512)
	if err != nil {
		t.Fatal(err)
	}
	wp := newWordPiece(tokBytes)
	if wp == nil {
		t.Fatal("the native tokenizer does not take this tokenizer.json")
	}
	m := &Model{tk: tk, wp: wp, wpUnicode: true, cfg: Config{MaxTokens: 512}}
	native := 0
	for _, c := range cases {
		s := Sanitize(c.Text, 1<<20)
		got, err := m.tokenize(s)
		if err != nil {
			t.Fatalf("%q: %v", c.Text, err)
		}
		if !slices.Equal(got.ids, c.IDs) {
			t.Errorf("%q: ids %v, Hugging Face %v", c.Text, got.ids, c.IDs)
		}
		if _, ok := wp.encodeUnicode(s, 512); ok {
			native++
		}
	}
	if native < len(cases)-1 {
		t.Errorf("only %d of %d texts took the native tokenizer", native, len(cases))
	}
	// The general tokenizer does not strip accents: the test can tell.
	m.wp = nil
	got, _ := m.tokenize("résumé of the café's naïve owner")
	if slices.Equal(got.ids, cases[2].IDs) {
		t.Error("the general tokenizer gives the library's ids for accented words")
	}
}

// writeTinyEncoder writes a model folder holding a small random encoder
// graph and the tiny tokenizer.
func writeTinyEncoder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "encoder")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vocab := embedtest.Vocab()
	c := onnxgraph.EncoderConfig{Layers: 2, Hidden: 32, Heads: 4, Intermediate: 48, VocabSize: len(vocab), MaxPositions: 64, TypeVocab: 2, LayerNormEps: 1e-12}
	if err := encodertest.Random(c, 31).WriteFile(filepath.Join(dir, "model.onnx")); err != nil {
		t.Fatal(err)
	}
	if err := embedtest.WriteTokenizer(filepath.Join(dir, "tokenizer.json"), vocab); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestEncoderRunsNatively checks that Open evaluates an encoder graph
// natively without building the runtime, caps the tokens at its
// positions, and uses any number of workers alike.
func TestEncoderRunsNatively(t *testing.T) {
	ctx := context.Background()
	dir := writeTinyEncoder(t)
	m, err := Open(ctx, Config{Dir: dir, MaxTokens: 100, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	info := m.LoadInfo()
	if m.hm != nil || m.enc == nil || !info.Native || !info.NativeTokenizer || !strings.HasPrefix(info.Evaluator, "encoder-") {
		t.Fatalf("runtime built %v, load info %+v: want the native encoder only", m.hm != nil, info)
	}
	if m.Config().MaxTokens != 64 || m.Config().Pooling != PoolingMean {
		t.Fatalf("max tokens %d, pooling %q; want 64 (the positions), mean", m.Config().MaxTokens, m.Config().Pooling)
	}
	got, err := m.Embed(ctx, encoderTexts, Query)
	if err != nil {
		t.Fatal(err)
	}
	if m.hm != nil {
		t.Fatal("Embed built the runtime")
	}
	two, err := Open(ctx, Config{Dir: dir, MaxTokens: 100, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	again, err := two.Embed(ctx, encoderTexts, Query)
	if err != nil {
		t.Fatal(err)
	}
	for i := range encoderTexts {
		if !sameBits(again[i], got[i]) {
			t.Fatalf("%.30q: two workers give another vector than one", encoderTexts[i])
		}
	}
}

var encoderTexts = []string{"fill in a pdf form", "deploy to kubernetes with helm", "résumé ünïcode", strings.Repeat("send an email ", 30)}

// TestEncoderMatchesRuntime checks that the native vectors of an encoder
// graph are the runtime's, through EmbedRuntime and through Verify's check.
func TestEncoderMatchesRuntime(t *testing.T) {
	if raceDetector {
		// gomlx's Go backend runs independent ops of a graph in parallel
		// and updates its buffer bookkeeping without a lock (simplego
		// exec.go says so); this graph's parallel branches make the race
		// detector see it.
		t.Skip("the ONNX runtime's parallel executor races on its own bookkeeping under the race detector")
	}
	ctx := context.Background()
	dir := writeTinyEncoder(t)
	m, err := Open(ctx, Config{Dir: dir, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, err := m.Embed(ctx, encoderTexts, Query)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.EmbedRuntime(ctx, encoderTexts, Query)
	if err != nil {
		t.Fatal(err)
	}
	for i := range encoderTexts {
		if c := cosine(got[i], want[i]); c < 0.9999 {
			t.Errorf("%.30q: cosine %.6f with the runtime, want at least 0.9999", encoderTexts[i], c)
		}
	}

	r, err := Verify(ctx, dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Checks {
		found = found || (c.Name == "native evaluation" && c.OK)
	}
	if !r.OK() || !found {
		t.Fatalf("Verify: %v (native evaluation checked: %v)", r.Problems(), found)
	}
}
