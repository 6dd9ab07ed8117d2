package match

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// QueryEmbedder embeds a task for dense matching; embed.Manager is one.
type QueryEmbedder interface {
	// EmbedQuery returns the task's vector. Any error (model unavailable,
	// timeout) makes the request keyword-only: Match answers from BM25
	// and sets MatchResult.Degraded.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
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
	// are ignored and counted in BuildStats.BadVectors.
	Vectors [][]float32
	// Body returns a skill's SKILL.md body. It is called only when the
	// body is indexed (Fields.BodyChars > 0 and Fields.Body.Weight > 0);
	// nil, or an error for one skill, indexes that skill without a body.
	Body func(*skill.Skill) (string, error)
	// Embedder embeds tasks; nil makes every request keyword-only.
	Embedder QueryEmbedder
	// Model names the embedding model that made Vectors; it selects the
	// calibrated classifier fitted with that model.
	Model string
	// Generation is the catalog generation, copied into results.
	Generation uint64
	Config     Config
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
type Index struct {
	cfg        Config
	generation uint64
	model      string
	docs       []*skill.Skill
	hidden     []bool
	sparse     *sparse
	dense      *dense // nil without vectors
	phrases    *phrases
	embedder   QueryEmbedder
	stats      BuildStats
	scratch    sync.Pool
}

// Build indexes the input. It fails on an invalid Config or when ctx ends;
// an unreadable body or an unusable vector only degrades that skill.
func Build(ctx context.Context, in BuildInput) (*Index, error) {
	start := time.Now()
	cfg := in.Config.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("match config: %w", err)
	}
	ix := &Index{cfg: cfg, generation: in.Generation, model: in.Model, embedder: in.Embedder}
	var vectors [][]float32
	for i, s := range in.Skills {
		if s == nil || !s.Enabled() || s.Frontmatter.DisableModelInvocation {
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

	hasParams := false
	for _, s := range ix.docs {
		if s.IsTool() && s.ParamText() != "" {
			hasParams = true
			break
		}
	}
	fields := sparseFields(cfg.Fields, cfg.BM25, hasParams)
	texts := make([]sparseDoc, n)
	withBody := cfg.Fields.BodyChars > 0 && cfg.Fields.Body.Weight > 0 && in.Body != nil
	for i, s := range ix.docs {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		body := ""
		if withBody {
			b, err := in.Body(s)
			if err != nil {
				ix.stats.BodyErrors++
			} else {
				body = skill.BodyStart(b, cfg.Fields.BodyChars)
			}
		}
		texts[i] = docText(s, fields, body)
	}
	var err error
	if ix.sparse, err = newSparse(ctx, fields, texts, cfg.BM25); err != nil {
		return nil, err
	}

	ix.dense, ix.stats.BadVectors = newDense(vectors, n)
	if ix.dense != nil {
		ix.stats.Vectors, ix.stats.Dimension = ix.dense.count, ix.dense.dim
	}

	stem := ix.sparse.analyzers[AnalyzerStem]
	df := map[string]int{}
	for _, s := range ix.docs {
		short := normalizeText(strings.Join([]string{s.MatchName(), description(s), strings.Join(s.Tags(), " "),
			strings.Join(s.Frontmatter.Triggers, " ")}, " "))
		seen := map[string]bool{}
		for _, t := range terms(stem, short) {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	ix.phrases = newPhrases(ix.docs, stem, df)
	ix.stats.Duration = time.Since(start)
	return ix, nil
}

// Field names in the bleve index.
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
			t = description(s)
		case fieldTags:
			t = strings.Join(s.Tags(), " ")
		case fieldTriggers:
			t = strings.Join(s.Frontmatter.Triggers, " . ")
		case fieldBody:
			t = body
		case fieldParams:
			t = s.ParamText()
		}
		d[i] = normalizeText(t)
	}
	return d
}

// description is the skill's description plus Claude Code's when_to_use
// field, which says the same kind of thing.
func description(s *skill.Skill) string {
	d := s.Frontmatter.Description
	if raw, ok := s.Frontmatter.Extra["when_to_use"]; ok {
		var w string
		if json.Unmarshal([]byte(raw), &w) == nil && w != "" {
			d += " " + w
		}
	}
	return d
}

// hasParams reports whether an indexed tool has parameters or results.
func (ix *Index) hasParams() bool {
	for _, s := range ix.docs {
		if s.IsTool() && s.ParamText() != "" {
			return true
		}
	}
	return false
}

// Len returns the number of indexed skills.
func (ix *Index) Len() int { return len(ix.docs) }

// Stats describes how the index was built.
func (ix *Index) Stats() BuildStats { return ix.stats }

// Config returns the configuration in effect, defaults filled.
func (ix *Index) Config() Config { return ix.cfg }

// Generation returns the catalog generation the index was built from.
func (ix *Index) Generation() uint64 { return ix.generation }

// DenseAvailable reports whether the index has vectors and an embedder, so
// hybrid and dense requests can use embeddings.
func (ix *Index) DenseAvailable() bool { return ix.dense != nil && ix.embedder != nil }

// Skills returns the indexed skills in index order.
func (ix *Index) Skills() []*skill.Skill { return ix.docs }

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
	fields := sparseFields(cfg.Fields, cfg.BM25, ix.sparse.hasField(fieldParams) || (cfg.Fields.Params.Weight > 0 && ix.hasParams()))
	if len(fields) != len(ix.sparse.fields) {
		return nil, errors.New("match config: the set of indexed fields changed; rebuild the index")
	}
	for i, f := range fields {
		old := ix.sparse.fields[i]
		if f.name != old.name || f.analyzer != old.analyzer {
			return nil, fmt.Errorf("match config: field %s changed analyzer or presence; rebuild the index", f.name)
		}
		f.lens, f.avgLen = old.lens, old.avgLen
	}
	if cfg.Fields.BodyChars != ix.cfg.Fields.BodyChars && ix.sparse.hasField(fieldBody) {
		return nil, errors.New("match config: fields.body_chars changed; rebuild the index")
	}
	sp := *ix.sparse
	sp.fields = fields
	sp.grouped = sp.groups() // the same groups, over the new weights
	sp.k1, sp.sum = cfg.BM25.K1, cfg.BM25.Scoring == ScoringSum
	return &Index{
		cfg: cfg, generation: ix.generation, model: ix.model, docs: ix.docs, hidden: ix.hidden,
		sparse: &sp, dense: ix.dense, phrases: ix.phrases, embedder: ix.embedder, stats: ix.stats,
	}, nil
}

// Model returns the embedding model named in BuildInput.Model.
func (ix *Index) Model() string { return ix.model }
