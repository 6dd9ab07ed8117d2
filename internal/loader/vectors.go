package loader

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// vectors returns the vectors of winners, cat's winning skills, and the model that made
// them. It reuses prev's when neither the catalog nor the model changed.
// Otherwise a skill keeps the vector it had in prev (or in base, the index
// restored from the last run's snapshot, made in baseSpace) when its key,
// content and name are the same; the rest are embedded through the store's
// cache, which computes only texts it has not seen under this model. A
// degraded embedder is reloaded first, so a model fixed on disk is picked up
// by the next pass. It returns nil vectors (keyword-only) when no model is
// available, and an error only when ctx ended. prune says the vector cache
// may be pruned to the texts of cat's entries: skills were embedded, and
// every MCP server has its tools listed.
func (a *assembly) vectors(ctx context.Context, prev *Generation, base *match.Index, baseSpace vectorSpace, cat *catalog.Catalog, winners []*skill.Skill, pass *Pass) (_ map[*skill.Skill][]float32, _ vectorSpace, prune bool, _ error) {
	m := a.embedder
	if m == nil {
		return nil, vectorSpace{}, false, nil
	}
	if m.Status().Degraded {
		// The Manager logs the outcome: loaded, or recovered after a
		// failure.
		_ = m.Reload(ctx, m.Config())
	}
	id := m.Identity()
	if id.Fingerprint == "" {
		return nil, vectorSpace{}, false, nil
	}
	bodyChars := m.Config().BodyChars
	space := vectorSpace{model: id, bodyChars: bodyChars}
	fromPrev := prev != nil && prev.vectors != nil && space.reuses(prev.space)
	if fromPrev && cat == prev.Catalog {
		return prev.vectors, space, false, nil
	}
	if err := a.recordModel(id); err != nil {
		a.log.Warn("cannot record the embedding model in the cache; matching uses keywords only", "err", err)
		return nil, vectorSpace{}, false, nil
	}
	out, todo := reusedVectors(prev, base, baseSpace, space, winners)
	pass.DocumentsCached = len(winners) - len(todo)
	if len(todo) == 0 {
		return out, space, false, nil
	}
	computed, err := a.embed(ctx, todo, bodyChars, out, pass)
	if err != nil {
		if ctx.Err() != nil {
			return nil, vectorSpace{}, false, err
		}
		if !errors.Is(err, embed.ErrUnavailable) && !errors.Is(err, embed.ErrModelChanged) {
			a.log.Warn("embedding skills failed; matching uses keywords only until the next reindex", "err", err)
		}
		return nil, vectorSpace{}, false, nil
	}
	// While a server is not settled its tools are missing from winners:
	// their vectors stay in the cache for when it is back.
	prune = computed > 0 && (a.tools == nil || a.tools.Settled())
	return out, space, prune, nil
}

// reusedVectors returns the vectors, made in space, that winners keep from
// prev (the same *skill.Skill, or the same key, content and name) or from
// base (made in baseSpace; at a start, prev is nil), and the winners that
// keep none, in order.
func reusedVectors(prev *Generation, base *match.Index, baseSpace, space vectorSpace, winners []*skill.Skill) (map[*skill.Skill][]float32, []*skill.Skill) {
	out := make(map[*skill.Skill][]float32, len(winners))
	var misses []*skill.Skill
	switch {
	case prev != nil && prev.vectors != nil && space.reuses(prev.space):
		for _, s := range winners {
			// A skill unchanged since prev is the same *skill.Skill.
			if v, ok := prev.vectors[s]; ok {
				out[s] = v
				continue
			}
			misses = append(misses, s)
		}
	case prev == nil && base != nil && space.reuses(baseSpace):
		misses = alignedVectors(base, winners, out)
	default:
		misses = winners
	}
	if len(misses) == 0 {
		return out, nil
	}
	want := make(map[string]bool, len(misses))
	for _, s := range misses {
		want[s.Key()] = true
	}
	known := knownVectors(prev, base, baseSpace, space, want)
	var todo []*skill.Skill
	for _, s := range misses {
		if k, ok := known[s.Key()]; ok && k.hash == s.ContentHash && k.name == s.Name {
			out[s] = k.vec
			continue
		}
		todo = append(todo, s)
	}
	return out, todo
}

