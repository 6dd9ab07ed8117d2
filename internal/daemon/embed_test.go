package daemon_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/testlog"
)

func routerStatus(t *testing.T, r *daemontest.Router) *routerv1.StatusResponse {
	t.Helper()
	st, err := r.Client.Status(ctx(t), &routerv1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The examples workspace has 9 skills that win their names (7 served, one
// disabled, one agent-scoped): each is embedded once.
const exampleWinners = 9

// TestEmbeddingCounters proves the cache from counters: a restart with
// unchanged skills embeds nothing, one edited description embeds one text, a
// body-only edit embeds none, and a model switch embeds everything again.
func TestEmbeddingCounters(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	modelA := filepath.Join(t.TempDir(), "tiny-a")
	if _, err := embedtest.WriteTinyModel(modelA); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	setConfig(t, ws, "model: {dir: "+modelA+"}\n")
	r := daemontest.Start(t, ws, daemontest.Options{StateDir: state})

	st := routerStatus(t, r)
	if st.Degraded || st.Model.GetDimension() != embedtest.TinyDim || len(st.Model.GetFingerprint()) != 64 {
		t.Fatalf("model status = %v (degraded %v: %s)", st.Model, st.Degraded, st.DegradedReason)
	}
	if st.LastReindex.Embedded != exampleWinners || st.Model.EmbeddingsComputed != exampleWinners || st.Model.CacheEntries != exampleWinners {
		t.Errorf("cold start: embedded %d, computed %d, cached %d; want %d each",
			st.LastReindex.Embedded, st.Model.EmbeddingsComputed, st.Model.CacheEntries, exampleWinners)
	}

	// Every text fits in a pass (model.sync_documents): the fast model
	// is never needed, so never loaded.
	if st.FastModel != nil {
		t.Errorf("cold start with every text embedded by the pass: the fast model %s was loaded", st.FastModel.Name)
	}

	r.Stop(t)
	r = daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	st = routerStatus(t, r)
	if st.LastReindex.Embedded != 0 || st.Model.EmbeddingsComputed != 0 {
		t.Errorf("warm restart: embedded %d, computed %d; want 0", st.LastReindex.Embedded, st.Model.EmbeddingsComputed)
	}
	if st.FastModel != nil {
		t.Errorf("warm restart: the fast model %s was loaded", st.FastModel.Name)
	}

	p := filepath.Join(ws, "skills", "openapi-docs", "SKILL.md")
	writeSkillFile(t, p, "openapi-docs", "Write OpenAPI 3.1 specifications.")
	res, err := r.Client.Reindex(ctx(t), &routerv1.ReindexRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Embedded != 1 {
		// The watcher may have run the reindex already; the counter since
		// start is the reliable figure.
		if st := routerStatus(t, r); st.Model.EmbeddingsComputed != 1 {
			t.Errorf("one edited description: embedded %d (computed since start %d), want 1", res.Stats.Embedded, st.Model.EmbeddingsComputed)
		}
	}

	data, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(p, append(data, []byte("\nMore body text.\n")...), 0o644))
	if _, err := r.Client.Reindex(ctx(t), &routerv1.ReindexRequest{}); err != nil {
		t.Fatal(err)
	}
	if st := routerStatus(t, r); st.Model.EmbeddingsComputed != 1 {
		t.Errorf("body-only edit re-embedded: computed since start %d, want still 1", st.Model.EmbeddingsComputed)
	}

	// Switching models (a config edit) embeds every skill again, once.
	modelB := filepath.Join(t.TempDir(), "tiny-b")
	if _, err := embedtest.WriteTinyModelDim(modelB, 48); err != nil {
		t.Fatal(err)
	}
	before := routerStatus(t, r).Model.Fingerprint
	setConfig(t, ws, "model: {dir: "+modelB+"}\n")
	daemontest.Eventually(t, 30*time.Second, "model B in use", func() bool {
		st := routerStatus(t, r)
		return st.Model.GetDimension() == 48 && st.Model.CacheEntries == exampleWinners
	})
	st = routerStatus(t, r)
	if st.Model.Fingerprint == before || st.Model.EmbeddingsComputed != 1+exampleWinners {
		t.Errorf("after switch: fingerprint changed %v, computed since start %d, want %d",
			st.Model.Fingerprint != before, st.Model.EmbeddingsComputed, 1+exampleWinners)
	}
}

// TestBrokenModelServesTheFastModel: with a corrupt model, the router
// reports degraded and serves the bundled fast model's vectors meanwhile:
// Match still ranks by embeddings (not degraded to keywords).
func TestBrokenModelServesTheFastModel(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	model := filepath.Join(t.TempDir(), "model")
	if err := embedtest.WriteCorruptModel(model); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.Model.Dir = model }})
	var st *routerv1.StatusResponse
	daemontest.Eventually(t, 30*time.Second, "the fast model served", func() bool {
		st = routerStatus(t, r)
		return st.GetFastModel().GetServing()
	})
	if !st.Degraded || !strings.Contains(st.DegradedReason, "model_invalid") || !strings.Contains(st.DegradedReason, st.GetFastModel().GetName()) {
		t.Errorf("corrupt model with a fast model: degraded %v %q, want model_invalid naming %s", st.Degraded, st.DegradedReason, st.GetFastModel().GetName())
	}
	res, err := r.Client.Match(ctx(t), &routerv1.MatchRequest{Task: "write release notes from the git log", TopK: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Degraded || len(res.Candidates) == 0 || res.Candidates[0].GetScores().GetDenseRank() == 0 {
		t.Errorf("Match with the fast model serving: degraded %v, candidates %v; want dense-ranked candidates", res.Degraded, res.Candidates)
	}
}

// TestEmbeddingFallbackAndRecovery: a corrupt model, with no fast model,
// leaves the router serving with keywords only, reporting why; fixing the
// model files is picked up by the next reindex without a restart.
func TestEmbeddingFallbackAndRecovery(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	model := filepath.Join(t.TempDir(), "model")
	if err := embedtest.WriteCorruptModel(model); err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	r := daemontest.Start(t, ws, daemontest.Options{Logs: logs, Configure: func(c *config.Config) {
		c.Model.Dir = model
		c.Model.Fast.Disabled = true
	}})
	st := routerStatus(t, r)
	if !st.Degraded || !strings.Contains(st.DegradedReason, "model_invalid") || st.LastReindex.Embedded != 0 {
		t.Fatalf("corrupt model: degraded %v %q, embedded %d", st.Degraded, st.DegradedReason, st.LastReindex.Embedded)
	}
	if st.Skills != 7 {
		t.Errorf("serving %d skills with a corrupt model, want 7", st.Skills)
	}
	if res, err := r.Client.Load(ctx(t), &routerv1.LoadRequest{Name: "release-notes", Level: 2}); err != nil || res.Content == "" {
		t.Errorf("load while degraded: %v", err)
	}
	if n := strings.Count(logs.String(), "skill_embedding_fallback"); n < 1 {
		t.Errorf("no skill_embedding_fallback event in the log")
	}

	must(t, os.RemoveAll(model))
	if _, err := embedtest.WriteTinyModel(model); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Client.Reindex(ctx(t), &routerv1.ReindexRequest{}); err != nil {
		t.Fatal(err)
	}
	st = routerStatus(t, r)
	if st.Degraded || st.Model.GetDimension() != embedtest.TinyDim || st.Model.CacheEntries != exampleWinners {
		t.Errorf("after fixing the model: degraded %v (%s), model %v", st.Degraded, st.DegradedReason, st.Model)
	}
}

// TestFastModelReleasedOnceTheModelServes: a cold start with more texts than
// model.sync_documents serves the fast model's vectors first; once the
// model's own vectors are served, Status names the fast model as released.
func TestFastModelReleasedOnceTheModelServes(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	model := filepath.Join(t.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(model); err != nil {
		t.Fatal(err)
	}
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.Model.Dir = model
		c.Model.SyncDocuments = 1
	}})
	var st *routerv1.StatusResponse
	daemontest.Eventually(t, 30*time.Second, "the model's own vectors served", func() bool {
		st = routerStatus(t, r)
		return st.GetModel().GetServing() && st.Backfill == nil
	})
	if f := st.GetFastModel(); f == nil || !f.GetReleased() || f.GetServing() {
		t.Errorf("fast model after the backfill = %v; want named, released and not serving", f)
	}
	if st.GetModel().GetReleased() {
		t.Error("the serving model is reported released")
	}
}
