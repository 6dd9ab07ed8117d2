package generation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// vectors returns the vectors of cat's winning skills and the model that made
// them. It reuses prev's when neither the catalog nor the model changed;
// otherwise it embeds through the store's cache, which computes only texts it
// has not seen under this model. A degraded embedder is reloaded first, so a
// model fixed on disk is picked up by the next build. It returns nil vectors
// (keyword-only) when no model is available, and an error only when ctx
// ended.
func (b *Builder) vectors(ctx context.Context, prev *Generation, cat *catalog.Catalog, pass *Pass) (map[*skill.Skill][]float32, embed.Identity, error) {
	m := b.cfg.Embedder
	if m == nil {
		return nil, embed.Identity{}, nil
	}
	if m.Status().Degraded {
		if err := m.Reload(ctx, m.Config()); err == nil {
			b.log.Info("embedding model available again", "model", m.Identity().Name)
		}
	}
	id := m.Identity()
	if id.Fingerprint == "" {
		return nil, embed.Identity{}, nil
	}
	if prev != nil && cat == prev.Catalog && prev.vectors != nil && prev.Model == id {
		return prev.vectors, id, nil
	}
	if err := b.recordModel(id); err != nil {
		b.log.Warn("cannot record the embedding model in the cache; matching uses keywords only", "err", err)
		return nil, embed.Identity{}, nil
	}
	winners := cat.Winners()
	bodyChars := m.Config().BodyChars
	bodies, err := b.bodyStarts(winners, bodyChars)
	if err != nil {
		b.log.Warn("reading skill bodies for embedding failed; embedding without them", "err", err)
	}
	texts := make([]string, len(winners))
	for i, s := range winners {
		texts[i] = documentText(s, bodies, bodyChars)
	}
	vecs, computed, err := embed.EmbedDocuments(ctx, m, b.db, texts, m.Config().BatchSize)
	pass.Stats.Embedded = computed
	pass.DocumentsEmbedded, pass.DocumentsCached = computed, len(texts)-computed
	if err != nil {
		if ctx.Err() != nil {
			return nil, embed.Identity{}, err
		}
		if !errors.Is(err, embed.ErrUnavailable) && !errors.Is(err, embed.ErrModelChanged) {
			b.log.Warn("embedding skills failed; matching uses keywords only until the next reindex", "err", err)
		}
		return nil, embed.Identity{}, nil
	}
	out := make(map[*skill.Skill][]float32, len(winners))
	keep := make(map[string]bool, len(texts))
	for i, s := range winners {
		out[s] = vecs[i]
		keep[embed.TextHash(id, texts[i])] = true
	}
	// While a server is not settled its tools are missing from texts: keep
	// their vectors for when it is back.
	settled := b.cfg.Tools == nil || b.cfg.Tools.Settled()
	if (pass.Stats.Published || computed > 0) && settled {
		if _, err := b.db.PruneVectors(id.Fingerprint, keep); err != nil {
			b.log.Warn("pruning stale vectors failed", "err", err)
		}
	}
	return out, id, nil
}

// documentText is the text embedded for an entry: a skill's name,
// description and body start, or a tool's name as words, its title and
// description, and its parameters in place of a body. The server's name is
// left out: it is a namespace, matched by keywords.
func documentText(s *skill.Skill, bodies map[string]string, bodyChars int) string {
	if !s.IsTool() {
		return embed.DocumentText(s.Name, s.Description(), bodies[s.ContentHash], bodyChars)
	}
	desc := s.Description()
	if t := s.Tool.Title; t != "" && !strings.EqualFold(t, s.Tool.Name) {
		desc = t + ". " + desc
	}
	return embed.DocumentText(nameWords(s.Tool.Name), desc, s.ParamText(), bodyChars)
}

