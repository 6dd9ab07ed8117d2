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

// vectors returns the vectors of winners, cat's winning skills, and the
// space they are made in: the primary model's (Config.Embedder) when it is
// available and every text has its vector (from prev, from base, the index
// restored from the last run's snapshot and made in baseSpace, from the
// store's cache, or embedded now, when at most Config.SyncDocuments texts
// are new); else the fast model's (Config.Fast), embedded now, while the
// primary model's texts are embedded in the background (backfill); else
// none (keyword-only). It returns an error only when ctx ended. prune says
// the vector cache may be pruned to the texts of cat's entries: skills were
// embedded, and every MCP server has its tools listed.
func (a *assembly) vectors(ctx context.Context, prev *Generation, base *match.Index, baseSpace vectorSpace, cat *catalog.Catalog, winners []*skill.Skill, pass *Pass) (map[*skill.Skill][]float32, vectorSpace, bool, error) {
	in := tierInput{prev: prev, base: base, baseSpace: baseSpace, cat: cat, winners: winners, pass: pass}
	t, err := a.tierVectors(ctx, a.embedder, a.syncDocs, in)
	if err != nil || t.state == tierComplete {
		if a.backfill != nil {
			a.backfill.clear()
		}
		return t.vectors, t.space, t.prune, err
	}
	backlog, primary := t.backlog, t.space.model
	if t.state == tierUnavailable {
		backlog = nil
	}
	var fast tierResult
	if a.fast != nil {
		if fast, err = a.tierVectors(ctx, a.fast, -1, in); err != nil {
			return nil, vectorSpace{}, false, err
		}
	}
	if len(backlog) > 0 && a.backfill != nil {
		serving := "keyword-only matching"
		if fast.state == tierComplete {
			serving = "the vectors of " + fast.space.model.Name
		}
		a.backfill.want(primary, backlog, serving)
	}
	if fast.state != tierComplete {
		return nil, vectorSpace{}, false, nil
	}
	return fast.vectors, fast.space, fast.prune, nil
}

// published unloads the fast model once g, a generation serving the
// primary model's vectors, is published: the fast model is not needed
// until the primary model's vectors are missing again, and the pass that
// finds them missing loads it on its first embedding (embed.Manager.Release).
func (a *assembly) published(g *Generation) {
	if a.fast != nil && a.embedder != nil && g.vectors != nil && g.space.by == a.embedder {
		a.fast.Release()
	}
}

// tierInput is what a pass gives each model's vectors: the previous
// generation, the restored index and its space, the catalog and its
// winners, and the pass to count in.
type tierInput struct {
	prev      *Generation
	base      *match.Index
	baseSpace vectorSpace
	cat       *catalog.Catalog
	winners   []*skill.Skill
	pass      *Pass
}

// tierState says whether a model gave every winner its vector.
type tierState int

const (
	tierUnavailable tierState = iota // no model, or it failed: no vectors
	tierComplete                     // every winner has its vector
	tierBacklog                      // more texts are new than the pass may embed: backlog lists them
)

// tierResult is one model's vectors for a pass.
type tierResult struct {
	state   tierState
	vectors map[*skill.Skill][]float32
	space   vectorSpace
	prune   bool
	backlog []string // the texts not cached, when state is tierBacklog
}

