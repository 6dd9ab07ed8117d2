package loader

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// modelConfig is cfg with the cosine threshold of the model that embedded g,
// unless cfg sets one: cosine scales differ between models, so the threshold
// travels with the model.
func (g *Generation) modelConfig(cfg match.Config) match.Config {
	if g.vectors != nil && g.space.by != nil {
		cfg = cfg.WithModelThreshold(g.space.by.Status().MatchThreshold)
	}
	return cfg
}

// buildIndex builds the match index of g, over winners (its catalog's),
// under cfg: as an update of base
// when there is one that indexes the same fields (reading only the bodies
// of skills that changed), else from scratch (reading every body it
// indexes in one read transaction). g's vectors become the index's rows
// (heldVectors).
func (a *assembly) buildIndex(ctx context.Context, base *match.Index, g *Generation, winners []*skill.Skill, cfg match.Config) (*match.Index, match.UpdateStats, error) {
	in := g.indexInput(winners, cfg)
	what := "update"
	if base == nil || !base.CanUpdate(cfg) {
		base, what = nil, "build" // nothing to update: Update builds from scratch
		bodies, err := a.files.bodyStarts(in.Skills, in.Config.Fields.BodyChars)
		if err != nil {
			return nil, match.UpdateStats{}, fmt.Errorf("build match index: read skill bodies: %w", err)
		}
		in.Body = bodyIn(bodies)
	} else {
		in.Body = a.storedBody
	}
	ix, us, err := base.Update(ctx, in)
	if err != nil {
		return nil, us, fmt.Errorf("%s match index: %w", what, err)
	}
	g.vectors = heldVectors(g.vectors, winners, in.Vectors)
	return ix, us, nil
}

// storedBody reads the body of s from the store; a tool has none (its
// parameters are a field of their own).
func (a *assembly) storedBody(s *skill.Skill) (string, error) {
	if s.IsTool() {
		return "", nil
	}
	body, ok, err := a.db.Body(s.ContentHash)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errors.New("body not in the cache")
	}
	return body, nil
}

// bodyIn reads a skill's body from bodies, by content hash; a tool has none.
func bodyIn(bodies map[string]string) func(*skill.Skill) (string, error) {
	return func(s *skill.Skill) (string, error) {
		if s.IsTool() {
			return "", nil // a tool has no body; its parameters are a field of their own
		}
		body, ok := bodies[s.ContentHash]
		if !ok {
			return "", errors.New("body not in the cache")
		}
		return body, nil
	}
}

// SubsetIndex builds a match index under cfg (with the cosine threshold of
// g's model unless cfg sets one) over the winning skills of g that keep
// accepts, with their vectors and bodies, as if they were the whole
// catalog (their own term statistics and length norms): matching measured
// on smaller catalogs drawn from a large one. It publishes nothing and
// leaves g as it is.
func (g *Generation) SubsetIndex(ctx context.Context, keep func(*skill.Skill) bool, cfg match.Config) (*match.Index, error) {
	var skills []*skill.Skill
	for _, s := range g.Catalog.Winners() {
		if keep(s) {
			skills = append(skills, s)
		}
	}
	return g.files.buildFresh(ctx, g.indexInput(skills, g.modelConfig(cfg)))
}

// indexInput is the match index input of winners, skills of g, under cfg,
// without a body reader.
func (g *Generation) indexInput(winners []*skill.Skill, cfg match.Config) match.BuildInput {
	in := match.BuildInput{
		Skills:       winners,
		Generation:   g.ID,
		GenerationID: g.ContentID,
		Config:       cfg,
	}
	if g.vectors != nil {
		in.UnitVectors = true
		in.Vectors = make([][]float32, len(winners))
		for i, s := range winners {
			in.Vectors[i] = g.vectors[s]
		}
		if g.space.by != nil {
			in.Embedder = g.space.by
		}
		in.Model = g.Model.Fingerprint
	}
	return in
}

// heldVectors returns vectors (a generation's, unit vectors by skill)
// with the vector of each of winners replaced by held's, aligned with
// winners: the rows of the index built over them, the same bits, which
// Build and Update hand back in match.BuildInput.Vectors. A generation
// then keeps no vector alive that its index does not hold (the first copy
// of a new vector, the rows of blocks its index copied to change them).
// It returns vectors itself when nothing is replaced.
func heldVectors(vectors map[*skill.Skill][]float32, winners []*skill.Skill, held [][]float32) map[*skill.Skill][]float32 {
	out, copied := vectors, false
	for i, row := range held {
		s := winners[i]
		v, ok := out[s]
		if !ok || len(v) == 0 || len(row) == 0 || &v[0] == &row[0] {
			continue
		}
		if !copied {
			out, copied = maps.Clone(vectors), true
		}
		out[s] = row
	}
	return out
}

// buildFresh builds in from scratch, reading the bodies it indexes in one
// read transaction.
func (f *skillFiles) buildFresh(ctx context.Context, in match.BuildInput) (*match.Index, error) {
	bodies, err := f.bodyStarts(in.Skills, in.Config.Fields.BodyChars)
	if err != nil {
		return nil, fmt.Errorf("read skill bodies: %w", err)
	}
	in.Body = bodyIn(bodies)
	return match.Build(ctx, in)
}
