package match_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// bm25Of returns the BM25 score Rank gives the named skill for task, in
// keyword-only matching.
func bm25Of(t *testing.T, ix *match.Index, task, name string) float64 {
	t.Helper()
	rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: task, TopK: 10, Options: skill.MatchOptions{Mode: skill.ModeKeyword}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rk.Ranked {
		if c.Skill.Name == name {
			return c.BM25
		}
	}
	return 0
}

// TestBM25FSaturatesOnce: a word held by the name, the description and the
// tags is one match under BM25F, so its score stays under one saturated
// term per analyzer group, while the per-field sum adds one per field.
func TestBM25FSaturatesOnce(t *testing.T) {
	skills := append(catalog(),
		newSkill("ledger", "Ledger ledger: keep a ledger of expenses", withTags("ledger")),
		newSkill("notes", "Take notes, including a ledger of ideas"),
	)
	n := float64(len(skills))
	idfMax := math.Log(1 + (n-1+0.5)/(1+0.5))
	cfg := match.DefaultConfig()
	ix := build(t, skills, cfg, nil, nil)
	k1 := cfg.BM25.K1
	f := bm25Of(t, ix, "ledger", "ledger")
	// Two groups (stemmed short fields, plain body), each at most
	// idf·(k1+1); the body ("Body of ledger.") holds the word too.
	if bound := 2 * idfMax * (k1 + 1); f <= 0 || f > bound {
		t.Errorf("BM25F score %.3f is outside (0, %.3f]", f, bound)
	}
	cfg.BM25.Scoring = match.ScoringSum
	cfg.BM25.K1 = k1
	sum := build(t, skills, cfg, nil, nil)
	s := bm25Of(t, sum, "ledger", "ledger")
	fr := f / bm25Of(t, ix, "ledger", "notes")
	sr := s / bm25Of(t, sum, "ledger", "notes")
	if fr >= sr {
		t.Errorf("the skill holding the word in four fields leads by %.2fx under BM25F, %.2fx under the sum; want less under BM25F", fr, sr)
	}
}

// TestBM25FScoresSharedFormOnce: two task words that stem alike ("helm",
// "helms") are one term in the stemmed fields.
func TestBM25FScoresSharedFormOnce(t *testing.T) {
	ix := build(t, catalog(), match.DefaultConfig(), nil, nil)
	one := bm25Of(t, ix, "helm", "k8s-deploy")
	two := bm25Of(t, ix, "helm helms", "k8s-deploy")
	if one <= 0 || math.Abs(one-two) > 1e-6 {
		t.Errorf("score for %q = %.4f, for %q = %.4f; want equal and positive", "helm", one, "helm helms", two)
	}
}

// TestFieldLengthNormalisation: a field's own b replaces bm25.b for it.
func TestFieldLengthNormalisation(t *testing.T) {
	skills := append(catalog(),
		newSkill("queue", "queue"),
		newSkill("queue-admin", "Administer the queue of a message broker: purge, requeue, inspect dead letters and more"),
	)
	cfg := match.DefaultConfig()
	cfg.BM25.B = 0
	flat := build(t, skills, cfg, nil, nil)
	cfg.Fields.Description.B = ptr(1.0)
	norm := build(t, skills, cfg, nil, nil)
	a, b := bm25Of(t, flat, "queue", "queue-admin"), bm25Of(t, norm, "queue", "queue-admin")
	if b >= a {
		t.Errorf("with description b 1 the long description scores %.3f, without length normalisation %.3f; want lower", b, a)
	}
}

func TestConfigRejectsBadScoring(t *testing.T) {
	cfg := match.DefaultConfig()
	cfg.BM25.Scoring = "okapi"
	cfg.Fields.Body.B = ptr(1.5)
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted scoring okapi and body b 1.5")
	}
	for _, want := range []string{"bm25.scoring", "fields.body.b"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestWithConfigWeighsFieldsAnew: a field weight changed by WithConfig
// scores as a new build with that weight does.
func TestWithConfigWeighsFieldsAnew(t *testing.T) {
	cfg := match.DefaultConfig()
	ix := build(t, catalog(), cfg, nil, nil)
	cfg.Fields.Name.Weight = 4
	re, err := ix.WithConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fresh := build(t, catalog(), cfg, nil, nil)
	a, b, c := bm25Of(t, ix, "thumbnails resize", "image-resize"), bm25Of(t, re, "thumbnails resize", "image-resize"), bm25Of(t, fresh, "thumbnails resize", "image-resize")
	if a == b || math.Abs(b-c) > 1e-6 {
		t.Errorf("score %.4f before, %.4f after WithConfig, %.4f built with the weight; want the last two equal and unlike the first", a, b, c)
	}
}