// tierVectors returns m's vectors of in's winners, embedding at most limit
// texts that are in neither an earlier generation nor the store's cache
// (any number when limit is negative). A degraded m is reloaded first, so a
// model fixed on disk is picked up by the next pass.
func (a *assembly) tierVectors(ctx context.Context, m *embed.Manager, limit int, in tierInput) (tierResult, error) {
	if m == nil {
		return tierResult{}, nil
	}
	if m.Status().Degraded {
		// The Manager logs the outcome: loaded, or recovered after a
		// failure.
		_ = m.Reload(ctx, m.Config())
	}
	id := m.Identity()
	if id.Fingerprint == "" {
		return tierResult{}, nil
	}
	bodyChars := m.Config().BodyChars
	space := vectorSpace{model: id, bodyChars: bodyChars, by: m}
	prev := in.prev
	if prev != nil && prev.vectors != nil && space.reuses(prev.space) && in.cat == prev.Catalog {
		return tierResult{state: tierComplete, vectors: prev.vectors, space: space}, nil
	}
	if err := a.recordModels(); err != nil {
		a.log.Warn("cannot record the embedding models in the cache; matching uses keywords only", "err", err)
		return tierResult{}, nil
	}
	out, todo := reusedVectors(prev, in.base, in.baseSpace, space, in.winners)
	if len(todo) == 0 {
		in.pass.DocumentsCached = len(in.winners)
		return tierResult{state: tierComplete, vectors: out, space: space}, nil
	}
	texts, err := a.files.documentTexts(todo, bodyChars)
	if err != nil {
		a.log.Warn("reading skill bodies for embedding failed; embedding without them", "err", err)
	}
	if limit >= 0 && len(todo) > limit {
		missing, err := embed.UncachedDocuments(id, a.db, texts)
		if err != nil {
			a.log.Warn("reading the vector cache failed; embedding skills in the background", "err", err)
			missing = texts
		}
		if len(missing) > limit {
			return tierResult{state: tierBacklog, space: space, backlog: missing}, nil
		}
	}
	in.pass.DocumentsCached = len(in.winners) - len(todo)
	computed, err := a.embed(ctx, m, todo, texts, out, in.pass)
	if err != nil {
		if ctx.Err() != nil {
			return tierResult{}, err
		}
		if !errors.Is(err, embed.ErrUnavailable) && !errors.Is(err, embed.ErrModelChanged) {
			a.log.Warn("embedding skills failed; matching uses keywords only until the next reindex", "model", id.Name, "err", err)
		}
		return tierResult{}, nil
	}
	// While a server is not settled its tools are missing from winners:
	// their vectors stay in the cache for when it is back.
	prune := computed > 0 && (a.tools == nil || a.tools.Settled())
	return tierResult{state: tierComplete, vectors: out, space: space, prune: prune}, nil
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

// documentTexts returns the embedded texts of skills, holding bodyChars
// characters of each body; on an error reading the bodies, the texts
// without them.
func (f *skillFiles) documentTexts(skills []*skill.Skill, bodyChars int) ([]string, error) {
	bodies, err := f.bodyStarts(skills, bodyChars)
	texts := make([]string, len(skills))
	for i, s := range skills {
		texts[i] = s.DocumentText(bodies[s.ContentHash], bodyChars)
	}
	return texts, err
}

// embed puts in out the vectors of todo, whose texts are texts, embedded by
// m through the store's vector cache, and returns how many it computed; it
// counts them in pass.
func (a *assembly) embed(ctx context.Context, m *embed.Manager, todo []*skill.Skill, texts []string, out map[*skill.Skill][]float32, pass *Pass) (int, error) {
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
	// by embeds the tasks matched against these vectors; nil for a space
	// read from a snapshot.
	by *embed.Manager
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

// recordModels notes the primary model in the store's meta bucket and keeps
// the vectors of both models (primary and fast); vectors of any other model
// are dropped. It writes only when the models differ from those it last
// recorded.
func (a *assembly) recordModels() error {
	var primary, fast embed.Identity
	if a.embedder != nil {
		primary = a.embedder.Identity()
	}
	if a.fast != nil {
		fast = a.fast.Identity()
	}
	fps := [2]string{primary.Fingerprint, fast.Fingerprint}
	if fps == a.recorded {
		return nil
	}
	fp, _, err := a.db.Model()
	if err != nil {
		return fmt.Errorf("read model identity: %w", err)
	}
	if fp != "" && fp != primary.Fingerprint {
		a.log.Info("embedding model changed; skills will be embedded again", "from", fp, "to", primary.Fingerprint, "model", primary.Name)
	}
	if primary.Fingerprint == "" {
		// The primary model is unavailable: its vectors stay for when it
		// is back, and nothing is recorded.
		return nil
	}
	var keep []string
	if fast.Fingerprint != "" {
		keep = append(keep, fast.Fingerprint)
	}
	if err := a.db.SetModel(primary.Fingerprint, primary.Name, keep...); err != nil {
		return err
	}
	a.recorded = fps
	return nil
}

// bodyStarts reads the bodies of skills in one read transaction and keeps,
// per content hash, the first chars+1 characters: enough for
// skill.BodyStart(body, n) with any n <= chars to give the same text as on
// the whole body. chars <= 0 reads nothing.
func (f *skillFiles) bodyStarts(skills []*skill.Skill, chars int) (map[string]string, error) {
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
	err := f.db.Bodies(hashes, func(hash string, body []byte) {
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
