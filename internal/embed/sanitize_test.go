package embed_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
)

func TestSanitize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "fill pdf forms", 0, "fill pdf forms"},
		{"empty", "", 0, ""},
		{"white space", " \t\r\n\v\f\u00a0\u2028 ", 0, ""},
		{"collapse", "a \n\n\t b", 0, "a b"},
		{"controls", "a\x00b\x07c\x1b[31md\x7f", 0, "a b c [31md"},
		{"invalid utf-8", "a\xffb\xc3\x28c", 0, "a b (c"},
		{"format chars", "zero\u200bwidth\u200d \u202eRTL\ufeff", 0, "zerowidth RTL"},
		{"replacement char", "a\ufffdb", 0, "ab"},
		{"private use and unassigned", "a\ue000b\U000effffc", 0, "abc"},
		{"emoji kept", "deploy 🚀 now 👩‍👩‍👧", 0, "deploy 🚀 now 👩👩👧"},
		{"combining marks kept", "cafe\u0301", 0, "cafe\u0301"},
		{"cut at rune boundary", "aé😀", 4, "aé"},
		{"cut before pending space", "ab cd", 3, "ab"},
		{"cut exact", "ab cd", 5, "ab cd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := embed.Sanitize(tt.in, tt.max); got != tt.want {
				t.Errorf("Sanitize(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestSanitizeHugeInput(t *testing.T) {
	huge := strings.Repeat("pdf ", 1<<20) // 4 MiB
	got := embed.Sanitize(huge, 4096)
	if len(got) > 4096 || !strings.HasPrefix(got, "pdf pdf") {
		t.Errorf("Sanitize(4 MiB, 4096) gave %d bytes starting %q", len(got), got[:min(len(got), 10)])
	}
}

// checkSanitized checks Sanitize's guarantees.
func checkSanitized(t *testing.T, in, got string, max int) {
	t.Helper()
	if !utf8.ValidString(got) {
		t.Fatalf("Sanitize(%q) = %q is not valid UTF-8", in, got)
	}
	if max > 0 && len(got) > max {
		t.Fatalf("Sanitize(%q) has %d bytes, max %d", in, len(got), max)
	}
	if got != strings.TrimSpace(got) || strings.Contains(got, "  ") {
		t.Fatalf("Sanitize(%q) = %q is not trimmed and collapsed", in, got)
	}
	for _, r := range got {
		if r != ' ' && (unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsGraphic(r) || r == utf8.RuneError) {
			t.Fatalf("Sanitize(%q) = %q keeps %U", in, got, r)
		}
	}
	if again := embed.Sanitize(got, max); again != got {
		t.Fatalf("Sanitize is not idempotent: %q then %q", got, again)
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range hostileTexts() {
		f.Add(s, 64)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 4096
		if max < 0 {
			max = -max
		}
		checkSanitized(t, s, embed.Sanitize(s, max), max)
	})
}

func hostileTexts() []string {
	return []string{
		"", " ", "\x00", "\xff\xfe\xfd", "\xc3\x28", "\xed\xa0\x80", // invalid UTF-8, a surrogate
		"emoji 🚀🔥👩‍👩‍👧 🏳️‍🌈", "\u202e\u200b\ufeff", "a\u0301\u0301\u0301", "\u0301leading mark",
		"日本語のテキスト", "ﬁ ligature ẞ ǅ", "İstanbul ΣΑΣ", "\U0001F1FA\U0001F1F8", "\ue000\U000f0000",
		"tab\tnew\nline\r\n", "[CLS] [SEP] [PAD] [UNK] [MASK]", "##s ##", strings.Repeat("a", 200),
		strings.Repeat("é", 300), "ǰ̣", "\u0345\u0399", "ﷺ", "ᾳ", "\u1e9e", "\u0130\u0307",
		"000000000000000000000000000000000Ⱦ", "Ⱥ", "pdf Ⱥ form", // lowercase longer in UTF-8: the Go tokenizer panics
	}
}

var (
	fuzzOnce   sync.Once
	fuzzModels []*embed.Model
	fuzzErr    error
)

// openFuzzModels opens the tiny test model twice: with its BERT normaliser
// as written (lowercase) and with strip_accents on (NFD, then marks
// removed), the normaliser paths that real tokenizer.json files use.
func openFuzzModels(dir string) ([]*embed.Model, error) {
	plain, accents := filepath.Join(dir, "plain"), filepath.Join(dir, "accents")
	for _, d := range []string{plain, accents} {
		if _, err := embedtest.WriteTinyModel(d); err != nil {
			return nil, err
		}
	}
	p := filepath.Join(accents, "tokenizer.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	b2 := bytes.Replace(b, []byte(`"strip_accents": null`), []byte(`"strip_accents": true`), 1)
	if bytes.Equal(b, b2) {
		return nil, errors.New("strip_accents not found in tokenizer.json")
	}
	if err := os.WriteFile(p, b2, 0o644); err != nil {
		return nil, err
	}
	var models []*embed.Model
	for _, d := range []string{plain, accents} {
		// Small token limit so that huge inputs stay fast; the cut paths
		// are the same.
		m, err := embed.Open(context.Background(), embed.Config{Dir: d, MaxTokens: 64})
		if err != nil {
			return nil, err
		}
		models = append(models, m)
	}
	return models, nil
}

// FuzzEmbed checks that no text, however hostile, makes Embed fail, panic
// or exit, and that every vector is unit length or zero. The tokenizers use
// BERT's normaliser and pre-tokenizer, the code paths hugot's Go tokenizer
// runs for real models.
func FuzzEmbed(f *testing.F) {
	for _, s := range hostileTexts() {
		f.Add(s)
	}
	f.Add(strings.Repeat("x", 1<<20))
	f.Add(strings.Repeat("pdf ", 1<<18))
	fuzzOnce.Do(func() { fuzzModels, fuzzErr = openFuzzModels(f.TempDir()) })
	if fuzzErr != nil {
		f.Fatal(fuzzErr)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range fuzzModels {
			vecs, err := m.Embed(context.Background(), []string{s, "pdf " + s}, embed.Query)
			if err != nil {
				t.Fatalf("Embed(%q): %v", s, err)
			}
			for _, v := range vecs {
				n := norm(v)
				if math.IsNaN(n) || (n != 0 && math.Abs(n-1) > 1e-4) {
					t.Fatalf("Embed(%q): norm %v", s, n)
				}
			}
		}
	})
}

func TestEmbedHostileInputs(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})
	texts := append(hostileTexts(), strings.Repeat("x", 1<<20), strings.Repeat("kubernetes ", 100000))
	vecs, err := m.Embed(context.Background(), texts, embed.Document)
	if err != nil {
		t.Fatalf("Embed(hostile texts): %v", err)
	}
	for i, v := range vecs {
		n := norm(v)
		empty := embed.Sanitize(texts[i], 0) == ""
		// Texts the tokenizer fails on fall back to their ASCII part, which
		// may be empty ("Ⱥ"): zero is then allowed too.
		if (empty && n != 0) || (!empty && n != 0 && math.Abs(n-1) > 1e-4) {
			t.Errorf("text %d %.20q: norm %v", i, texts[i], n)
		}
		if !empty && n == 0 && strings.Trim(texts[i], "Ⱥ") != "" {
			t.Errorf("text %d %.20q: zero vector", i, texts[i])
		}
	}
	// 1 MiB of one word is truncated to MaxTokens, not rejected.
	long := vecs[len(vecs)-1]
	want, err := m.Embed(context.Background(), []string{"kubernetes kubernetes"}, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	if c := cosine(long, want[0]); c < 0.99 {
		t.Errorf("cos(100000 x kubernetes, kubernetes kubernetes) = %.4f, want about 1", c)
	}
}

// TestTokenizerFallback feeds texts on which the Go tokenizer panics: they
// are embedded from their ASCII words, and a Manager stays healthy.
func TestTokenizerFallback(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	m := embed.NewManager(cfg, nil, nil)
	defer m.Close()
	ctx := context.Background()
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	vecs, err := m.Embed(ctx, []string{"pdf Ⱦ form", "kubernetes"}, embed.Query)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	assertClose(t, "pdf Ⱦ form", vecs[0], wantVector(tm, "pdf", "form"), 1e-5)
	assertClose(t, "kubernetes", vecs[1], wantVector(tm, "kubernetes"), 1e-5)
	st := m.Status()
	if st.Degraded || st.TokenizeFallbacks != 1 {
		t.Errorf("Status = degraded %v, tokenize fallbacks %d; want healthy and 1", st.Degraded, st.TokenizeFallbacks)
	}
}
