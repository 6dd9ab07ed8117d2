package embed

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// Pooling selects how token vectors become one text vector.
type Pooling string

const (
	// PoolingAuto picks from the model: a 2-D sentence_embedding output as
	// is, else the mean (or CLS, if 1_Pooling/config.json says so) of
	// last_hidden_state, else a 2-D pooler_output, else the first output.
	PoolingAuto Pooling = ""
	// PoolingMean averages the token vectors where attention_mask is 1.
	PoolingMean Pooling = "mean"
	// PoolingCLS takes the first token's vector (bge models).
	PoolingCLS Pooling = "cls"
	// PoolingOutput takes a 2-D output that is already one vector per text
	// (sentence_embedding, pooler_output).
	PoolingOutput Pooling = "pooled"
)

// Package defaults, used when neither Config nor the model folder says.
const (
	DefaultMaxTokens      = 256
	DefaultBatchSize      = 32
	DefaultMatchThreshold = 0.5
	DefaultTimeout        = 10 * time.Second
	DefaultQueryCacheSize = 1024
)

// Config configures embedding. A zero field means: take the model folder's
// default from mcpsag-model.json if it has one, else the package default.
// Model.Config reports the values in effect.
type Config struct {
	// Dir is the model folder (Hugging Face layout). Required.
	Dir string
	// Name overrides the model name reported in Identity.
	Name string
	// QueryPrefix and DocumentPrefix are put before query and document
	// texts, for models trained with instructions ("query: ", "passage: ").
	// An empty value means the manifest's value, or none.
	QueryPrefix    string
	DocumentPrefix string
	// MaxTokens caps the tokens per text, special tokens included; longer
	// texts are truncated. Capped by config.json's max_position_embeddings.
	MaxTokens int
	// BatchSize is the most texts per model run.
	BatchSize int
	// MatchThreshold is the cosine above which a skill counts as a semantic
	// match. It is not used here; it travels with the model because cosine
	// scales differ between models.
	MatchThreshold float64
	// Pooling and OutputName select the model output and how it is pooled;
	// see Pooling.
	Pooling    Pooling
	OutputName string
	// Dimension is the vector length the caller expects; 0 accepts any.
	// A model with another dimension fails to load.
	Dimension int
	// Timeout bounds one model run (one batch) of up to 2,048 tokens of
	// queries; a batch of more tokens gets one Timeout per 2,048, and a
	// batch of documents (skill texts, embedded in the background) eight
	// times as long. A run that takes longer puts a Manager in degraded
	// state.
	Timeout time.Duration
	// QueryCacheSize is the number of query vectors a Manager keeps in its
	// LRU cache; negative disables the cache.
	QueryCacheSize int
	// BodyChars is how much of a skill's body its embedded text
	// (skill.Skill.DocumentText) appends to its name and description; 0
	// means the manifest's body_chars (a model fine-tuned on such texts
	// sets it), negative means none.
	BodyChars int
	// SequenceBuckets and BatchBuckets bound the input shapes: hugot's Go
	// backend compiles a graph for each new (batch, sequence) shape, so
	// inputs are padded up to the next bucket, and at most
	// len(BatchBuckets)*len(SequenceBuckets) graphs are ever compiled. Open
	// compiles the batch-1 shapes (queries); the others compile on first
	// use. Empty means powers of two from 16 up to MaxTokens, and 1 then
	// powers of two from 8 up to BatchSize; MaxTokens and BatchSize are
	// always the last buckets.
	SequenceBuckets []int
	BatchBuckets    []int
	// Concurrency is the most model runs in flight per Model; 0 means
	// GOMAXPROCS. hugot's pipeline and GoMLX's executor are safe for
	// concurrent use, so no lock is needed; runs are CPU-bound, so more runs
	// than cores add memory and tail latency, not throughput (see
	// BenchmarkConcurrency). Tokenizing is not bounded.
	Concurrency int
	// Workers is the most goroutines one run of a natively evaluated
	// encoder graph uses; 0 means GOMAXPROCS. It does not change the
	// vectors.
	Workers int
}

// ManifestFile is the optional file in a model folder that carries the
// model's defaults.
const ManifestFile = "mcpsag-model.json"

