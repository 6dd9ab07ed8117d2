package embed

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/knights-analytics/hugot/backends"

	"github.com/mcpsag/router/internal/embed/embedtest"
)

type recorder struct{ reasons []string }

func (r *recorder) EmbeddingFallback(_ context.Context, reason string) {
	r.reasons = append(r.reasons, reason)
}

// TestManagerTimeoutDegrades shortens the timeout of a loaded model (the
// warm-up at load must pass, so it cannot be short from the start) and
// checks that a run past it degrades the Manager until Reload.
func TestManagerTimeoutDegrades(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg := Config{Dir: dir}
	m := NewManager(cfg, nil, rec)
	defer m.Close()
	ctx := context.Background()
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	m.mu.RLock()
	m.cur.model.cfg.Timeout = time.Nanosecond
	m.mu.RUnlock()

	_, err := m.Embed(ctx, []string{"fill pdf forms"}, Document)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Embed past the timeout: %v, want ErrUnavailable", err)
	}
	st := m.Status()
	if !st.Degraded || st.Reason != ReasonEmbedTimeout {
		t.Errorf("Status = %+v, want degraded, embed_timeout", st)
	}
	if !slices.Equal(rec.reasons, []string{string(ReasonEmbedTimeout)}) {
		t.Errorf("fallback events = %v, want [embed_timeout]", rec.reasons)
	}
	if _, err := m.Embed(ctx, []string{"pdf"}, Query); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Embed while degraded: %v, want ErrUnavailable", err)
	}
	// The same config reloads (the degraded state forces it) and recovers.
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Embed(ctx, []string{"pdf"}, Query); err != nil {
		t.Errorf("Embed after Reload: %v", err)
	}
}

func TestLRU(t *testing.T) {
	c := newLRU(2)
	c.put("a", []float32{1})
	c.put("b", []float32{2})
	if v, ok := c.get("a"); !ok || v[0] != 1 {
		t.Fatalf("get(a) = %v, %v", v, ok)
	}
	c.put("c", []float32{3}) // evicts b, the least recently used
	if _, ok := c.get("b"); ok {
		t.Error("b survived eviction")
	}
	c.put("a", []float32{4}) // update in place
	if v, _ := c.get("a"); v[0] != 4 || c.len() != 2 {
		t.Errorf("after update: a = %v, len %d", v, c.len())
	}
	var disabled *lru = newLRU(0)
	disabled.put("a", []float32{1})
	if _, ok := disabled.get("a"); ok || disabled.len() != 0 {
		t.Error("a disabled cache kept a value")
	}
}

func TestBuckets(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantSeq   []int
		wantBatch []int
	}{
		{"defaults", Config{}, []int{16, 32, 64, 128, 256}, []int{1, 8, 16, 32}},
		{"small", Config{MaxTokens: 20, BatchSize: 1}, []int{16, 20}, []int{1}},
		{"explicit", Config{MaxTokens: 100, BatchSize: 10, SequenceBuckets: []int{50, 10, 10, 500}, BatchBuckets: []int{4, 0}},
			[]int{10, 50, 100}, []int{4, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Dir = "/m"
			got, err := resolve(tt.cfg, Manifest{}, hfConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.SequenceBuckets, tt.wantSeq) || !slices.Equal(got.BatchBuckets, tt.wantBatch) {
				t.Errorf("buckets = %v, %v; want %v, %v", got.SequenceBuckets, got.BatchBuckets, tt.wantSeq, tt.wantBatch)
			}
		})
	}
}

func TestResolvePrecedence(t *testing.T) {
	man := Manifest{Name: "m", QueryPrefix: "q: ", MaxTokens: 512, MatchThreshold: 0.3, Pooling: PoolingCLS}
	got, err := resolve(Config{Dir: "/x/folder", MaxTokens: 64}, man, hfConfig{maxPositions: 128, pooling: PoolingMean})
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "m" || got.QueryPrefix != "q: " || got.MaxTokens != 64 || got.MatchThreshold != 0.3 || got.Pooling != PoolingCLS {
		t.Errorf("resolve = %+v", got)
	}
	// max_position_embeddings caps the manifest's max_tokens.
	got, err = resolve(Config{Dir: "/x/folder"}, man, hfConfig{maxPositions: 128})
	if err != nil || got.MaxTokens != 128 {
		t.Errorf("MaxTokens = %d, %v; want 128", got.MaxTokens, err)
	}
	got, err = resolve(Config{Dir: "/x/folder"}, Manifest{}, hfConfig{pooling: PoolingMean})
	if err != nil || got.Name != "folder" || got.MatchThreshold != DefaultMatchThreshold || got.Pooling != PoolingMean || got.BodyChars != 0 {
		t.Errorf("defaults: %+v, %v", got, err)
	}
	// body_chars: the config's, else the manifest's; negative means none.
	withBody := Manifest{BodyChars: 400}
	for _, c := range []struct{ cfg, want int }{{0, 400}, {120, 120}, {-1, 0}} {
		got, err := resolve(Config{Dir: "/x/folder", BodyChars: c.cfg}, withBody, hfConfig{})
		if err != nil || got.BodyChars != c.want {
			t.Errorf("BodyChars %d with a manifest of 400: %d, %v; want %d", c.cfg, got.BodyChars, err, c.want)
		}
	}
}

