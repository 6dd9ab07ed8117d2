package match

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// QueryEmbedder embeds a task for dense matching; embed.Manager is one.
type QueryEmbedder interface {
	// EmbedQueries returns one vector per text: a task's, then its parts'
	// (see PartsConfig). Any error (model unavailable, timeout) makes the
	// request keyword-only: Match answers from BM25 and sets
	// MatchResult.Degraded.
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// BuildInput is what an Index is built from: one catalog generation.
type BuildInput struct {
	// Skills are the catalog's winners (every skill that wins its name in
	// some scope). Disabled skills and skills with
	// disable-model-invocation are left out of the index.
	Skills []*skill.Skill
	// Vectors are the skills' document vectors, aligned with Skills. A
	// nil slice or nil entries mean no vector: those skills are matched
	// by keywords only. Vectors of another dimension than the first one
	// are ignored and counted in BuildStats.BadVectors. The index keeps
	// its own unit-length copy of each.
	Vectors [][]float32
	// UnitVectors says Vectors are unit vectors already: made by
	// UnitVector, or rows an Index handed out (EachVector, or Vectors
	// after a build). The index then copies them as they are, so a vector
	// passed on from one generation to the next keeps its bits; others
	// are normalised. With UnitVectors, Build and Update point each entry
	// of Vectors the index holds at its own row, the same bits: a caller
	// that keeps the vectors then keeps no second copy of them.
	UnitVectors bool
	// Body returns a skill's SKILL.md body. It is called only when the
	// body is indexed (Fields.BodyChars > 0 and Fields.Body.Weight > 0);
	// nil, or an error for one skill, indexes that skill without a body.
	Body func(*skill.Skill) (string, error)
	// Embedder embeds tasks; nil makes every request keyword-only.
	Embedder QueryEmbedder
	// Model names the embedding model that made Vectors; it selects the
	// calibrated classifier fitted with that model.
	Model string
	// Generation and GenerationID identify the generation, copied into
	// results.
	Generation   uint64
	GenerationID string
	Config       Config
}

// BuildStats describe a built Index.
type BuildStats struct {
	Skills   int // indexed
	Excluded int // left out: disabled, or disable-model-invocation
	Hidden   int // indexed, matched only on request
	// Vectors is the number of indexed skills with a usable vector;
	// BadVectors the number ignored (wrong dimension, zero, not finite).
	Vectors, BadVectors int
	Dimension           int
	// BodyErrors counts skills whose body could not be read; they are
	// indexed without it.
	BodyErrors int
	Duration   time.Duration
}

// Index matches tasks against one catalog generation. It is immutable and
// safe for concurrent use. It holds no file or goroutine, so an Index that
// is no longer referenced is simply garbage collected.
//
// Each indexed skill has a slot: the row of its vector, its number in the
// postings. Update gives a skill that did not change its old slot, so the
// next Index shares everything the update did not touch with this one.
type Index struct {
	cfg          Config
	generation   uint64
	generationID string
	model        string
	docs         []*skill.Skill   // by slot; nil for a free slot
	hidden       []bool           // by slot
	ord          []int32          // by slot: the skill's place among the indexed skills, in catalog order
	bodyErr      []bool           // by slot: the body could not be read; indexed without it
	byOrd        []int32          // the slots in catalog order
	slotOf       map[string]int32 // skill folder -> slot
	sparse       *sparse
	dense        *dense // nil without vectors
	phrases      *phrases
	embedder     QueryEmbedder
	stats        BuildStats
	scratch      sync.Pool
}

// Build indexes the input. It fails on an invalid Config or when ctx ends;
// an unreadable body or an unusable vector only degrades that skill.
func Build(ctx context.Context, in BuildInput) (*Index, error) {
	start := time.Now()
	cfg := in.Config.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match config: %w", err)
	}
	ix := &Index{cfg: cfg, generation: in.Generation, generationID: in.GenerationID, model: in.Model, embedder: in.Embedder}
	vectors := ix.takeSkills(in)
	given := BuildInput{Skills: in.Skills, Vectors: in.Vectors, UnitVectors: in.UnitVectors} // for handBack
	fields := sparseFields(cfg.Fields, cfg.BM25, anyParams(ix.docs))
	texts, err := ix.docTexts(ctx, fields, in.Body)
	if err != nil {
		return nil, err
	}
	// Nothing reads in after this point: a body reader that holds every
	// body (a cold build's) is garbage while the postings are built,
	// which is when the build holds the most.
	in = BuildInput{}
	if ix.sparse, err = newSparse(ctx, fields, texts, cfg.BM25); err != nil {
		return nil, err
	}

	ix.dense, ix.stats.BadVectors = newDense(vectors, len(ix.docs), given.UnitVectors)
	if ix.dense != nil {
		ix.stats.Vectors, ix.stats.Dimension = ix.dense.count, ix.dense.dim
	}
	ix.phrases = newPhrases(ix.docs, ix.sparse.analyzers[AnalyzerStem])
	ix.handBack(given)
	ix.stats.Duration = time.Since(start)
	return ix, nil
}

