package embed_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/skill"
)

// memCache is an in-memory VectorCache that counts its calls.
type memCache struct {
	mu      sync.Mutex
	vecs    map[string]map[string][]float32 // fingerprint -> text hash -> vector
	puts    int
	readErr error
	putErr  error
}

func newMemCache() *memCache { return &memCache{vecs: map[string]map[string][]float32{}} }

func (c *memCache) Vectors(fp string, hashes []string) (map[string][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr != nil {
		return nil, c.readErr
	}
	out := map[string][]float32{}
	for _, h := range hashes {
		if v, ok := c.vecs[fp][h]; ok {
			out[h] = slices.Clone(v)
		}
	}
	return out, nil
}

func (c *memCache) PutVectors(fp string, vecs map[string][]float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.putErr != nil {
		return c.putErr
	}
	c.puts++
	if c.vecs[fp] == nil {
		c.vecs[fp] = map[string][]float32{}
	}
	for h, v := range vecs {
		c.vecs[fp][h] = slices.Clone(v)
	}
	return nil
}

func (c *memCache) size(fp string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.vecs[fp])
}

func skillTexts(n int) []string {
	topics := []string{"fill pdf forms", "deploy to kubernetes", "git rebase a branch", "query a postgres database",
		"resize images", "send email", "call a rest api", "run unit tests", "edit a csv spreadsheet", "schedule a meeting"}
	texts := make([]string, n)
	for i := range texts {
		texts[i] = docText(fmt.Sprintf("skill-%d", i), topics[i%len(topics)])
	}
	return texts
}

// TestEmbedDocumentsCounters follows the done-when list: zero
// embeddings on a restart with unchanged skills, exactly one for one edited
// skill, a full re-embed after a model switch.
func TestEmbedDocumentsCounters(t *testing.T) {
	tm := tinyModel(t)
	cfg := embed.Config{Dir: tm.Dir}
	cache := newMemCache()
	ctx := context.Background()
	texts := skillTexts(25)

	start := func() *embed.Manager {
		t.Helper()
		m := embed.NewManager(cfg, nil, nil)
		t.Cleanup(func() { m.Close() })
		if err := m.Reload(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		return m
	}

	// First index: everything is computed, in batches of 10.
	m := start()
	vecs, computed, err := embed.EmbedDocuments(ctx, m, cache, texts, 10)
	if err != nil {
		t.Fatal(err)
	}
	fp := m.Identity().Fingerprint
	if computed != 25 || cache.puts != 3 || cache.size(fp) != 25 || m.Status().EmbeddingsComputed != 25 {
		t.Fatalf("first run: computed %d, puts %d, cached %d, counter %d; want 25, 3, 25, 25",
			computed, cache.puts, cache.size(fp), m.Status().EmbeddingsComputed)
	}
	direct, err := m.Embed(ctx, texts, embed.Document)
	if err != nil {
		t.Fatal(err)
	}
	for i := range texts {
		assertClose(t, texts[i], vecs[i], direct[i], 1e-6)
	}

	// Restart with unchanged skills: nothing is computed.
	m = start()
	if _, computed, err = embed.EmbedDocuments(ctx, m, cache, texts, 10); err != nil || computed != 0 {
		t.Fatalf("restart: computed %d, %v; want 0", computed, err)
	}
	if got := m.Status().EmbeddingsComputed; got != 0 {
		t.Errorf("restart: EmbeddingsComputed = %d, want 0", got)
	}

	// One edited skill: exactly one embedding.
	edited := slices.Clone(texts)
	edited[7] = docText("skill-7", "translate french documents")
	vecs, computed, err = embed.EmbedDocuments(ctx, m, cache, edited, 10)
	if err != nil || computed != 1 || m.Status().EmbeddingsComputed != 1 {
		t.Fatalf("one edit: computed %d, counter %d, %v; want 1", computed, m.Status().EmbeddingsComputed, err)
	}
	one, _ := m.Embed(ctx, edited[7:8], embed.Document)
	assertClose(t, "edited", vecs[7], one[0], 1e-6)

	// Model switch: everything is computed again, under the new fingerprint.
	if _, err := embedtest.WriteTinyModelDim(tm.Dir, 24); err != nil {
		t.Fatal(err)
	}
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	before := m.Status().EmbeddingsComputed
	if _, computed, err = embed.EmbedDocuments(ctx, m, cache, edited, 10); err != nil || computed != 25 {
		t.Fatalf("model switch: computed %d, %v; want 25", computed, err)
	}
	if got := m.Status().EmbeddingsComputed - before; got != 25 {
		t.Errorf("model switch: counter grew by %d, want 25", got)
	}

	// A new document prefix changes vectors without changing files: it
	// re-embeds too.
	cfg.DocumentPrefix = "passage: "
	if err := m.Reload(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, computed, err = embed.EmbedDocuments(ctx, m, cache, edited, 10); err != nil || computed != 25 {
		t.Fatalf("prefix change: computed %d, %v; want 25", computed, err)
	}
}

func TestEmbedDocumentsDuplicates(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})
	cache := newMemCache()
	texts := []string{"pdf form", "git", "pdf form", "", "pdf form"}
	vecs, computed, err := embed.EmbedDocuments(context.Background(), m, cache, texts, 0)
	if err != nil {
		t.Fatal(err)
	}
	if computed != 3 || m.Computed() != 2 { // "" is computed by the cache's count but not run
		t.Errorf("computed %d, model ran %d; want 3 and 2", computed, m.Computed())
	}
	assertClose(t, "duplicate", vecs[2], vecs[0], 0)
	assertClose(t, "duplicate", vecs[4], vecs[0], 0)
	if norm(vecs[3]) != 0 {
		t.Errorf("empty text vector has norm %v, want 0", norm(vecs[3]))
	}
}