func TestPickOutput(t *testing.T) {
	hidden := backends.InputOutputInfo{Name: "last_hidden_state", Dimensions: []int64{-1, -1, 8}}
	sentence := backends.InputOutputInfo{Name: "sentence_embedding", Dimensions: []int64{-1, 8}}
	pooler := backends.InputOutputInfo{Name: "pooler_output", Dimensions: []int64{-1, 8}}
	dynamic := backends.InputOutputInfo{Name: "token_embeddings", Dimensions: []int64{-1, -1, -1}}
	tests := []struct {
		outs        []backends.InputOutputInfo
		name        string
		pooling     Pooling
		wantName    string
		wantPooling Pooling
		wantErr     bool
	}{
		{outs: []backends.InputOutputInfo{hidden, pooler}, wantName: "last_hidden_state", wantPooling: PoolingMean},
		{outs: []backends.InputOutputInfo{hidden, sentence}, wantName: "sentence_embedding", wantPooling: PoolingOutput},
		{outs: []backends.InputOutputInfo{pooler}, wantName: "pooler_output", wantPooling: PoolingOutput},
		{outs: []backends.InputOutputInfo{hidden, pooler}, pooling: PoolingCLS, wantName: "last_hidden_state", wantPooling: PoolingCLS},
		{outs: []backends.InputOutputInfo{hidden, pooler}, pooling: PoolingOutput, wantName: "pooler_output", wantPooling: PoolingOutput},
		{outs: []backends.InputOutputInfo{hidden, pooler}, name: "pooler_output", wantName: "pooler_output", wantPooling: PoolingOutput},
		{outs: []backends.InputOutputInfo{hidden}, name: "pooler_output", wantErr: true},
		{outs: []backends.InputOutputInfo{pooler}, pooling: PoolingMean, wantErr: true},
		{outs: []backends.InputOutputInfo{dynamic}, wantErr: true},
		{outs: nil, wantErr: true},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			out, pooling, err := pickOutput(tt.outs, tt.name, tt.pooling)
			if tt.wantErr {
				if err == nil {
					t.Errorf("pickOutput = %s %s, want an error", out.Name, pooling)
				}
				return
			}
			if err != nil || out.Name != tt.wantName || pooling != tt.wantPooling {
				t.Errorf("pickOutput = %s %s %v, want %s %s", out.Name, pooling, err, tt.wantName, tt.wantPooling)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"name": "m", "query_prefix": "query: ", "max_tokens": 128, "match_threshold": 0.4, "pooling": "cls", "x": 1}`))
	f.Add([]byte(`{"max_tokens": -1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, _, err := parseManifest(b)
		if err != nil {
			return
		}
		// A manifest that parses resolves into a valid config, or fails
		// with an error, never a panic.
		if _, err := resolve(Config{Dir: "/m"}, m, hfConfig{}); err == nil && m.MaxTokens < 0 {
			t.Errorf("negative max_tokens %d accepted", m.MaxTokens)
		}
	})
}

// TestRunTimeout: a run gets one Timeout per 2,048 tokens, at least one,
// and a run of documents eight times as long.
func TestRunTimeout(t *testing.T) {
	batch := func(lens ...int) []tokenized {
		var b []tokenized
		for _, n := range lens {
			b = append(b, tokenized{ids: make([]int, n)})
		}
		return b
	}
	for _, c := range []struct {
		name  string
		batch []tokenized
		kind  Kind
		want  time.Duration
	}{
		{"one short query", batch(12), Query, time.Second},
		{"queries up to 2,048 tokens", batch(1024, 1024), Query, time.Second},
		{"queries of 2,049 tokens", batch(1024, 1025), Query, 2 * time.Second},
		{"32 skill texts of 256 tokens", batch(slices.Repeat([]int{256}, 32)...), Document, 32 * time.Second},
		{"one short skill text", batch(20), Document, 8 * time.Second},
	} {
		if got := runTimeout(time.Second, c.batch, c.kind); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestManifestKeys: every field of Manifest is a key a manifest may hold
// (Verify warns of none of them), and a key it lacks is reported.
func TestManifestKeys(t *testing.T) {
	full := `{"name": "m", "query_prefix": "q", "document_prefix": "d", "max_tokens": 8, "match_threshold": 0.5,
		"body_chars": 400, "pooling": "mean", "output_name": "o", "dimension": 4, "colour": "blue"}`
	_, unknown, err := parseManifest([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(unknown, []string{"colour"}) {
		t.Errorf("unknown keys %v, want only colour", unknown)
	}
	if n := reflect.TypeFor[Manifest]().NumField(); len(manifestKeys()) != n || n != 9 {
		t.Errorf("%d manifest keys for %d fields; the test's manifest has 9: add the new field to it", len(manifestKeys()), n)
	}
}
