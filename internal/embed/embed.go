package embed

import (
	"context"
	"errors"
	"strconv"
)

// Kind says what a text is, which selects the prefix put before it (bge and
// e5 models expect different instructions for queries and documents).
type Kind int

const (
	// Query is a task or search text, embedded with Config.QueryPrefix.
	Query Kind = iota + 1
	// Document is a skill's text, embedded with Config.DocumentPrefix.
	Document
)

func (k Kind) String() string {
	switch k {
	case Query:
		return "query"
	case Document:
		return "document"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Identity identifies the vectors an embedder produces: two embedders with
// the same Fingerprint and Settings give the same vector for the same text.
type Identity struct {
	Name        string // model name, from mcpsag-model.json or the folder name
	Dimension   int    // vector length
	Fingerprint string // hex sha256 over model.onnx then tokenizer.json
	Path        string // absolute model folder
	// Settings is a hex sha256 over the settings that change vectors without
	// changing the files: prefixes, pooling, output name and max tokens.
	// EmbedDocuments mixes it into its cache keys.
	Settings string
}

// Embedder turns texts into vectors.
type Embedder interface {
	// Embed returns one L2-normalised vector per text, in order. A text that
	// is empty after sanitising gets the zero vector. It returns
	// ErrUnavailable when no model is usable, ErrTimeout when the model run
	// took longer than the configured timeout, ctx.Err() when ctx ends
	// first, and an error wrapping ErrInvalidKind for an unknown kind.
	Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error)
	// Identity returns the identity of the model that Embed uses now; the
	// zero Identity when there is none.
	Identity() Identity
}

// Errors returned by this package.
var (
	// ErrUnavailable means no usable model is loaded: the model folder is
	// missing or broken, or the model failed at run time. Callers fall back
	// to keyword-only matching.
	ErrUnavailable = errors.New("embedding model unavailable")
	// ErrTimeout means a model run took longer than Config.Timeout.
	ErrTimeout = errors.New("embedding timed out")
	// ErrClosed means the Model was closed.
	ErrClosed = errors.New("embedding model closed")
	// ErrInvalidKind means Embed was called with a Kind other than Query or
	// Document.
	ErrInvalidKind = errors.New("invalid embedding kind")
	// ErrModelChanged means the model was swapped while EmbedDocuments ran,
	// so its vectors were not stored; run it again.
	ErrModelChanged = errors.New("embedding model changed during the run")
)

// Reason says why embeddings are unavailable. Values are stable and low
// cardinality, for telemetry attributes.
type Reason string

// Reasons.
const (
	ReasonNotLoaded     Reason = "not_loaded"         // no load was attempted yet
	ReasonModelMissing  Reason = "model_missing"      // folder or required file absent
	ReasonUnreadable    Reason = "model_unreadable"   // a file could not be read
	ReasonModelInvalid  Reason = "model_invalid"      // corrupt ONNX, bad tokenizer, unusable outputs
	ReasonConfigInvalid Reason = "config_invalid"     // the settings are invalid
	ReasonDimension     Reason = "dimension_mismatch" // the model's dimension is not the configured one
	ReasonEmbedError    Reason = "embed_error"        // a model run failed
	ReasonEmbedTimeout  Reason = "embed_timeout"      // a model run took longer than Config.Timeout
)

// reasonError tags an error with the Reason it stands for.
type reasonError struct {
	reason Reason
	err    error
}

func (e *reasonError) Error() string { return e.err.Error() }
func (e *reasonError) Unwrap() error { return e.err }

func withReason(r Reason, err error) error { return &reasonError{reason: r, err: err} }

// ReasonOf returns the Reason an error from Open, Embed or Verify stands
// for; ReasonEmbedError when it carries none.
func ReasonOf(err error) Reason {
	var re *reasonError
	if errors.As(err, &re) {
		return re.reason
	}
	if errors.Is(err, ErrTimeout) {
		return ReasonEmbedTimeout
	}
	return ReasonEmbedError
}
