package embed_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/testlog"
)

// fallbackRecorder is a FallbackReporter that records the reasons it gets.
type fallbackRecorder struct {
	mu      sync.Mutex
	reasons []string
}

func (r *fallbackRecorder) EmbeddingFallback(ctx context.Context, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reasons = append(r.reasons, reason)
}

func (r *fallbackRecorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reasons...)
}

func newManager(t *testing.T, cfg embed.Config) (*embed.Manager, *fallbackRecorder, *testlog.Buffer) {
	t.Helper()
	rec := &fallbackRecorder{}
	logs := &testlog.Buffer{}
	m := embed.NewManager(cfg, slog.New(slog.NewJSONHandler(logs, nil)), rec)
	t.Cleanup(func() { m.Close() })
	return m, rec, logs
}

func TestManagerNotLoaded(t *testing.T) {
	m, rec, _ := newManager(t, embed.Config{})
	_, err := m.Embed(context.Background(), []string{"pdf"}, embed.Query)
	if !errors.Is(err, embed.ErrUnavailable) {
		t.Fatalf("Embed before Reload: %v, want ErrUnavailable", err)
	}
	st := m.Status()
	if !st.Degraded || st.Reason != embed.ReasonNotLoaded || st.FallbackCalls != 1 {
		t.Errorf("Status = %+v, want degraded, not_loaded, 1 fallback call", st)
	}
	if (m.Identity() != embed.Identity{}) {
		t.Errorf("Identity() = %+v, want zero", m.Identity())
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("fallback events before any load attempt: %v", got)
	}
}

func TestManagerFallbackAndRecovery(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model")
	if err := embedtest.WriteCorruptModel(dir); err != nil {
		t.Fatal(err)
	}
	cfg := embed.Config{Dir: dir}
	m, rec, logs := newManager(t, cfg)
	ctx := context.Background()

	// A corrupt model: degraded, one event, one log line, however often
	// Reload and Embed are called.
	for range 3 {
		err := m.Reload(ctx, cfg)
		if got := embed.ReasonOf(err); got != embed.ReasonModelInvalid {
			t.Fatalf("Reload(corrupt) = %v (reason %s), want %s", err, got, embed.ReasonModelInvalid)
		}
		if _, err := m.Embed(ctx, []string{"pdf form"}, embed.Query); !errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("Embed while degraded: %v, want ErrUnavailable", err)
		}
	}
	st := m.Status()
	if !st.Degraded || st.Reason != embed.ReasonModelInvalid || st.Detail == "" || st.FallbackCalls != 3 {
		t.Errorf("Status = %+v, want degraded, model_invalid with detail, 3 fallback calls", st)
	}
	if got := rec.got(); len(got) != 1 || got[0] != string(embed.ReasonModelInvalid) {
		t.Errorf("fallback events = %v, want [model_invalid]", got)
	}
	if n := strings.Count(logs.String(), "embeddings unavailable"); n != 1 {
		t.Errorf("logged the fallback %d times, want once", n)
	}
	if n := strings.Count(logs.String(), `"component":"embed"`); n < 1 {
		t.Errorf("log lines lack component=embed: %d", n)
	}

	// The folder disappears: another reason, another event.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx, cfg); embed.ReasonOf(err) != embed.ReasonModelMissing {
		t.Fatalf("Reload(missing) = %v, want model_missing", err)
	}

	// A valid model appears: Reload recovers.
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatalf("Reload(valid) = %v", err)
	}
	vecs, err := m.Embed(ctx, []string{"pdf form"}, embed.Query)
	if err != nil || len(vecs) != 1 {
		t.Fatalf("Embed after recovery: %v", err)
	}
	st = m.Status()
	if st.Degraded || st.Reason != "" || st.Identity.Dimension != embedtest.TinyDim || st.EmbeddingsComputed != 1 {
		t.Errorf("Status after recovery = %+v, want loaded, dimension %d, 1 embedding", st, embedtest.TinyDim)
	}
	if got := rec.got(); len(got) != 2 || got[1] != string(embed.ReasonModelMissing) {
		t.Errorf("fallback events = %v, want [model_invalid model_missing]", got)
	}
	if n := strings.Count(logs.String(), "embedding model recovered"); n != 1 {
		t.Errorf("logged recovery %d times, want once", n)
	}

	// The model breaks again on disk; Reload degrades and reports again.
	if err := embedtest.WriteCorruptModel(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx, cfg); err == nil {
		t.Fatal("Reload(corrupt again) succeeded")
	}
	if got := rec.got(); len(got) != 3 {
		t.Errorf("fallback events = %v, want 3", got)
	}
}

func TestManagerWrongDimension(t *testing.T) {
	dir := t.TempDir()
	if _, err := embedtest.WriteTinyModelDim(dir, 16); err != nil {
		t.Fatal(err)
	}
	cfg := embed.Config{Dir: dir, Dimension: embedtest.TinyDim}
	m, rec, _ := newManager(t, cfg)
	if err := m.Reload(context.Background(), cfg); embed.ReasonOf(err) != embed.ReasonDimension {
		t.Fatalf("Reload = %v, want dimension_mismatch", err)
	}
	if got := rec.got(); len(got) != 1 || got[0] != string(embed.ReasonDimension) {
		t.Errorf("fallback events = %v, want [dimension_mismatch]", got)
	}
}