// handBack points each entry of in.Vectors that ix holds at ix's own row,
// when in.UnitVectors says the caller's vectors have the rows' bits (see
// BuildInput.UnitVectors); ix indexes in.Skills.
func (ix *Index) handBack(in BuildInput) {
	if !in.UnitVectors || ix.dense == nil {
		return
	}
	k := 0 // the place of s among the indexed skills, in catalog order
	for i, s := range in.Skills {
		if !indexable(s) {
			continue
		}
		if d := ix.byOrd[k]; i < len(in.Vectors) && ix.dense.has(d) {
			in.Vectors[i] = ix.dense.row(d)
		}
		k++
	}
}

// takeSkills gives each indexable skill of in a slot, in catalog order, and
// returns their vectors, aligned with the slots.
func (ix *Index) takeSkills(in BuildInput) [][]float32 {
	var vectors [][]float32
	for i, s := range in.Skills {
		if !indexable(s) {
			ix.stats.Excluded++
			continue
		}
		ix.docs = append(ix.docs, s)
		ix.hidden = append(ix.hidden, s.Frontmatter.Hidden)
		if s.Frontmatter.Hidden {
			ix.stats.Hidden++
		}
		var v []float32
		if i < len(in.Vectors) {
			v = in.Vectors[i]
		}
		vectors = append(vectors, v)
	}
	n := len(ix.docs)
	ix.stats.Skills = n
	ix.ord = make([]int32, n)
	ix.byOrd = make([]int32, n)
	ix.bodyErr = make([]bool, n)
	ix.slotOf = make(map[string]int32, n)
	for i, s := range ix.docs {
		ix.slotOf[s.Key()] = int32(i)
		ix.ord[i], ix.byOrd[i] = int32(i), int32(i)
	}
	return vectors
}

// docTexts returns every slot's field texts, reading the bodies through
// body.
func (ix *Index) docTexts(ctx context.Context, fields []*sparseField, body func(*skill.Skill) (string, error)) ([]sparseDoc, error) {
	texts := make([]sparseDoc, len(ix.docs))
	for i, s := range ix.docs {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		texts[i] = docText(s, fields, ix.bodyStart(body, s, int32(i)))
		if ix.bodyErr[i] {
			ix.stats.BodyErrors++
		}
	}
	return texts, nil
}

// bodyStart returns the start of s's body that its slot indexes, read
// through body: "" when bodies are not indexed, or when it cannot be read,
// which marks the slot.
func (ix *Index) bodyStart(body func(*skill.Skill) (string, error), s *skill.Skill, slot int32) string {
	if body == nil || !ix.bodyIndexed() {
		return ""
	}
	b, err := body(s)
	if err != nil {
		ix.bodyErr[slot] = true
		return ""
	}
	return skill.BodyStart(b, ix.cfg.Fields.BodyChars)
}

// indexable reports whether a skill is indexed: disabled skills and skills
// with disable-model-invocation are left out.
func indexable(s *skill.Skill) bool {
	return s != nil && s.Enabled() && !s.Frontmatter.DisableModelInvocation
}

// bodyIndexed reports whether the configuration indexes bodies.
func (ix *Index) bodyIndexed() bool {
	return ix.cfg.Fields.BodyChars > 0 && ix.cfg.Fields.Body.Weight > 0
}

// Field names.
const (
	fieldName        = "name"
	fieldDescription = "description"
	fieldTags        = "tags"
	fieldTriggers    = "triggers"
	fieldBody        = "body"
	fieldParams      = "params"
)

// sparseFields lists the fields with a positive weight; the parameters
// field only when params is set (the index holds a tool with parameters).
func sparseFields(c Fields, bm BM25, params bool) []*sparseField {
	var out []*sparseField
	add := func(name string, f Field) {
		if f.Weight > 0 {
			b := bm.B
			if f.B != nil {
				b = *f.B
			}
			out = append(out, &sparseField{name: name, weight: f.Weight, b: b, analyzer: f.Analyzer})
		}
	}
	add(fieldName, c.Name)
	add(fieldDescription, c.Description)
	add(fieldTags, c.Tags)
	add(fieldTriggers, c.Triggers)
	if c.BodyChars > 0 {
		add(fieldBody, c.Body)
	}
	if params {
		add(fieldParams, c.Params)
	}
	return out
}

