package match

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// UpdateStats describe what Update did.
type UpdateStats struct {
	// Rebuilt is set when the index was built from scratch (the indexed
	// fields or analyzers changed).
	Rebuilt bool
	// Kept, Changed, Added and Removed count skills whose analysis was
	// reused, redone, done and dropped.
	Kept, Changed, Added, Removed int
	// Vectors counts the vectors set or cleared.
	Vectors int
	// Terms counts the postings lists copied and edited.
	Terms int
}

// Update returns an Index over in that reuses ix's analysis of every skill
// whose indexed text did not change: the postings lists that hold a changed
// skill are copied and edited, the vector blocks that hold a changed vector
// are copied, and everything else is shared with ix, which stays valid. The
// result answers exactly as Build(in) would, bit for bit.
//
// A skill is the same skill when its key (skill.Key: its folder, or a
// tool's name) is; its indexed text is
// unchanged when its content hash, name, description, tags and triggers are
// (the body is read through in.Body only for skills whose text changed, and
// is taken to follow the content hash). When in.Config indexes other fields,
// analyzers or body lengths than ix, Update builds from scratch. A nil ix
// has nothing to reuse: Update builds from scratch, and counts every skill
// added.
func (ix *Index) Update(ctx context.Context, in BuildInput) (*Index, UpdateStats, error) {
	if ix == nil {
		nx, err := Build(ctx, in)
		return nx, UpdateStats{Rebuilt: true, Added: len(in.Skills)}, err
	}
	var us UpdateStats
	start := time.Now()
	cfg := in.Config.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, us, fmt.Errorf("match config: %w", err)
	}
	params := anyParams(in.Skills)
	if !ix.sameIndexing(cfg, params) {
		nx, err := Build(ctx, in)
		us.Rebuilt = true
		return nx, us, err
	}
	nx := &Index{cfg: cfg, generation: in.Generation, generationID: in.GenerationID, model: in.Model, embedder: in.Embedder}

	// Match the new skills with the old slots.
	slotOf := ix.slotOf
	type item struct {
		s    *skill.Skill
		v    []float32
		slot int32
		kept bool
	}
	items := make([]item, 0, len(in.Skills))
	used := make([]bool, len(ix.docs))
	for i, s := range in.Skills {
		if !indexable(s) {
			nx.stats.Excluded++
			continue
		}
		var v []float32
		if i < len(in.Vectors) {
			v = in.Vectors[i]
		}
		it := item{s: s, v: v, slot: -1}
		if d, ok := slotOf[s.Key()]; ok && !used[d] {
			used[d] = true
			it.slot = d
			it.kept = (ix.docs[d] == s || sameIndexedText(ix.docs[d], s)) && !ix.bodyErr[d]
		}
		items = append(items, it)
	}
	// Slots to drop (changed or removed) and to fill (changed or added).
	var drop, fill []int32
	var free []int32
	var gone []string // keys of removed skills
	for d, s := range ix.docs {
		if s != nil && !used[d] {
			drop = append(drop, int32(d))
			free = append(free, int32(d))
			gone = append(gone, s.Key())
			us.Removed++
		} else if s == nil {
			free = append(free, int32(d))
		}
	}
	slots := len(ix.docs)
	for i := range items {
		it := &items[i]
		switch {
		case it.kept:
			us.Kept++
			continue
		case it.slot >= 0:
			drop = append(drop, it.slot)
			us.Changed++
		default:
			if len(free) > 0 {
				it.slot, free = free[0], free[1:]
			} else {
				it.slot = int32(slots)
				slots++
			}
			us.Added++
		}
		fill = append(fill, it.slot)
	}

	nx.slotOf = slotOf
	if us.Added > 0 || us.Removed > 0 {
		nx.slotOf = maps.Clone(slotOf) // ix's stays valid
		for _, key := range gone {
			delete(nx.slotOf, key)
		}
		for _, it := range items {
			nx.slotOf[it.s.Key()] = it.slot
		}
	}

	// Per-slot arrays, in the new generation's own copies.
	nx.docs = make([]*skill.Skill, slots)
	nx.hidden = make([]bool, slots)
	nx.bodyErr = make([]bool, slots)
	nx.ord = make([]int32, slots)
	nx.byOrd = make([]int32, len(items))
	copy(nx.bodyErr, ix.bodyErr)
	for i, it := range items {
		nx.docs[it.slot] = it.s
		nx.hidden[it.slot] = it.s.Frontmatter.Hidden
		nx.ord[it.slot] = int32(i)
		nx.byOrd[i] = it.slot
		if it.s.Frontmatter.Hidden {
			nx.stats.Hidden++
		}
	}
	for _, d := range drop {
		nx.bodyErr[d] = false
	}

	// Analyze what changed.
	fields := sparseFields(cfg.Fields, cfg.BM25, params)
	withBody := nx.bodyIndexed() && in.Body != nil
	added := make([]sparseDoc, len(fill))
	k := 0
	for _, it := range items {
		if it.kept {
			continue
		}
		if k%256 == 0 && ctx.Err() != nil {
			return nil, us, ctx.Err()
		}
		body := ""
		if withBody {
			b, err := in.Body(it.s)
			if err != nil {
				nx.bodyErr[it.slot] = true
			} else {
				body = skill.BodyStart(b, cfg.Fields.BodyChars)
			}
		}
		added[k] = docText(it.s, fields, body)
		k++
	}
	var err error
	if nx.sparse, us.Terms, err = ix.sparse.update(ctx, fields, cfg.BM25, slots, drop, fill, added, len(items)); err != nil {
		return nil, us, err
	}
	for d, e := range nx.bodyErr {
		if e && nx.docs[d] != nil {
			nx.stats.BodyErrors++
		}
	}

	// Vectors.
	svs := make([]slotVec, len(items))
	for i, it := range items {
		svs[i] = slotVec{slot: it.slot, v: it.v, kept: it.kept}
	}
	nx.dense, us.Vectors = ix.updateDense(svs, drop, slots, in.UnitVectors)
	if nx.dense != nil {
		nx.stats.Vectors, nx.stats.Dimension = nx.dense.count, nx.dense.dim
	}
	// The rows are exactly the usable vectors given: the others are bad.
	for _, it := range items {
		if it.v != nil {
			nx.stats.BadVectors++
		}
	}
	nx.stats.BadVectors -= nx.stats.Vectors

	nx.phrases = ix.phrases.update(nx.sparse.analyzers[AnalyzerStem], ix.docs, nx.docs, nx.ord, ix.byOrd, drop, fill, len(items))
	nx.stats.Skills = len(items)
	nx.stats.Duration = time.Since(start)
	return nx, us, nil
}