func TestEmbedDocumentsErrors(t *testing.T) {
	tm := tinyModel(t)
	m := open(t, embed.Config{Dir: tm.Dir})
	ctx := context.Background()
	boom := errors.New("boom")

	c := newMemCache()
	c.readErr = boom
	if _, _, err := embed.EmbedDocuments(ctx, m, c, []string{"a"}, 0); !errors.Is(err, boom) {
		t.Errorf("read error: %v, want boom", err)
	}
	c = newMemCache()
	c.putErr = boom
	if _, _, err := embed.EmbedDocuments(ctx, m, c, []string{"a"}, 0); !errors.Is(err, boom) {
		t.Errorf("write error: %v, want boom", err)
	}

	degraded := embed.NewManager(embed.Config{}, nil, nil)
	if _, _, err := embed.EmbedDocuments(ctx, degraded, newMemCache(), []string{"a"}, 0); !errors.Is(err, embed.ErrUnavailable) {
		t.Errorf("degraded embedder: %v, want ErrUnavailable", err)
	}
}

// switchingEmbedder reports a new identity after its first Embed, as a
// Manager does when it reloads during a run.
type switchingEmbedder struct {
	embed.Embedder
	calls int
}

func (s *switchingEmbedder) Embed(ctx context.Context, texts []string, kind embed.Kind) ([][]float32, error) {
	s.calls++
	return s.Embedder.Embed(ctx, texts, kind)
}

func (s *switchingEmbedder) Identity() embed.Identity {
	id := s.Embedder.Identity()
	if s.calls > 0 {
		id.Fingerprint = "other"
	}
	return id
}

func TestEmbedDocumentsModelChanged(t *testing.T) {
	tm := tinyModel(t)
	e := &switchingEmbedder{Embedder: open(t, embed.Config{Dir: tm.Dir})}
	cache := newMemCache()
	_, _, err := embed.EmbedDocuments(context.Background(), e, cache, skillTexts(3), 0)
	if !errors.Is(err, embed.ErrModelChanged) {
		t.Fatalf("EmbedDocuments = %v, want ErrModelChanged", err)
	}
	if cache.puts != 0 {
		t.Errorf("stored %d batches under a stale fingerprint", cache.puts)
	}
}

// docText is the embedded text of a skill with a name and a description.
func docText(name, desc string) string {
	return (&skill.Skill{Name: name, Frontmatter: skill.Frontmatter{Description: desc}}).DocumentText("", 0)
}
