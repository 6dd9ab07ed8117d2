package embed

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/knights-analytics/hugot/backends"

	"github.com/mcpsag/router/internal/encoder"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// This file wires the native encoder (internal/encoder) into Model: an
// encoder graph that onnxgraph.ReadEncoder recognises runs there, and
// hugot's runtime is built only when verification asks for it, as for a
// static graph.

// useEncoder turns on native evaluation of the encoder graph e when the
// tokenizer's ids index its vocabulary, choosing the output and pooling as
// build would, and native tokenization as useNative does. It reports
// whether the model is evaluated natively.
func (m *Model) useEncoder(e *onnxgraph.Encoder, wp *wordPiece) (bool, error) {
	c := e.Config
	if m.info.TokenizerVocab > c.VocabSize {
		return false, nil // the runtime path reports the mismatch when it runs
	}
	outs := []backends.InputOutputInfo{{Name: onnxgraph.LastHiddenState, Dimensions: backends.Shape{-1, -1, int64(c.Hidden)}}}
	out, pooling, err := pickOutput(outs, m.cfg.OutputName, m.cfg.Pooling)
	if err != nil {
		return false, nil // build reports it
	}
	enc, err := encoder.New(e)
	if err != nil {
		return false, err
	}
	m.setOutput(outs, out, pooling)
	m.enc = enc
	m.info.Native = true
	m.info.Evaluator = "encoder-" + enc.Kernels()
	if m.cfg.MaxTokens > c.MaxPositions {
		m.cfg.MaxTokens = c.MaxPositions
		m.cfg.SequenceBuckets = normBuckets(m.cfg.SequenceBuckets, m.cfg.MaxTokens)
		m.maxTextBytes = 16 * m.cfg.MaxTokens
	}
	if wp != nil && wp.maxID() < c.VocabSize {
		// The model was trained on the tokens of Hugging Face's tokenizers
		// library: every text goes through its BERT normalizer natively,
		// accents and all (see encodeUnicode).
		m.wp, m.wpUnicode = wp, true
		m.info.NativeTokenizer = true
	}
	return true, nil
}

// workers returns the goroutines one native encoder run uses.
func (m *Model) workers() int {
	if m.cfg.Workers > 0 {
		return m.cfg.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// runEncoder runs one batch through the native encoder and pools it, with
// the concurrency bound and the timeout of a runtime run. A run is not
// interrupted: one that took longer than the timeout is reported as
// ErrTimeout when it ends.
func (m *Model) runEncoder(ctx context.Context, batch []tokenized, limit time.Duration) ([][]float32, error) {
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-m.sem }()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	seqs := make([]encoder.Sequence, len(batch))
	for i, in := range batch {
		seqs[i] = encoder.Sequence{IDs: in.ids, TypeIDs: in.typeIDs, Mask: in.mask}
	}
	pooling := encoder.Mean
	if m.cfg.Pooling == PoolingCLS {
		pooling = encoder.CLS
	}
	start := time.Now()
	vecs, err := m.enc.Pool(seqs, pooling, m.workers())
	if err != nil {
		return nil, withReason(ReasonEmbedError, fmt.Errorf("encoder: %w", err))
	}
	if d := time.Since(start); d > limit {
		return nil, fmt.Errorf("embed %d texts: %w after %v", len(batch), ErrTimeout, d.Round(time.Microsecond))
	}
	return vecs, nil
}
