package embed_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
)

func TestOpenIdentity(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})

	onnx, err := os.ReadFile(filepath.Join(tm.Dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(filepath.Join(tm.Dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(onnx, tok...))
	id := m.Identity()
	if want := hex.EncodeToString(sum[:]); id.Fingerprint != want {
		t.Errorf("Fingerprint = %s, want %s", id.Fingerprint, want)
	}
	if id.Name != "tiny" || id.Dimension != embedtest.TinyDim || id.Path != tm.Dir || id.Settings == "" {
		t.Errorf("Identity = %+v, want name tiny, dimension %d, path %s, settings set", id, embedtest.TinyDim, tm.Dir)
	}
	info := m.LoadInfo()
	shapes := len(m.Config().SequenceBuckets)
	if info.Native {
		shapes = 1 // evaluated natively: nothing to compile
	}
	if info.LoadDuration <= 0 || info.QueryLatency <= 0 || info.WarmShapes != shapes || !info.Native || !info.NativeTokenizer {
		t.Errorf("LoadInfo = %+v, want durations, native evaluation of the static graph, and %d warm shapes", info, shapes)
	}
	cfg := m.Config()
	if cfg.Pooling != embed.PoolingMean || cfg.OutputName != "last_hidden_state" || cfg.Dimension != embedtest.TinyDim {
		t.Errorf("Config() = %+v, want mean pooling of last_hidden_state, dimension %d", cfg, embedtest.TinyDim)
	}
}

func TestEmbedExpectedVectors(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})
	tests := []struct {
		text   string
		tokens []string
	}{
		{"pdf form", []string{"pdf", "form"}},
		{"Fill PDF forms!", []string{"fill", "pdf", "forms", "!"}},
		{"  kubernetes\n\tdeploy ", []string{"kubernetes", "deploy"}},
		{"pdfx", []string{"pdf", "##x"}},          // WordPiece subwords
		{"日本", []string{"[UNK]", "[UNK]"}},        // CJK characters are split, unknown
		{"deploy 🚀", []string{"deploy", "[UNK]"}}, // emoji is unknown
	}
	var texts []string
	for _, tt := range tests {
		texts = append(texts, tt.text)
	}
	vecs, err := m.Embed(context.Background(), texts, embed.Query)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	for i, tt := range tests {
		assertClose(t, tt.text, vecs[i], wantVector(tm, tt.tokens...), 1e-5)
	}
	if got := m.Computed(); got != int64(len(tests)) {
		t.Errorf("Computed() = %d, want %d", got, len(tests))
	}
}

func TestEmbedSemantics(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})
	vecs, err := m.Embed(context.Background(), []string{"pdf form", "fill pdf forms", "kubernetes deploy"}, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	near, far := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2])
	if near < 0.8 || far > 0.3 {
		t.Errorf("cos(pdf form, fill pdf forms) = %.3f, cos(pdf form, kubernetes deploy) = %.3f; want > 0.8 and < 0.3", near, far)
	}
}

func TestEmbedPrefixesAndTruncation(t *testing.T) {
	tm := tinyModel(t)
	writeFile(t, filepath.Join(tm.Dir, embed.ManifestFile),
		`{"name": "tiny-manifest", "query_prefix": "search: ", "document_prefix": "email ", "max_tokens": 5, "match_threshold": 0.42}`)
	m := open(t, embed.Config{Dir: tm.Dir, DocumentPrefix: "git "}) // config overrides the manifest
	cfg := m.Config()
	if cfg.Name != "tiny-manifest" || cfg.QueryPrefix != "search: " || cfg.DocumentPrefix != "git " || cfg.MaxTokens != 5 || cfg.MatchThreshold != 0.42 {
		t.Fatalf("Config() = %+v, want manifest values with the document prefix from Config", cfg)
	}
	ctx := context.Background()
	q, err := m.Embed(ctx, []string{"pdf form kubernetes"}, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	// "search : pdf form kubernetes" cut to 5 tokens, [CLS] and [SEP] kept.
	assertClose(t, "query", q[0], wantVector(tm, "s", "##e", "##a"), 1e-5)
	d, err := m.Embed(ctx, []string{"pdf form kubernetes"}, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "document", d[0], wantVector(tm, "git", "pdf", "form"), 1e-5)

	if _, err := m.Embed(ctx, []string{"x"}, embed.Kind(0)); !errors.Is(err, embed.ErrInvalidKind) {
		t.Errorf("Embed with kind 0: error %v, want ErrInvalidKind", err)
	}
}

func TestEmbedBatchesMatchSingles(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir, BatchSize: 4})
	ctx := context.Background()
	texts := []string{
		"pdf", "", "fill pdf forms and sign the document pages", "git commit",
		"resize images", "send an email to the inbox with a message", "sql", " ",
		"schedule a meeting", "translate english to french please",
	}
	batch, err := m.Embed(ctx, texts, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		single, err := m.Embed(ctx, []string{text}, embed.Document)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, text, batch[i], single[0], 1e-6)
		if strings.TrimSpace(text) == "" {
			if n := norm(batch[i]); n != 0 {
				t.Errorf("empty text %q: norm %v, want the zero vector", text, n)
			}
		} else if n := norm(batch[i]); n < 0.9999 || n > 1.0001 {
			t.Errorf("%q: norm %v, want 1", text, n)
		}
	}
	// 8 non-empty texts in the batch call, 10 single calls with 8 non-empty.
	if got := m.Computed(); got != 16 {
		t.Errorf("Computed() = %d, want 16 (empty texts are not run)", got)
	}
	// BatchSize 4 gives batch buckets 1 and 4 only.
	if got := m.Config().BatchBuckets; len(got) != 2 || got[0] != 1 || got[1] != 4 {
		t.Errorf("BatchBuckets = %v, want [1 4]", got)
	}
}

