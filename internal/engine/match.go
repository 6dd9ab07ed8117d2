package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// Match ranks the skills the agent sees against the task, or abstains. The
// engine decides visibility (req.Visible is replaced). With feature flag
// skills_v1 off it abstains with reason "disabled"; that is an answer, not an
// error. Every answer is recorded as a skill_selected event.
func (e *Engine) Match(ctx context.Context, req match.Request) (*skill.MatchResult, error) {
	start := time.Now()
	g := e.current.Load()
	if g == nil || g.index == nil {
		return nil, skill.Errorf(skill.CodeUnavailable, "the skill index is still loading; retry shortly")
	}
	if err := checkAgent(req.Agent); err != nil {
		return nil, err
	}
	var res skill.MatchResult
	if !e.Settings().Flags.SkillsV1 {
		res = skill.MatchResult{
			Abstained: true, AbstainReason: skill.AbstainDisabled, Generation: g.cat.Generation,
			AbstainDetail: "routing is switched off (feature flag skills_v1); load skills by name, or ask an operator to turn it on",
		}
	} else {
		var err error
		req.Visible = func(s *skill.Skill) bool { return g.cat.VisibleTo(s, req.Agent) }
		if res, err = g.index.Match(ctx, req); err != nil {
			return nil, err
		}
	}
	e.rec.SkillSelected(ctx, telemetry.Selection{Task: req.Task, Agent: req.Agent, TopK: req.TopK, Result: res, Latency: time.Since(start)})
	return &res, nil
}

// matchConfig is the match configuration for a build: the settings', with
// the cosine threshold of the model in use unless the settings set one
// (cosine scales differ between models, so the threshold travels with the
// model).
func (e *Engine) matchConfig(vectors *skillVectors) match.Config {
	cfg := e.Settings().Match
	if vectors != nil && e.cfg.Embedder != nil {
		cfg = cfg.WithModelThreshold(e.cfg.Embedder.Status().MatchThreshold)
	}
	return cfg
}

// buildIndex builds the match index of a generation.
func (e *Engine) buildIndex(ctx context.Context, cat *loader.Catalog, vectors *skillVectors) (*match.Index, error) {
	winners := cat.Winners()
	in := match.BuildInput{
		Skills:     winners,
		Generation: cat.Generation,
		Config:     e.matchConfig(vectors),
		Body: func(s *skill.Skill) (string, error) {
			body, ok, err := e.db.Body(s.ContentHash)
			if err == nil && !ok {
				err = errors.New("body not in the cache")
			}
			return body, err
		},
	}
	if vectors != nil {
		in.Vectors = make([][]float32, len(winners))
		for i, s := range winners {
			in.Vectors[i] = vectors.bySkill[s]
		}
		in.Embedder = e.cfg.Embedder
		in.Model = vectors.model.Fingerprint
	}
	ix, err := match.Build(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("build match index: %w", err)
	}
	return ix, nil
}

// applyMatchConfig puts a changed match configuration in force: in place when
// only query-time settings changed, else by rebuilding the index.
func (e *Engine) applyMatchConfig(ctx context.Context, old, new match.Config) error {
	if reflect.DeepEqual(old, new) {
		return nil
	}
	e.reindexMu.Lock()
	defer e.reindexMu.Unlock()
	g := e.current.Load()
	if g == nil || g.index == nil {
		return nil
	}
	ix, err := g.index.WithConfig(e.matchConfig(g.vectors))
	if err != nil {
		if ix, err = e.buildIndex(ctx, g.cat, g.vectors); err != nil {
			return err
		}
	}
	e.current.Store(&generation{cat: g.cat, vectors: g.vectors, index: ix})
	return nil
}