// Manifest is the content of mcpsag-model.json, a JSON object whose fields
// are all optional:
//
//	{
//	  "name": "mcpsag-static-v1",        // model name shown in Identity
//	  "query_prefix": "query: ",         // put before queries
//	  "document_prefix": "passage: ",    // put before skill texts
//	  "max_tokens": 128,                 // tokens per text, specials included
//	  "match_threshold": 0.45,           // cosine for a semantic match
//	  "body_chars": 400,                 // characters of a skill's body embedded after its description
//	  "pooling": "mean",                 // "mean", "cls" or "pooled"
//	  "output_name": "last_hidden_state",// model output to use
//	  "dimension": 256                   // expected vector length, checked at load
//	}
//
// Explicit Config values override the manifest. Unknown keys are ignored
// (Verify lists them as warnings), so newer manifests still load.
type Manifest struct {
	Name           string  `json:"name,omitempty"`
	QueryPrefix    string  `json:"query_prefix,omitempty"`
	DocumentPrefix string  `json:"document_prefix,omitempty"`
	MaxTokens      int     `json:"max_tokens,omitempty"`
	MatchThreshold float64 `json:"match_threshold,omitempty"`
	BodyChars      int     `json:"body_chars,omitempty"`
	Pooling        Pooling `json:"pooling,omitempty"`
	OutputName     string  `json:"output_name,omitempty"`
	Dimension      int     `json:"dimension,omitempty"`
}

// ReadManifest reads dir's mcpsag-model.json. It returns found == false and
// no error when the file does not exist, and the keys it did not recognise.
func ReadManifest(dir string) (m Manifest, unknown []string, found bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, nil, false, nil
	}
	if err != nil {
		return Manifest{}, nil, false, err
	}
	m, unknown, err = parseManifest(b)
	return m, unknown, true, err
}

