package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// skillVectors are the document vectors of one generation, computed by one
// model.
type skillVectors struct {
	model embed.Identity
	// bySkill maps each winning skill of the catalog to its vector.
	bySkill map[*skill.Skill][]float32
}

// refreshVectors returns the vectors for cat's winning skills. It reuses the
// current generation's vectors when neither the catalog nor the model
// changed; otherwise it embeds through the store's cache, which computes only
// texts it has not seen under this model. A degraded embedder is reloaded
// first, so a model that was fixed on disk is picked up by the next reindex.
// It returns nil vectors (keyword-only) when no model is available.
func (e *Engine) refreshVectors(ctx context.Context, cat *loader.Catalog, catalogChanged bool) (*skillVectors, int, error) {
	m := e.cfg.Embedder
	if m == nil {
		return nil, 0, nil
	}
	if st := m.Status(); st.Degraded {
		if err := m.Reload(ctx, e.embedConfig()); err == nil {
			e.log.Info("embedding model available again", "model", m.Identity().Name)
		}
	}
	id := m.Identity()
	if id.Fingerprint == "" {
		return nil, 0, nil
	}
	if cur := e.current.Load(); !catalogChanged && cur != nil && cur.vectors != nil && cur.vectors.model == id {
		return cur.vectors, 0, nil
	}
	if err := e.recordModel(id); err != nil {
		return nil, 0, err
	}
	winners := cat.Winners()
	texts := make([]string, len(winners))
	bodyChars := m.Config().BodyChars
	for i, s := range winners {
		body := ""
		if bodyChars > 0 {
			body, _, _ = e.db.Body(s.ContentHash)
		}
		texts[i] = embed.DocumentText(s.Name, s.Description(), body, bodyChars)
	}
	vecs, computed, err := embed.EmbedDocuments(ctx, m, e.db, texts, m.Config().BatchSize)
	e.rec.EmbeddingCache(ctx, telemetry.CacheDocument, len(texts)-computed, computed)
	if err != nil {
		if !errors.Is(err, embed.ErrUnavailable) && !errors.Is(err, embed.ErrModelChanged) {
			e.log.Warn("embedding skills failed; matching uses keywords only until the next reindex", "err", err)
		}
		return nil, computed, err
	}
	sv := &skillVectors{model: id, bySkill: make(map[*skill.Skill][]float32, len(winners))}
	keep := make(map[string]bool, len(texts))
	for i, s := range winners {
		sv.bySkill[s] = vecs[i]
		keep[embed.TextHash(id, texts[i])] = true
	}
	if catalogChanged && computed > 0 {
		if _, err := e.db.PruneVectors(id.Fingerprint, keep); err != nil {
			e.log.Warn("pruning stale vectors failed", "err", err)
		}
	}
	return sv, computed, nil
}

// recordModel notes the model in the store's meta bucket; a new model drops
// the vectors of the previous one.
func (e *Engine) recordModel(id embed.Identity) error {
	fp, _, err := e.db.Model()
	if err != nil {
		return fmt.Errorf("read model identity: %w", err)
	}
	if fp == id.Fingerprint {
		return nil
	}
	if fp != "" {
		e.log.Info("embedding model changed; skills will be embedded again", "from", fp, "to", id.Fingerprint, "model", id.Name)
	}
	return e.db.SetModel(id.Fingerprint, id.Name)
}

func (e *Engine) embedConfig() embed.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg.Embed
}

// SetEmbedConfig switches the embedding configuration (config reload): the
// model is reloaded and, when it changed, every skill is embedded again by a
// reindex. A model that fails to load leaves matching keyword-only.
func (e *Engine) SetEmbedConfig(ctx context.Context, cfg embed.Config) error {
	if e.cfg.Embedder == nil {
		return nil
	}
	e.mu.Lock()
	e.cfg.Embed = cfg
	e.mu.Unlock()
	if err := e.cfg.Embedder.Reload(ctx, cfg); err != nil {
		e.log.Warn("embedding model did not load; matching uses keywords only", "err", err)
	}
	_, err := e.Reindex(ctx, false)
	return err
}