// embed puts in out the vectors of todo, their texts holding bodyChars
// characters of each body, embedded through the store's vector cache, and
// returns how many it computed; it counts them in pass.
func (a *assembly) embed(ctx context.Context, todo []*skill.Skill, bodyChars int, out map[*skill.Skill][]float32, pass *Pass) (int, error) {
	bodies, err := a.bodyStarts(todo, bodyChars)
	if err != nil {
		a.log.Warn("reading skill bodies for embedding failed; embedding without them", "err", err)
	}
	texts := make([]string, len(todo))
	for i, s := range todo {
		texts[i] = s.DocumentText(bodies[s.ContentHash], bodyChars)
	}
	m := a.embedder
	vecs, computed, err := embed.EmbedDocuments(ctx, m, a.db, texts, m.Config().BatchSize)
	pass.Stats.Embedded = computed
	pass.DocumentsEmbedded = computed
	pass.DocumentsCached += len(texts) - computed
	if err != nil {
		return computed, err
	}
	for i, s := range todo {
		out[s] = match.UnitVector(vecs[i]) // as the index holds it: see heldVectors
	}
	return computed, nil
}

// vectorSpace is what a generation's vectors are made by: the model, and
// how many characters of a skill's body its embedded text holds. A vector
// is reused only within one space (see reuses).
type vectorSpace struct {
	model     embed.Identity
	bodyChars int
}

// reuses reports whether vectors made in t are valid in s: the same model
// files and settings, and as many characters of each body embedded. Where
// the model's folder lies, and its name, change no vector: a state folder
// moved or restored elsewhere keeps its snapshot's vectors.
func (s vectorSpace) reuses(t vectorSpace) bool {
	return s.model.Fingerprint == t.model.Fingerprint && s.model.Settings == t.model.Settings &&
		s.model.Dimension == t.model.Dimension && s.bodyChars == t.bodyChars
}

// alignedVectors puts in out the vector base holds for each of winners
// whose key, content and name it holds it for, walking both in catalog
// order, and returns the others in that order. At a start, base is the
// snapshot of the catalog served before the stop, so the walk pairs them
// all without knownVectors's maps; from the first winner whose key is not
// the next of base's, the rest are left to them.
func alignedVectors(base *match.Index, winners []*skill.Skill, out map[*skill.Skill][]float32) []*skill.Skill {
	var misses []*skill.Skill
	i := 0
	base.EachVector(func(b *skill.Skill, v []float32) {
		if i == len(winners) || winners[i].Key() != b.Key() {
			return
		}
		s := winners[i]
		i++
		if s.ContentHash == b.ContentHash && s.Name == b.Name {
			out[s] = v
		} else {
			misses = append(misses, s)
		}
	})
	return append(misses, winners[i:]...)
}

// knownVector is a vector a skill had in an earlier generation.
type knownVector struct {
	hash, name string
	vec        []float32
}

// knownVectors returns, by skill.Key (those in want), the vectors of
// prev (or of base, restored from a snapshot made in baseSpace) made in
// space.
func knownVectors(prev *Generation, base *match.Index, baseSpace, space vectorSpace, want map[string]bool) map[string]knownVector {
	out := make(map[string]knownVector, len(want)) // at most one per key wanted
	if prev != nil && prev.vectors != nil && space.reuses(prev.space) {
		for s, v := range prev.vectors {
			if want[s.Key()] {
				out[s.Key()] = knownVector{s.ContentHash, s.Name, v}
			}
		}
		return out
	}
	if base != nil && space.reuses(baseSpace) {
		base.EachVector(func(s *skill.Skill, v []float32) {
			if want[s.Key()] {
				out[s.Key()] = knownVector{s.ContentHash, s.Name, v}
			}
		})
	}
	return out
}

// sameVectors reports whether vectors made in space are the ones prev
// serves.
func sameVectors(prev *Generation, vectors map[*skill.Skill][]float32, space vectorSpace) bool {
	if (prev.vectors == nil) != (vectors == nil) || prev.space != space {
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
func (a *assembly) recordModel(id embed.Identity) error {
	fp, _, err := a.db.Model()
	if err != nil {
		return fmt.Errorf("read model identity: %w", err)
	}
	if fp == id.Fingerprint {
		return nil
	}
	if fp != "" {
		a.log.Info("embedding model changed; skills will be embedded again", "from", fp, "to", id.Fingerprint, "model", id.Name)
	}
	return a.db.SetModel(id.Fingerprint, id.Name)
}

// bodyStarts reads the bodies of skills in one read transaction and keeps,
// per content hash, the first chars+1 characters: enough for
// skill.BodyStart(body, n) with any n <= chars to give the same text as on
// the whole body. chars <= 0 reads nothing.
func (a *assembly) bodyStarts(skills []*skill.Skill, chars int) (map[string]string, error) {
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
	err := a.db.Bodies(hashes, func(hash string, body []byte) {
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