// docText returns a skill's text for each field, normalised for analysis.
func docText(s *skill.Skill, fields []*sparseField, body string) sparseDoc {
	d := make(sparseDoc, len(fields))
	for i, f := range fields {
		var t string
		switch f.name {
		case fieldName:
			t = s.MatchName()
		case fieldDescription:
			t = s.SearchDescription()
		case fieldTags:
			t = s.SearchTags()
		case fieldTriggers:
			t = s.SearchTriggers()
		case fieldBody:
			t = body
		case fieldParams:
			t = s.ParamText()
		}
		d[i] = normalizeText(t)
	}
	return d
}

// anyParams reports whether one of skills is a tool with parameters or
// results: the parameters field is indexed only then.
func anyParams(skills []*skill.Skill) bool {
	for _, s := range skills {
		if s != nil && s.IsTool() && s.ParamText() != "" {
			return true
		}
	}
	return false
}

// Len returns the number of indexed skills.
func (ix *Index) Len() int { return len(ix.byOrd) }

// Stats describes how the index was built.
func (ix *Index) Stats() BuildStats { return ix.stats }

// Config returns the configuration in effect, defaults filled.
func (ix *Index) Config() Config { return ix.cfg }

// Generation returns the catalog generation the index was built from.
func (ix *Index) Generation() uint64 { return ix.generation }

// DenseAvailable reports whether the index has vectors and an embedder, so
// hybrid and dense requests can use embeddings.
func (ix *Index) DenseAvailable() bool { return ix.dense != nil && ix.embedder != nil }

// Skills returns the indexed skills in catalog order.
func (ix *Index) Skills() []*skill.Skill {
	out := make([]*skill.Skill, len(ix.byOrd))
	for i, d := range ix.byOrd {
		out[i] = ix.docs[d]
	}
	return out
}

// WithConfig returns an Index over the same indexed data with other
// query-time settings: field weights, BM25 parameters, fusion, abstention,
// triggers and request limits. It fails when cfg changes what is indexed
// (which fields have a weight, their analyzers, the body length): build a
// new Index then. The receiver is not changed.
func (ix *Index) WithConfig(cfg Config) (*Index, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match config: %w", err)
	}
	fields := sparseFields(cfg.Fields, cfg.BM25, ix.sparse.hasField(fieldParams) || (cfg.Fields.Params.Weight > 0 && anyParams(ix.docs)))
	if len(fields) != len(ix.sparse.fields) {
		return nil, errors.New("match config: the set of indexed fields changed; rebuild the index")
	}
	for i, f := range fields {
		old := ix.sparse.fields[i]
		if f.name != old.name || f.analyzer != old.analyzer {
			return nil, fmt.Errorf("match config: field %s changed analyzer or presence; rebuild the index", f.name)
		}
		f.lens, f.lenSum, f.lenDocs, f.avgLen = old.lens, old.lenSum, old.lenDocs, old.avgLen
		f.prepare()
	}
	if cfg.Fields.BodyChars != ix.cfg.Fields.BodyChars && ix.sparse.hasField(fieldBody) {
		return nil, errors.New("match config: fields.body_chars changed; rebuild the index")
	}
	sp := *ix.sparse
	sp.fields = fields
	sp.k1, sp.sum = cfg.BM25.K1, cfg.BM25.Scoring == ScoringSum
	return &Index{
		cfg: cfg, generation: ix.generation, generationID: ix.generationID, model: ix.model, docs: ix.docs, hidden: ix.hidden,
		ord: ix.ord, bodyErr: ix.bodyErr, byOrd: ix.byOrd, slotOf: ix.slotOf,
		sparse: &sp, dense: ix.dense, phrases: ix.phrases, embedder: ix.embedder, stats: ix.stats,
	}, nil
}

// CanUpdate reports whether Update can update the index to cfg: cfg indexes
// the same fields with the same analyzers and body length.
func (ix *Index) CanUpdate(cfg Config) bool {
	return ix.sameIndexing(cfg.withDefaults(), ix.sparse.hasField(fieldParams))
}

// EachVector calls f with every indexed skill that has a usable vector, and
// the unit vector the index holds for it, in catalog order. The vector is
// the index's own memory: f must not change it. Passed back to Build or
// Update with BuildInput.UnitVectors, it is kept as it is.
func (ix *Index) EachVector(f func(*skill.Skill, []float32)) {
	if ix.dense == nil {
		return
	}
	for _, d := range ix.byOrd {
		if ix.dense.has(d) {
			f(ix.docs[d], ix.dense.row(d))
		}
	}
}

// Model returns the embedding model named in BuildInput.Model.
func (ix *Index) Model() string { return ix.model }