func TestEmbedConcurrent(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir, Concurrency: 2})
	ctx := context.Background()
	texts := []string{"pdf form", "kubernetes deploy", "git merge branch", "resize a photo"}
	want, err := m.Embed(ctx, texts, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				j := (g + i) % len(texts)
				got, err := m.Embed(ctx, []string{texts[j]}, embed.Query)
				if err != nil {
					errs <- err
					return
				}
				if cosine(got[0], want[j]) < 0.99999 {
					errs <- errors.New("concurrent embedding differs for " + texts[j])
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestOnnxSubfolderLayout(t *testing.T) {
	tm := tinyModel(t)
	if err := os.Mkdir(filepath.Join(tm.Dir, "onnx"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tm.Dir, "model.onnx"), filepath.Join(tm.Dir, "onnx", "model.onnx")); err != nil {
		t.Fatal(err)
	}
	m := open(t, embed.Config{Dir: tm.Dir})
	vecs, err := m.Embed(context.Background(), []string{"pdf form"}, embed.Query)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "pdf form", vecs[0], wantVector(tm, "pdf", "form"), 1e-5)
}

func TestPoolingSettings(t *testing.T) {
	tests := []struct {
		name    string
		cfg     embed.Config
		pooling string // 1_Pooling/config.json content, "" for none
		want    embed.Pooling
		wantErr bool
	}{
		{name: "auto", want: embed.PoolingMean},
		{name: "sentence-transformers cls", pooling: `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`, want: embed.PoolingCLS},
		{name: "sentence-transformers mean", pooling: `{"pooling_mode_mean_tokens": true}`, want: embed.PoolingMean},
		{name: "config overrides", cfg: embed.Config{Pooling: embed.PoolingMean}, pooling: `{"pooling_mode_cls_token": true}`, want: embed.PoolingMean},
		{name: "unsupported mode", pooling: `{"pooling_mode_max_tokens": true}`, wantErr: true},
		{name: "pooled output on a 3-D output", cfg: embed.Config{Pooling: embed.PoolingOutput}, wantErr: true},
		{name: "unknown output", cfg: embed.Config{OutputName: "sentence_embedding"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := tinyModel(t)
			if tt.pooling != "" {
				writeFile(t, filepath.Join(tm.Dir, "1_Pooling", "config.json"), tt.pooling)
			}
			tt.cfg.Dir = tm.Dir
			m, err := embed.Open(context.Background(), tt.cfg)
			if tt.wantErr {
				if err == nil {
					m.Close()
					t.Fatal("Open succeeded, want an error")
				}
				if r := embed.ReasonOf(err); r != embed.ReasonModelInvalid {
					t.Errorf("ReasonOf(%v) = %s, want %s", err, r, embed.ReasonModelInvalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if got := m.Config().Pooling; got != tt.want {
				t.Errorf("Pooling = %q, want %q", got, tt.want)
			}
			vecs, err := m.Embed(context.Background(), []string{"pdf form"}, embed.Query)
			if err != nil {
				t.Fatal(err)
			}
			want := wantVector(tm, "pdf", "form")
			if tt.want == embed.PoolingCLS {
				want = make([]float32, tm.Dim) // the tiny model's [CLS] row is zero
			}
			assertClose(t, "pdf form", vecs[0], want, 1e-5)
		})
	}
}

func TestOpenFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) embed.Config
		want  embed.Reason
	}{
		{"no folder configured", func(t *testing.T, dir string) embed.Config { return embed.Config{} }, embed.ReasonModelMissing},
		{"folder missing", func(t *testing.T, dir string) embed.Config {
			return embed.Config{Dir: filepath.Join(dir, "nope")}
		}, embed.ReasonModelMissing},
		{"folder is a file", func(t *testing.T, dir string) embed.Config {
			writeFile(t, filepath.Join(dir, "f"), "x")
			return embed.Config{Dir: filepath.Join(dir, "f")}
		}, embed.ReasonModelMissing},
		{"no model.onnx", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			os.Remove(filepath.Join(dir, "model.onnx"))
			return embed.Config{Dir: dir}
		}, embed.ReasonModelMissing},
		{"no tokenizer.json", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			os.Remove(filepath.Join(dir, "tokenizer.json"))
			return embed.Config{Dir: dir}
		}, embed.ReasonModelMissing},
		{"model.onnx unreadable", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			os.Remove(filepath.Join(dir, "model.onnx"))
			os.Mkdir(filepath.Join(dir, "model.onnx"), 0o755) // reading a directory fails, even as root
			return embed.Config{Dir: dir}
		}, embed.ReasonUnreadable},
		{"corrupt onnx", func(t *testing.T, dir string) embed.Config {
			if err := embedtest.WriteCorruptModel(dir); err != nil {
				t.Fatal(err)
			}
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"truncated onnx", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			p := filepath.Join(dir, "model.onnx")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"tokenizer not json", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			writeFile(t, filepath.Join(dir, "tokenizer.json"), "{not json")
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"tokenizer with wrong types", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			writeFile(t, filepath.Join(dir, "tokenizer.json"), `{"model": {"type": "WordPiece", "vocab": 3}}`)
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"tokenizer that cannot encode", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			// WordPiece fails on unknown words when [UNK] is not in the
			// vocabulary; the load-time sample finds it.
			writeFile(t, filepath.Join(dir, "tokenizer.json"), `{
  "added_tokens": [{"id": 0, "content": "[CLS]", "special": true}, {"id": 1, "content": "[SEP]", "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 1], "cls": ["[CLS]", 0]},
  "decoder": null,
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
    "vocab": {"[CLS]": 0, "[SEP]": 1, "a": 2}}
}`)
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"wrong dimension", func(t *testing.T, dir string) embed.Config {
			if _, err := embedtest.WriteTinyModelDim(dir, 16); err != nil {
				t.Fatal(err)
			}
			return embed.Config{Dir: dir, Dimension: embedtest.TinyDim}
		}, embed.ReasonDimension},
		{"wrong dimension in manifest", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			writeFile(t, filepath.Join(dir, embed.ManifestFile), `{"dimension": 384}`)
			return embed.Config{Dir: dir}
		}, embed.ReasonDimension},
		{"bad manifest", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			writeFile(t, filepath.Join(dir, embed.ManifestFile), `{"pooling": "max"}`)
			return embed.Config{Dir: dir}
		}, embed.ReasonModelInvalid},
		{"bad config", func(t *testing.T, dir string) embed.Config {
			mustTiny(t, dir)
			return embed.Config{Dir: dir, QueryPrefix: "bad\x00prefix"}
		}, embed.ReasonConfigInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tt.setup(t, dir)
			m, err := embed.Open(context.Background(), cfg)
			if err == nil {
				m.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if got := embed.ReasonOf(err); got != tt.want {
				t.Errorf("ReasonOf(%v) = %s, want %s", err, got, tt.want)
			}
		})
	}
}

func mustTiny(t *testing.T, dir string) {
	t.Helper()
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatal(err)
	}
}

func TestCloseWaitsAndRejects(t *testing.T) {
	tm := tinyModel(t)
	m, err := embed.Open(context.Background(), embed.Config{Dir: tm.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Embed(context.Background(), []string{"pdf"}, embed.Query); !errors.Is(err, embed.ErrClosed) {
		t.Errorf("Embed after Close: %v, want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestEmbedCanceled(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir, Concurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"pdf"}, embed.Query); !errors.Is(err, context.Canceled) {
		t.Errorf("Embed with a canceled context: %v, want context.Canceled", err)
	}
	// The model still works.
	ctx, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	if _, err := m.Embed(ctx, []string{"pdf"}, embed.Query); err != nil {
		t.Errorf("Embed after a canceled call: %v", err)
	}
}
