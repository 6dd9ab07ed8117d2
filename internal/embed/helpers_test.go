package embed_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
)

// tinyModel writes the tiny test model into a new temporary folder.
func tinyModel(t testing.TB) *embedtest.Model {
	t.Helper()
	m, err := embedtest.WriteTinyModel(filepath.Join(t.TempDir(), "tiny"))
	if err != nil {
		t.Fatalf("WriteTinyModel: %v", err)
	}
	return m
}

// open loads a model and closes it when the test ends.
func open(t testing.TB, cfg embed.Config) *embed.Model {
	t.Helper()
	m, err := embed.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%s): %v", cfg.Dir, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cosine is the cosine similarity of two vectors of equal length.
var cosine = embed.Cosine

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// wantVector is what the tiny model must return for a token sequence: the
// L2-normalised mean of the token rows, [CLS] and [SEP] included.
func wantVector(tm *embedtest.Model, tokens ...string) []float32 {
	tokens = append(append([]string{"[CLS]"}, tokens...), "[SEP]")
	sum := make([]float64, tm.Dim)
	for _, tok := range tokens {
		row := tm.Row(tok)
		if row == nil {
			panic("token not in vocabulary: " + tok)
		}
		for j, x := range row {
			sum[j] += float64(x)
		}
	}
	var n float64
	for j := range sum {
		sum[j] /= float64(len(tokens))
		n += sum[j] * sum[j]
	}
	out := make([]float32, tm.Dim)
	for j := range sum {
		out[j] = float32(sum[j] / math.Sqrt(n))
	}
	return out
}

func assertClose(t testing.TB, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > tol {
			t.Fatalf("%s:\n got  %v\n want %v", what, got, want)
		}
	}
}
