package embed

import (
	"bufio"
	"context"
	"encoding/json"

	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/slowtest"
)

// nativeTexts returns texts to compare the native paths on: the dev sets'
// queries and the lines of real SKILL.md files when ../shared is there,
// and always generated text full of what tokenizers trip on.
func nativeTexts(t *testing.T) []string {
	var out []string
	shared := filepath.Join("..", "..", "..", "shared")
	qs, _ := filepath.Glob(filepath.Join(shared, "eval", "*", "queries.jsonl"))
	for _, qf := range qs {
		f, err := os.Open(qf)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for i := 0; sc.Scan(); i++ {
			var q struct{ Query string }
			if json.Unmarshal(sc.Bytes(), &q) == nil && i%3 == 0 {
				out = append(out, q.Query)
			}
		}
		f.Close()
	}
	skills, _ := filepath.Glob(filepath.Join(shared, "corpora", "*", "*", "*", "SKILL.md"))
	for i, p := range skills {
		if i%4 != 0 {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		text := string(data)
		out = append(out, text[:min(len(text), 3000)])
		for _, line := range strings.Split(text, "\n")[:min(40, strings.Count(text, "\n"))] {
			out = append(out, line)
		}
	}
	// Words outside ASCII, which the general tokenizer encodes alone.
	out = append(out, "café déjà vu, naïve résumé", "Straße → İstanbul ﬁle ‘quoted’ — dash", "日本語のテキスト mixed with ascii",
		"emoji 🚀 rocket, e\u0301 combining", "Ünïcödé UPPER lower", "a—b “c” d…", strings.Repeat("ü ", 400))
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abcXYZ019 .,;:!?'\"()[]{}<>-_/\\|@#$%^&*+=~`\t"
	const wide = "éü—“”→日本🚀ßİ"
	for i := range 3000 {
		var b strings.Builder
		for range r.IntN(300) {
			if i%3 == 0 && r.IntN(10) == 0 {
				w := []rune(wide)
				b.WriteRune(w[r.IntN(len(w))])
				continue
			}
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		out = append(out, b.String())
	}
	out = append(out, "", " ", "[CLS]", "a [SEP] b", "[mask] me", "[UNK]", "x[PAD]y", strings.Repeat("a", 99), strings.Repeat("a", 100),
		strings.Repeat("a", 101), strings.Repeat("word ", 400), "Ünïcode naïve café", "日本語のテキスト", "emoji 🙂 here", "Ⱥ capital",
		"tab\tand\nnewline", "don't stop-me now_please", "PDFForm fillForm v2Beta", "###", "##ing", "e.g. i.e. U.S.A.")
	return out
}

// TestNativeIsTheRuntime checks, on the tiny model and the default one,
// that native tokenization gives the general tokenizer's ids and that the
// native evaluation of the static graph gives the ONNX runtime's vectors,
// bit for bit, for queries and documents.
func TestNativeIsTheRuntime(t *testing.T) {
	slowtest.Skip(t, "runs the ONNX runtime beside the native path; minutes under -race")
	texts := nativeTexts(t)
	dirs := map[string]string{"tiny": filepath.Join(t.TempDir(), "tiny")}
	if _, err := embedtest.WriteTinyModel(dirs["tiny"]); err != nil {
		t.Fatal(err)
	}
	if def := filepath.Join("..", "..", "models", "mcpsag-static-v1"); fileExists(filepath.Join(def, "model.onnx")) && !testing.Short() {
		dirs["default"] = def
	}
	ctx := context.Background()
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			m, err := Open(ctx, Config{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if m.static == nil || m.wp == nil {
				t.Fatalf("native paths off: static %v, tokenizer %v", m.static != nil, m.wp != nil)
			}
			wp, st := m.wp, m.static
			native := 0
			for i, text := range texts {
				s := Sanitize(text, m.maxTextBytes)
				if s == "" {
					continue
				}
				m.wp = nil
				want, werr := m.tokenize(s)
				m.wp = wp
				got, gerr := m.tokenize(s)
				if _, ok := wp.encode(s, m.cfg.MaxTokens, m.wordPieces); ok {
					native++
				}
				if (werr == nil) != (gerr == nil) || !slices.Equal(got.ids, want.ids) || !slices.Equal(got.mask, want.mask) || !slices.Equal(got.typeIDs, want.typeIDs) {
					t.Fatalf("text %d %.80q: native ids %v (%v), tokenizer %v (%v)", i, s, got.ids, gerr, want.ids, werr)
				}
			}
			if native < len(texts)/2 {
				t.Errorf("only %d of %d texts took the native tokenizer", native, len(texts))
			}
			var some []string // the runtime is slow: every third text
			for i := 0; i < len(texts); i += 3 {
				some = append(some, texts[i])
			}
			for _, kind := range []Kind{Query, Document} {
				for lo := 0; lo < len(some); lo += 64 {
					batch := some[lo:min(len(some), lo+64)]
					m.static = nil
					want, _, err := m.embed(ctx, batch, kind)
					m.static = st
					if err != nil {
						t.Fatal(err)
					}
					got, _, err := m.embed(ctx, batch, kind)
					if err != nil {
						t.Fatal(err)
					}
					for i := range batch {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("%v %.60q: native vector differs from the runtime's (first values %v vs %v)", kind, batch[i], got[i][:3], want[i][:3])
						}
					}
				}
			}
		})
	}
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// FuzzNativeTokenizer compares the native tokenizer with the general one
// on arbitrary text.
func FuzzNativeTokenizer(f *testing.F) {
	dir := filepath.Join(f.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		f.Fatal(err)
	}
	m, err := Open(context.Background(), Config{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.Close() })
	for _, s := range []string{"fill pdf forms", "a [SEP] b", "x,y;z", strings.Repeat("ab", 60), "café — déjà", "日本語 text", "İ ﬁ ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s := Sanitize(text, m.maxTextBytes)
		if s == "" {
			return
		}
		ids, ok := m.wp.encode(s, m.cfg.MaxTokens, m.wordPieces)
		if !ok {
			return
		}
		wp := m.wp
		m.wp = nil
		want, err := m.tokenize(s)
		m.wp = wp
		if err == nil && !slices.Equal(ids, want.ids) {
			t.Fatalf("%q: native %v, tokenizer %v", s, ids, want.ids)
		}
	})
}

