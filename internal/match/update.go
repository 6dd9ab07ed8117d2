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
// tool's name) is; its indexed text is unchanged when skill.SameSearch says
// so: its content hash, name, description, tags and triggers are (the body
// is read through in.Body only for skills whose text changed, and is taken
// to follow the content hash). When in.Config indexes other fields,
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
	items, used := ix.matchSlots(in, &nx.stats)
	p := ix.plan(items, used, &us)
	nx.slotOf = ix.slotOf
	if us.Added > 0 || us.Removed > 0 {
		nx.slotOf = maps.Clone(ix.slotOf) // ix's stays valid
		for _, key := range p.gone {
			delete(nx.slotOf, key)
		}
		for _, it := range items {
			nx.slotOf[it.s.Key()] = it.slot
		}
	}
	nx.fillSlots(ix, items, p)

	// Analyze what changed.
	fields := sparseFields(cfg.Fields, cfg.BM25, params)
	added, err := nx.analyzeChanged(ctx, items, fields, in.Body, len(p.fill))
	if err != nil {
		return nil, us, err
	}
	if nx.sparse, us.Terms, err = ix.sparse.update(ctx, fields, cfg.BM25, p.slots, p.drop, p.fill, added, len(items)); err != nil {
		return nil, us, err
	}
	for d, e := range nx.bodyErr {
		if e && nx.docs[d] != nil {
			nx.stats.BodyErrors++
		}
	}
	us.Vectors = nx.updateVectors(ix, items, p, in.UnitVectors)
	nx.phrases = ix.phrases.update(nx.sparse.analyzers[AnalyzerStem], ix.docs, nx.docs, nx.ord, ix.byOrd, p.drop, p.fill, len(items))
	nx.stats.Skills = len(items)
	nx.handBack(in)
	nx.stats.Duration = time.Since(start)
	return nx, us, nil
}

// updItem is one skill of an update: its vector, its slot (-1: none yet)
// and whether the slot keeps its analysis.
type updItem struct {
	s    *skill.Skill
	v    []float32
	slot int32
	kept bool
}

// matchSlots matches the skills of in with ix's slots, by key: a skill
// keeps its slot's analysis when its indexed text is the same and its body
// was read. used marks the slots taken; st counts the skills excluded.
func (ix *Index) matchSlots(in BuildInput, st *BuildStats) (items []updItem, used []bool) {
	items = make([]updItem, 0, len(in.Skills))
	used = make([]bool, len(ix.docs))
	for i, s := range in.Skills {
		if !indexable(s) {
			st.Excluded++
			continue
		}
		var v []float32
		if i < len(in.Vectors) {
			v = in.Vectors[i]
		}
		it := updItem{s: s, v: v, slot: -1}
		if d, ok := ix.slotOf[s.Key()]; ok && !used[d] {
			used[d] = true
			it.slot = d
			it.kept = (ix.docs[d] == s || skill.SameSearch(ix.docs[d], s)) && !ix.bodyErr[d]
		}
		items = append(items, it)
	}
	return items, used
}

// updPlan says which slots an update drops (changed or removed) and fills
// (changed or added), the keys of the skills removed, and how many slots
// the new index has.
type updPlan struct {
	drop, fill []int32
	gone       []string
	slots      int
}

// plan gives every item a slot (a free one, or a new one, for a skill
// added) and makes the update's plan, counting in us.
func (ix *Index) plan(items []updItem, used []bool, us *UpdateStats) updPlan {
	var p updPlan
	var free []int32
	for d, s := range ix.docs {
		if s != nil && !used[d] {
			p.drop = append(p.drop, int32(d))
			free = append(free, int32(d))
			p.gone = append(p.gone, s.Key())
			us.Removed++
		} else if s == nil {
			free = append(free, int32(d))
		}
	}
	p.slots = len(ix.docs)
	for i := range items {
		it := &items[i]
		switch {
		case it.kept:
			us.Kept++
			continue
		case it.slot >= 0:
			p.drop = append(p.drop, it.slot)
			us.Changed++
		default:
			if len(free) > 0 {
				it.slot, free = free[0], free[1:]
			} else {
				it.slot = int32(p.slots)
				p.slots++
			}
			us.Added++
		}
		p.fill = append(p.fill, it.slot)
	}
	return p
}

// fillSlots makes nx's per-slot arrays, its own copies, for items in
// catalog order.
func (nx *Index) fillSlots(ix *Index, items []updItem, p updPlan) {
	nx.docs = make([]*skill.Skill, p.slots)
	nx.hidden = make([]bool, p.slots)
	nx.bodyErr = make([]bool, p.slots)
	nx.ord = make([]int32, p.slots)
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
	for _, d := range p.drop {
		nx.bodyErr[d] = false
	}
}

// analyzeChanged returns the field texts of the items that do not keep
// their analysis (n of them), reading their bodies through body.
func (nx *Index) analyzeChanged(ctx context.Context, items []updItem, fields []*sparseField, body func(*skill.Skill) (string, error), n int) ([]sparseDoc, error) {
	added := make([]sparseDoc, n)
	k := 0
	for _, it := range items {
		if it.kept {
			continue
		}
		if k%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		added[k] = docText(it.s, fields, nx.bodyStart(body, it.s, it.slot))
		k++
	}
	return added, nil
}

// updateVectors makes nx's vectors from ix's and the items' and returns how
// many it set or cleared.
func (nx *Index) updateVectors(ix *Index, items []updItem, p updPlan, unit bool) int {
	svs := make([]slotVec, len(items))
	for i, it := range items {
		svs[i] = slotVec{slot: it.slot, v: it.v, kept: it.kept}
	}
	var changed int
	nx.dense, changed = ix.updateDense(svs, p.drop, p.slots, unit)
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
	return changed
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