// slotVec is one skill's slot and vector, and whether its slot kept its
// analysis.
type slotVec struct {
	slot int32
	v    []float32
	kept bool
}

// sameIndexing reports whether cfg, over skills with parameters (params) or
// not, indexes what ix indexed: the same fields with the same analyzers and
// the same length of body.
func (ix *Index) sameIndexing(cfg Config, params bool) bool {
	fields := sparseFields(cfg.Fields, cfg.BM25, params)
	if len(fields) != len(ix.sparse.fields) {
		return false
	}
	for i, f := range fields {
		if f.name != ix.sparse.fields[i].name || f.analyzer != ix.sparse.fields[i].analyzer {
			return false
		}
	}
	return cfg.Fields.BodyChars == ix.cfg.Fields.BodyChars || !ix.sparse.hasField(fieldBody)
}

// sameIndexedText reports whether two versions of a skill give the same
// indexed text.
func sameIndexedText(a, b *skill.Skill) bool {
	return a.ContentHash == b.ContentHash && a.Name == b.Name && a.SearchDescription() == b.SearchDescription() &&
		slices.Equal(a.Tags(), b.Tags()) && slices.Equal(a.Frontmatter.Triggers, b.Frontmatter.Triggers)
}

// updateDense returns the vectors of the new generation: ix's blocks, with
// those that hold a changed slot copied and changed. Like newDense, the
// dimension is that of the first usable vector in catalog order.
func (ix *Index) updateDense(items []slotVec, drop []int32, slots int, unit bool) (*dense, int) {
	dim := 0
	for _, it := range items {
		if len(it.v) > 0 {
			if _, ok := unitNorm(it.v); ok {
				dim = len(it.v)
				break
			}
		}
	}
	if dim == 0 {
		return nil, len(items)
	}
	old := ix.dense
	if old == nil || old.dim != dim {
		d := &dense{dim: dim, stride: (dim + 63) &^ 63}
		d.grow(slots)
		for _, it := range items {
			if it.v != nil {
				d.set(int(it.slot), it.v, unit)
			}
		}
		return d, len(items)
	}
	set := map[int32][]float32{}
	touched := map[int]bool{}
	for _, d := range drop {
		set[d] = nil
		touched[int(d)/blockRows] = true
	}
	for _, it := range items {
		if it.kept && old.holds(it.slot, it.v, unit) {
			continue
		}
		set[it.slot] = it.v
		touched[int(it.slot)/blockRows] = true
	}
	if len(set) == 0 {
		return old, 0
	}
	d := old.own(touched)
	d.grow(slots)
	for _, s := range slices.Sorted(maps.Keys(set)) {
		if v := set[s]; v != nil {
			d.set(int(s), v, unit)
		} else {
			d.clearSlot(int(s))
		}
	}
	return d, len(set)
}
