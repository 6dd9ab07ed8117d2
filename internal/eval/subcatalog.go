package eval

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/mcpsag/router/internal/skill"
)

// SubCatalogOptions configure Corpus.SubCatalogs.
type SubCatalogOptions struct {
	// Name labels the groups, "NAME@SIZE"; Catalog is their Catalog,
	// Source their Source (default Catalog).
	Name, Catalog, Source string
	// Own marks the queries as the catalog's own (labelled against it).
	Own bool
	// Sizes are the sub-catalog sizes; a size not under the catalog's
	// is skipped.
	Sizes []int
	// Answerable is how many tasks with a relevant skill in the drawn
	// skills are wanted per size: skills are drawn again until there are
	// that many (or MaxDraws). NoSkill is how many tasks none of whose
	// relevant skills was drawn are kept per size, spread evenly over the
	// draws.
	Answerable, NoSkill int
	// MinDraws and MaxDraws bound the draws per size (defaults 1 and 50).
	MinDraws, MaxDraws int
	// Seed fixes the draws.
	Seed uint64
}

// SubCatalogs draws sub-catalogs of the corpus's indexed skills, uniformly
// at each size, and returns one task group per draw, its index built over
// the drawn skills alone (their own term statistics, as a catalog of that
// size would have). A query is answerable in a draw when one of its
// relevant skills was drawn (its relevant list is cut to those) and needs
// no skill when none was; queries that need no skill at all need none in
// every draw.
func (c *Corpus) SubCatalogs(ctx context.Context, qs []Query, opt SubCatalogOptions) ([]TaskGroup, error) {
	if opt.MinDraws <= 0 {
		opt.MinDraws = 1
	}
	if opt.MaxDraws <= 0 {
		opt.MaxDraws = 50
	}
	if opt.Answerable < 0 || opt.NoSkill < 0 || opt.MinDraws > opt.MaxDraws {
		return nil, errors.New("sub-catalogs: negative task counts, or more draws at least than at most")
	}
	if opt.Source == "" {
		opt.Source = opt.Catalog
	}
	skills := c.Index.Skills()
	r := rand.New(rand.NewPCG(opt.Seed, 0x73756263))
	var out []TaskGroup
	for _, size := range opt.Sizes {
		if size <= 0 || size >= len(skills) {
			continue
		}
		var draws []subDraw
		have := 0
		for len(draws) < opt.MinDraws || (have < opt.Answerable && len(draws) < opt.MaxDraws) {
			dr := newSubDraw(r, skills, size, qs)
			have += len(dr.answer)
			draws = append(draws, dr)
		}
		perAnswer := (opt.Answerable + len(draws) - 1) / len(draws)
		perOther := (opt.NoSkill + len(draws) - 1) / len(draws)
		for d, dr := range draws {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			tasks := dr.tasks(r, perAnswer, perOther)
			if len(tasks) == 0 {
				continue
			}
			ix, err := c.gen.SubsetIndex(ctx, func(s *skill.Skill) bool { return dr.keep[s] }, c.Index.Config())
			if err != nil {
				return nil, fmt.Errorf("sub-catalog %s@%d draw %d: %w", opt.Name, size, d+1, err)
			}
			out = append(out, TaskGroup{
				Name: fmt.Sprintf("%s@%d", opt.Name, size), Source: opt.Source, Catalog: opt.Catalog, Size: size, Own: opt.Own,
				Index: ix, Queries: tasks,
			})
		}
	}
	return out, nil
}

// subDraw is one sub-catalog: the skills drawn, the queries answerable in
// it (their relevant lists cut to the drawn skills) and the others.
type subDraw struct {
	keep          map[*skill.Skill]bool
	answer, other []Query
}

// newSubDraw draws size of skills uniformly and sorts qs by whether a
// relevant skill was drawn.
func newSubDraw(r *rand.Rand, skills []*skill.Skill, size int, qs []Query) subDraw {
	perm := r.Perm(len(skills))[:size]
	dr := subDraw{keep: map[*skill.Skill]bool{}}
	names := map[string]bool{}
	for _, i := range perm {
		dr.keep[skills[i]] = true
		names[skills[i].Name] = true
	}
	for _, q := range qs {
		var rel []string
		for _, n := range q.Relevant {
			if names[n] {
				rel = append(rel, n)
			}
		}
		if len(rel) > 0 {
			dr.answer = append(dr.answer, Query{ID: q.ID, Query: q.Query, Relevant: rel})
		} else {
			dr.other = append(dr.other, Query{ID: q.ID, Query: q.Query, Relevant: []string{}})
		}
	}
	return dr
}

// tasks returns up to perAnswer answerable queries and up to perOther
// others of the draw, picked at random.
func (dr subDraw) tasks(r *rand.Rand, perAnswer, perOther int) []Query {
	r.Shuffle(len(dr.answer), func(i, j int) { dr.answer[i], dr.answer[j] = dr.answer[j], dr.answer[i] })
	r.Shuffle(len(dr.other), func(i, j int) { dr.other[i], dr.other[j] = dr.other[j], dr.other[i] })
	return append(dr.answer[:min(perAnswer, len(dr.answer))], dr.other[:min(perOther, len(dr.other))]...)
}