// nameWords spells a tool name as words: camelCase humps, digits and
// separators become spaces ("getPM2.5Level" reads "get PM2 5 Level").
func nameWords(name string) string {
	var b strings.Builder
	var prev rune
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			r = ' '
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// sameVectors reports whether vectors made by model are the ones prev serves.
func sameVectors(prev *Generation, vectors map[*skill.Skill][]float32, model embed.Identity) bool {
	if (prev.vectors == nil) != (vectors == nil) || prev.Model != model {
		return false
	}
	if vectors == nil {
		return true
	}
	// Reused vectors are prev's own map.
	for s, v := range vectors {
		w, ok := prev.vectors[s]
		if !ok || len(w) == 0 || len(v) == 0 || &w[0] != &v[0] {
			return false
		}
		break
	}
	return len(vectors) == len(prev.vectors)
}

// recordModel notes the model in the store's meta bucket; a new model drops
// the vectors of the previous one.
func (b *Builder) recordModel(id embed.Identity) error {
	fp, _, err := b.db.Model()
	if err != nil {
		return fmt.Errorf("read model identity: %w", err)
	}
	if fp == id.Fingerprint {
		return nil
	}
	if fp != "" {
		b.log.Info("embedding model changed; skills will be embedded again", "from", fp, "to", id.Fingerprint, "model", id.Name)
	}
	return b.db.SetModel(id.Fingerprint, id.Name)
}

// bodyStarts reads the bodies of skills in one read transaction and keeps,
// per content hash, the first chars+1 characters: enough for
// skill.BodyStart(body, n) with any n <= chars to give the same text as on
// the whole body. chars <= 0 reads nothing.
func (b *Builder) bodyStarts(skills []*skill.Skill, chars int) (map[string]string, error) {
	out := make(map[string]string, len(skills))
	if chars <= 0 {
		return out, nil
	}
	hashes := make([]string, 0, len(skills))
	for _, s := range skills {
		if !s.IsTool() {
			hashes = append(hashes, s.ContentHash)
		}
	}
	err := b.db.Bodies(hashes, func(hash string, body []byte) {
		out[hash] = string(runePrefix(body, chars+1))
	})
	return out, err
}

// runePrefix returns the first n characters of b.
func runePrefix(b []byte, n int) []byte {
	i := 0
	for ; n > 0 && i < len(b); n-- {
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return b[:i]
}

// modelConfig is cfg with the cosine threshold of the model that embedded g,
// unless cfg sets one: cosine scales differ between models, so the threshold
// travels with the model.
func (b *Builder) modelConfig(cfg match.Config, g *Generation) match.Config {
	if g.vectors != nil && b.cfg.Embedder != nil {
		cfg = cfg.WithModelThreshold(b.cfg.Embedder.Status().MatchThreshold)
	}
	return cfg
}

// buildIndex builds the match index of g under cfg.
func (b *Builder) buildIndex(ctx context.Context, g *Generation, cfg match.Config) (*match.Index, error) {
	return b.indexOf(ctx, g, g.Catalog.Winners(), cfg)
}

// SubsetIndex builds a match index over the winning skills of g that keep
// accepts, with their vectors and bodies, as if they were the whole
// catalog (their own term statistics and length norms). Evaluations use it
// to measure matching on smaller catalogs drawn from a large one.
func (b *Builder) SubsetIndex(ctx context.Context, g *Generation, keep func(*skill.Skill) bool, cfg match.Config) (*match.Index, error) {
	var skills []*skill.Skill
	for _, s := range g.Catalog.Winners() {
		if keep(s) {
			skills = append(skills, s)
		}
	}
	return b.indexOf(ctx, g, skills, cfg)
}

// indexOf builds a match index of winners, skills of g, under cfg.
func (b *Builder) indexOf(ctx context.Context, g *Generation, winners []*skill.Skill, cfg match.Config) (*match.Index, error) {
	cfg = b.modelConfig(cfg, g)
	bodies, err := b.bodyStarts(winners, cfg.Fields.BodyChars)
	if err != nil {
		return nil, fmt.Errorf("read skill bodies: %w", err)
	}
	in := match.BuildInput{
		Skills:     winners,
		Generation: g.ID,
		Config:     cfg,
		Body: func(s *skill.Skill) (string, error) {
			if s.IsTool() {
				return "", nil // a tool has no body; its parameters are a field of their own
			}
			body, ok := bodies[s.ContentHash]
			if !ok {
				return "", errors.New("body not in the cache")
			}
			return body, nil
		},
	}
	if g.vectors != nil {
		in.Vectors = make([][]float32, len(winners))
		for i, s := range winners {
			in.Vectors[i] = g.vectors[s]
		}
		in.Embedder = b.cfg.Embedder
		in.Model = g.Model.Fingerprint
	}
	ix, err := match.Build(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("build match index: %w", err)
	}
	return ix, nil
}
