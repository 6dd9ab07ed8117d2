package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/router"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/store"
)

// served is the router's source of generations: the loader's, each seen
// through router.Generation, and a Status that adds to the loader's
// account of its passes what the models and the cache say of themselves.
type served struct {
	loader         *loader.Loader
	db             *store.DB
	embedder, fast *embed.Manager         // nil: none
	model          atomic.Pointer[string] // the fingerprint of the model whose vectors the last generation serves; empty: keywords
}

var _ router.Source = (*served)(nil)

// Start starts the loader, publishing each of its generations as the
// router's.
func (s *served) Start(ctx context.Context, publish func(*router.Generation)) error {
	return s.loader.Start(ctx, func(g *loader.Generation) {
		model := g.ServedModel()
		s.model.Store(&model)
		publish(&router.Generation{ID: g.ID, ContentID: g.ContentID, Catalog: g.Catalog, Index: g.Index, Files: g})
	})
}

// Reindex runs a pass of the loader now.
func (s *served) Reindex(ctx context.Context, full bool) (skill.ReindexStats, error) {
	return s.loader.Reindex(ctx, full)
}

// Close stops the loader.
func (s *served) Close() error { return s.loader.Close() }

// Describe fills in the loader's passes, the embedding models and why
// matching or the cache is degraded.
func (s *served) Describe(st *skill.Status) {
	s.loader.Describe(st)
	var model string
	if p := s.model.Load(); p != nil {
		model = *p
	}
	s.describeModels(st, model)
	problems := s.loader.Problems()
	if why := s.db.Degraded(); why != "" {
		problems = append([]string{why}, problems...)
	}
	for _, why := range problems {
		st.Degraded = true
		st.DegradedReason = strings.TrimPrefix(st.DegradedReason+"; ", "; ") + why
	}
}

// describeModels fills the embedding fields of a Status: the primary and
// the fast model, and which one the served generation's vectors are of
// (model, its fingerprint).
func (s *served) describeModels(st *skill.Status, model string) {
	if f := s.fast; f != nil && !f.Status().Degraded {
		st.FastModel = s.describeModel(f.Status(), model)
	}
	if s.embedder == nil {
		if st.FastModel == nil {
			st.Degraded, st.DegradedReason = true, "embeddings are off; matching uses keywords only"
		}
		return
	}
	ms := s.embedder.Status()
	if ms.Degraded {
		st.Degraded = true
		fallback := "keywords only"
		if st.FastModel != nil {
			fallback = "the fast model " + st.FastModel.Name
		}
		st.DegradedReason = fmt.Sprintf("%s: %s; matching uses %s until a valid model is available", ms.Reason, ms.Detail, fallback)
		return
	}
	st.Model = s.describeModel(ms, model)
}

// describeModel is the Status of a model, serving when served is its
// fingerprint.
func (s *served) describeModel(ms embed.Status, served string) *skill.ModelStatus {
	out := &skill.ModelStatus{
		Name: ms.Identity.Name, Dimension: ms.Identity.Dimension, Fingerprint: ms.Identity.Fingerprint, Path: ms.Identity.Path,
		LoadDuration: ms.Load.LoadDuration, QueryLatency: ms.Load.QueryLatency,
		EmbeddingsComputed: ms.EmbeddingsComputed, MatchThreshold: ms.MatchThreshold,
		Serving: served != "" && served == ms.Identity.Fingerprint, Released: ms.Released,
	}
	out.VectorsCached, _ = s.db.VectorCount(ms.Identity.Fingerprint)
	return out
}