func TestManagerQueryCache(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir, QueryCacheSize: 2}
	m, _, _ := newManager(t, cfg)
	ctx := context.Background()
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	embedQ := func(texts ...string) [][]float32 {
		t.Helper()
		v, err := m.Embed(ctx, texts, embed.Query)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	status := func(hits, misses int64, entries int, computed int64) {
		t.Helper()
		st := m.Status()
		if st.QueryCacheHits != hits || st.QueryCacheMisses != misses || st.QueryCacheEntries != entries || st.EmbeddingsComputed != computed {
			t.Errorf("Status = hits %d misses %d entries %d computed %d, want %d %d %d %d",
				st.QueryCacheHits, st.QueryCacheMisses, st.QueryCacheEntries, st.EmbeddingsComputed,
				hits, misses, entries, computed)
		}
	}
	first := embedQ("pdf form", "git merge")
	again := embedQ("pdf form", "git merge", "pdf form")
	for i, j := range []int{0, 1, 0} {
		assertClose(t, "cached", again[i], first[j], 0)
	}
	status(3, 2, 2, 2)

	// Callers may modify what they get.
	again[0][0] = 42
	if got := embedQ("pdf form"); got[0][0] == 42 {
		t.Error("a caller's change reached the cache")
	}
	status(4, 2, 2, 2)

	// Least recently used goes first: "sql" evicts "git merge", which then
	// evicts "pdf form".
	embedQ("sql")
	embedQ("git merge")
	embedQ("sql")
	status(5, 4, 2, 4)

	// A text repeated in one call is computed once.
	dup := embedQ("calendar", "calendar")
	assertClose(t, "duplicate", dup[0], dup[1], 0)
	status(5, 6, 2, 5)

	// Documents are not cached here (EmbedDocuments has its own cache).
	for range 2 {
		if _, err := m.Embed(ctx, []string{"pdf form"}, embed.Document); err != nil {
			t.Fatal(err)
		}
	}
	status(5, 6, 2, 7)
}

func TestManagerReloadUnchangedIsNoop(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	m, _, _ := newManager(t, cfg)
	ctx := context.Background()
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	loaded := m.Status().Load.LoadedAt
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := m.Status().Load.LoadedAt; !got.Equal(loaded) {
		t.Errorf("Reload with nothing changed reloaded the model (loaded at %v, then %v)", loaded, got)
	}
	// A new config reloads.
	cfg.QueryPrefix = "query: "
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := m.Status().Load.LoadedAt; got.Equal(loaded) {
		t.Error("Reload with a new config did not reload")
	}
	// A changed model file reloads, with a new fingerprint.
	fp := m.Identity().Fingerprint
	if _, err := embedtest.WriteTinyModelDim(tm.Dir, 24); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if id := m.Identity(); id.Fingerprint == fp || id.Dimension != 24 {
		t.Errorf("after a model change: Identity = %+v, want a new fingerprint and dimension 24", id)
	}
}

func TestManagerCallerCancelDoesNotDegrade(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	m, rec, _ := newManager(t, cfg)
	if err := m.Reload(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, []string{"pdf"}, embed.Document); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed(canceled) = %v, want context.Canceled", err)
	}
	if st := m.Status(); st.Degraded || len(rec.got()) != 0 {
		t.Errorf("a caller's cancellation degraded the manager: %+v", st)
	}
}

func TestManagerConcurrentReload(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	m, rec, _ := newManager(t, cfg)
	ctx := context.Background()
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 30 {
				if _, err := m.Embed(ctx, []string{"pdf form", strings.Repeat("git ", g+i)}, embed.Query); err != nil {
					t.Errorf("Embed during reloads: %v", err)
					return
				}
			}
		})
	}
	for i := range 4 {
		c := cfg
		c.QueryPrefix = strings.Repeat("x", i+1) + " " // force a real reload
		if err := m.Reload(ctx, c); err != nil {
			t.Errorf("Reload: %v", err)
		}
	}
	wg.Wait()
	if got := rec.got(); len(got) != 0 {
		t.Errorf("fallback events during reloads: %v", got)
	}
}

// TestManagerRelease: a released model is still named (Identity, Config,
// Status: not degraded, Released) and the next Embed loads it again, with
// the same vectors; Close ends that: Embed is unavailable after it.
func TestManagerRelease(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	m, rec, _ := newManager(t, cfg)
	ctx := context.Background()
	m.Release() // nothing loaded: nothing to release
	if st := m.Status(); !st.Degraded || st.Released {
		t.Fatalf("Release before a load: Status = %+v, want degraded, not released", st)
	}
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	id, resolved, loadedAt := m.Identity(), m.Config(), m.Status().Load.LoadedAt
	before, err := m.Embed(ctx, []string{"fill a pdf form"}, embed.Document)
	if err != nil {
		t.Fatal(err)
	}

	m.Release()
	st := m.Status()
	if st.Degraded || !st.Released || st.Identity != id || st.Load.LoadedAt.IsZero() {
		t.Errorf("released: Status = %+v, want not degraded, released, identity %+v and its load", st, id)
	}
	if m.Identity() != id || m.Config().BodyChars != resolved.BodyChars || m.Config().MaxTokens != resolved.MaxTokens {
		t.Errorf("released: Identity %+v, Config %+v; want those of the model loaded", m.Identity(), m.Config())
	}
	after, err := m.Embed(ctx, []string{"fill a pdf form"}, embed.Document)
	if err != nil {
		t.Fatalf("Embed after Release: %v", err)
	}
	assertClose(t, "loaded again", after[0], before[0], 0)
	if st := m.Status(); st.Degraded || st.Released || !st.Load.LoadedAt.After(loadedAt) {
		t.Errorf("after the Embed: Status = %+v, want loaded again", st)
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("fallback events: %v", got)
	}

	m.Release()
	m.Close()
	if _, err := m.Embed(ctx, []string{"x"}, embed.Query); !errors.Is(err, embed.ErrUnavailable) {
		t.Errorf("Embed after Release and Close: %v, want ErrUnavailable (no load)", err)
	}
}
