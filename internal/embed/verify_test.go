package embed_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
)

func TestVerifyTinyModel(t *testing.T) {
	tm := tinyModel(t)
	writeFile(t, filepath.Join(tm.Dir, embed.ManifestFile), `{"name": "tiny", "match_threshold": 0.4, "future_key": 1}`)
	r, err := embed.Verify(context.Background(), tm.Dir, embed.Config{})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if !r.OK() {
		t.Errorf("Verify found problems: %v", r.Problems())
	}
	names := map[string]bool{}
	for _, c := range r.Checks {
		names[c.Name] = true
	}
	for _, want := range []string{"load", "vocabulary", "query vectors", "document vectors", "distinct texts", "padding invariance", "hostile inputs"} {
		if !names[want] {
			t.Errorf("no %q check in %+v", want, r.Checks)
		}
	}
	if r.Identity.Dimension != embedtest.TinyDim || r.Config.MatchThreshold != 0.4 || r.BatchThroughput <= 0 || r.Load.QueryLatency <= 0 {
		t.Errorf("report = %+v", r)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "future_key") {
		t.Errorf("Warnings = %v, want one about future_key", r.Warnings)
	}
}

func TestVerifyFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) embed.Config
		want  embed.Reason
	}{
		{"corrupt", func(t *testing.T, dir string) embed.Config {
			if err := embedtest.WriteCorruptModel(dir); err != nil {
				t.Fatal(err)
			}
			return embed.Config{}
		}, embed.ReasonModelInvalid},
		{"wrong dimension", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			return embed.Config{Dimension: 384}
		}, embed.ReasonDimension},
		{"missing", func(t *testing.T, dir string) embed.Config { return embed.Config{} }, embed.ReasonModelMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			cfg := tt.setup(t, dir)
			r, err := embed.Verify(context.Background(), dir, cfg)
			if err == nil || embed.ReasonOf(err) != tt.want {
				t.Errorf("Verify error = %v, want reason %s", err, tt.want)
			}
			if r.OK() || len(r.Problems()) != 1 {
				t.Errorf("report OK = %v, problems %v; want one problem", r.OK(), r.Problems())
			}
		})
	}
}

// TestVerifyVocabularyMismatch gives the model a tokenizer with more tokens
// than the embedding table has rows: the backend would clamp those ids.
func TestVerifyVocabularyMismatch(t *testing.T) {
	tm := tinyModel(t)
	vocab := append(embedtest.Vocab(), "extra1", "extra2")
	if err := embedtest.WriteTokenizer(filepath.Join(tm.Dir, "tokenizer.json"), vocab); err != nil {
		t.Fatal(err)
	}
	r, err := embed.Verify(context.Background(), tm.Dir, embed.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || !strings.Contains(strings.Join(r.Problems(), "\n"), "vocabulary") {
		t.Errorf("Verify problems = %v, want a vocabulary problem", r.Problems())
	}
}

// TestVerifyDefaultModel checks the project's default model, when it has
// been built (models/mcpsag-static-v1).
func TestVerifyDefaultModel(t *testing.T) {
	if _, err := os.Stat(filepath.Join(defaultModelDir, "model.onnx")); err != nil {
		t.Skipf("default model not built at %s: %v", defaultModelDir, err)
	}
	r, err := embed.Verify(context.Background(), defaultModelDir, embed.Config{})
	if err != nil {
		t.Fatalf("Verify(%s): %v", defaultModelDir, err)
	}
	if !r.OK() {
		t.Errorf("Verify(%s) problems: %v", defaultModelDir, r.Problems())
	}
	t.Logf("%s: %d dimensions, load %v, warm-up %v, query p50 %v, %.0f texts/s",
		r.Identity.Name, r.Identity.Dimension, r.Load.LoadDuration, r.Load.WarmupDuration, r.Load.QueryLatency, r.BatchThroughput)
}