// manifestKeys returns the JSON keys of Manifest's fields, the keys a
// manifest may hold.
func manifestKeys() []string {
	t := reflect.TypeFor[Manifest]()
	keys := make([]string, 0, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	return keys
}

func parseManifest(b []byte) (m Manifest, unknown []string, err error) {
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, nil, fmt.Errorf("parse %s: %w", ManifestFile, err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err == nil {
		known := manifestKeys()
		for k := range keys {
			if !slices.Contains(known, k) {
				unknown = append(unknown, k)
			}
		}
		slices.Sort(unknown)
	}
	return m, unknown, m.validate()
}

func (m Manifest) validate() error {
	switch {
	case m.MaxTokens < 0:
		return fmt.Errorf("%s: max_tokens %d is negative", ManifestFile, m.MaxTokens)
	case m.Dimension < 0:
		return fmt.Errorf("%s: dimension %d is negative", ManifestFile, m.Dimension)
	case m.MatchThreshold < -1 || m.MatchThreshold > 1:
		return fmt.Errorf("%s: match_threshold %v is outside [-1, 1]", ManifestFile, m.MatchThreshold)
	}
	if err := m.Pooling.validate(); err != nil {
		return fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return nil
}

func (p Pooling) validate() error {
	switch p {
	case PoolingAuto, PoolingMean, PoolingCLS, PoolingOutput:
		return nil
	}
	return fmt.Errorf("unknown pooling %q (want mean, cls or pooled)", string(p))
}

// hfConfig holds what this package reads from a model folder's config.json
// and 1_Pooling/config.json.
type hfConfig struct {
	maxPositions int     // max_position_embeddings, 0 if unknown
	pooling      Pooling // from sentence-transformers' pooling config
}

func readHFConfig(dir string) (hfConfig, error) {
	var c hfConfig
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	switch {
	case err == nil:
		var v struct {
			MaxPositions int `json:"max_position_embeddings"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return c, fmt.Errorf("parse config.json: %w", err)
		}
		c.maxPositions = v.MaxPositions
	case !errors.Is(err, fs.ErrNotExist):
		return c, err
	}
	b, err = os.ReadFile(filepath.Join(dir, "1_Pooling", "config.json"))
	switch {
	case err == nil:
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			return c, fmt.Errorf("parse 1_Pooling/config.json: %w", err)
		}
		var modes []string
		for k, x := range v {
			if on, ok := x.(bool); ok && on && len(k) > len("pooling_mode_") && k[:len("pooling_mode_")] == "pooling_mode_" {
				modes = append(modes, k)
			}
		}
		switch {
		case len(modes) == 1 && modes[0] == "pooling_mode_mean_tokens":
			c.pooling = PoolingMean
		case len(modes) == 1 && modes[0] == "pooling_mode_cls_token":
			c.pooling = PoolingCLS
		default:
			return c, fmt.Errorf("1_Pooling/config.json: unsupported pooling modes %v (want exactly mean_tokens or cls_token)", modes)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return c, err
	}
	return c, nil
}

// resolve fills cfg's zero fields from the manifest, the model's own
// config files and the package defaults, and checks the result.
func resolve(cfg Config, man Manifest, hf hfConfig) (Config, error) {
	cfg.Name = cmp.Or(cfg.Name, man.Name, filepath.Base(cfg.Dir))
	cfg.QueryPrefix = cmp.Or(cfg.QueryPrefix, man.QueryPrefix)
	cfg.DocumentPrefix = cmp.Or(cfg.DocumentPrefix, man.DocumentPrefix)
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, man.MaxTokens, DefaultMaxTokens)
	if hf.maxPositions > 0 && cfg.MaxTokens > hf.maxPositions {
		cfg.MaxTokens = hf.maxPositions
	}
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.MatchThreshold = cmp.Or(cfg.MatchThreshold, man.MatchThreshold, DefaultMatchThreshold)
	cfg.Pooling = cmp.Or(cfg.Pooling, man.Pooling, hf.pooling)
	cfg.OutputName = cmp.Or(cfg.OutputName, man.OutputName)
	cfg.Dimension = cmp.Or(cfg.Dimension, man.Dimension)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.QueryCacheSize = cmp.Or(cfg.QueryCacheSize, DefaultQueryCacheSize)
	cfg.Concurrency = cmp.Or(cfg.Concurrency, runtime.GOMAXPROCS(0))
	switch {
	case cfg.BodyChars == 0:
		cfg.BodyChars = man.BodyChars
	case cfg.BodyChars < 0:
		cfg.BodyChars = 0
	}
	if len(cfg.SequenceBuckets) == 0 {
		cfg.SequenceBuckets = defaultBuckets(16, cfg.MaxTokens)
	}
	if len(cfg.BatchBuckets) == 0 {
		cfg.BatchBuckets = defaultBuckets(8, cfg.BatchSize)
		cfg.BatchBuckets = append([]int{1}, cfg.BatchBuckets...)
	}
	cfg.SequenceBuckets = normBuckets(cfg.SequenceBuckets, cfg.MaxTokens)
	cfg.BatchBuckets = normBuckets(cfg.BatchBuckets, cfg.BatchSize)
	return cfg, cfg.validate()
}

func (c Config) validate() error {
	switch {
	case c.MaxTokens < 2:
		return fmt.Errorf("max tokens %d is below 2", c.MaxTokens)
	case c.BatchSize < 1:
		return fmt.Errorf("batch size %d is below 1", c.BatchSize)
	case c.Dimension < 0:
		return fmt.Errorf("dimension %d is negative", c.Dimension)
	case c.Timeout < 0:
		return fmt.Errorf("timeout %v is negative", c.Timeout)
	case c.Concurrency < 0:
		return fmt.Errorf("concurrency %d is negative", c.Concurrency)
	case c.Workers < 0:
		return fmt.Errorf("workers %d is negative", c.Workers)
	case c.BodyChars < 0:
		return fmt.Errorf("body chars %d is negative", c.BodyChars)
	case c.MatchThreshold < -1 || c.MatchThreshold > 1:
		return fmt.Errorf("match threshold %v is outside [-1, 1]", c.MatchThreshold)
	}
	if err := c.Pooling.validate(); err != nil {
		return err
	}
	for _, p := range []string{c.QueryPrefix, c.DocumentPrefix} {
		if !utf8.ValidString(p) || len(p) > 256 || containsControl(p) {
			return fmt.Errorf("prefix %q must be valid UTF-8 without control characters, at most 256 bytes", p)
		}
	}
	return nil
}

func containsControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// defaultBuckets returns powers of two from first up to below limit, then
// limit itself.
func defaultBuckets(first, limit int) []int {
	var b []int
	for n := first; n < limit; n *= 2 {
		b = append(b, n)
	}
	return append(b, limit)
}

// normBuckets sorts and deduplicates buckets, drops the ones above limit and
// makes limit the last one, so every input up to limit has a bucket.
func normBuckets(b []int, limit int) []int {
	out := make([]int, 0, len(b)+1)
	for _, n := range b {
		if n > 0 && n < limit {
			out = append(out, n)
		}
	}
	out = append(out, limit)
	slices.Sort(out)
	return slices.Compact(out)
}

// settingsHash returns Identity.Settings for a resolved config.
func settingsHash(c Config) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "query_prefix=%q\ndocument_prefix=%q\npooling=%q\noutput=%q\nmax_tokens=%d\n",
		c.QueryPrefix, c.DocumentPrefix, c.Pooling, c.OutputName, c.MaxTokens)
	return skill.Hash(b.Bytes())
}