// TestStaticRuntimeOnDemand checks that Open evaluates a static graph
// without building the model runtime, that the runtime is built on first
// use and only once, that it refuses an ONNX file that changed since Open,
// and that none is built after Close.
func TestStaticRuntimeOnDemand(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatal(err)
	}
	m, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.hm != nil || m.pipe != nil || !m.info.Native {
		t.Fatalf("Open built the runtime for a static graph (native %v)", m.info.Native)
	}
	if m.info.Output != "last_hidden_state" || !slices.Equal(m.info.Outputs, []string{"last_hidden_state"}) || m.cfg.Pooling != PoolingMean {
		t.Fatalf("output %q of %v, pooling %q; want last_hidden_state, mean", m.info.Output, m.info.Outputs, m.cfg.Pooling)
	}
	if _, err := m.Embed(ctx, []string{"fill in a pdf form"}, Query); err != nil || m.hm != nil {
		t.Fatalf("native embed: %v, runtime built %v", err, m.hm != nil)
	}
	hm, pipe, err := m.runtime()
	if err != nil || hm == nil || pipe == nil {
		t.Fatalf("runtime: %v", err)
	}
	if again, _, _ := m.runtime(); again != hm {
		t.Fatal("runtime built twice")
	}
	if m.hm.OutputsMeta[m.outIndex].Name != m.cfg.OutputName {
		t.Fatalf("runtime reads output %q, want %q", m.hm.OutputsMeta[m.outIndex].Name, m.cfg.OutputName)
	}

	changed, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer changed.Close()
	if _, err := embedtest.WriteTinyModelDim(dir, embedtest.TinyDim+1); err != nil {
		t.Fatal(err)
	}
	changed.static = nil // as a non-static model: every run needs the runtime
	_, err = changed.Embed(ctx, []string{"fill in a pdf form"}, Query)
	if err == nil || !strings.Contains(err.Error(), "changed since the model was loaded") || ReasonOf(err) != ReasonModelInvalid {
		t.Fatalf("runtime over a changed ONNX file: %v (reason %v)", err, ReasonOf(err))
	}

	closed, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if _, _, err := closed.runtime(); err != ErrClosed {
		t.Fatalf("runtime after Close: %v, want ErrClosed", err)
	}
}
