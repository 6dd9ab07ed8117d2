package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/knights-analytics/hugot/backends"
	"github.com/knights-analytics/hugot/pipelines"
	"github.com/sugarme/tokenizer"

	"github.com/mcpsag/router/internal/encoder"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// Model is one loaded embedding model, run by hugot's pure-Go backend. It is
// safe for concurrent use. Most callers use a Manager, which adds the query
// cache and the fallback rules; Model is the engine.
//
// Model builds the hugot model and FeatureExtractionPipeline itself rather
// than through hugot.NewPipeline, so that it reads each file once (the bytes
// it fingerprints are the bytes it runs), loads the ONNX file it chose, and
// pads on the right even when config.json names an eos_token_id (hugot
// left-pads input_ids but not attention_mask then). It also tokenizes
// itself: hugot's Go tokenizer path calls log.Fatal on tokenizer errors.
type Model struct {
	cfg   Config // resolved
	id    Identity
	files modelFiles

	hf hfConfig
	// onnxSum is the SHA-256 of the ONNX bytes loaded.
	onnxSum [32]byte

	tk *tokenizer.Tokenizer
	wp *wordPiece // native encoder for the texts it handles; nil for other tokenizers
	// wpUnicode has wp encode every text without an added token itself
	// (encodeUnicode), not only ASCII words.
	wpUnicode bool
	static    *onnxgraph.Static // native evaluation of a static embedding graph; nil for others
	enc       *encoder.Model    // native evaluation of an encoder graph; nil for others
	// The runtime: built by Open for a model it runs, by runtime on first
	// use for a graph evaluated natively.
	runtimeOnce sync.Once
	runtimeErr  error
	hm          *backends.Model
	pipe        *pipelines.FeatureExtractionPipeline
	outIndex    int

	maxTextBytes int
	sem          chan struct{} // bounds concurrent model runs
	inputMu      sync.Mutex    // serialises backends.CreateInputTensors

	info     LoadInfo
	computed atomic.Int64 // texts run through the model by Embed
	// tokenizeFallbacks counts texts the tokenizer failed on and that were
	// retried as ASCII.
	tokenizeFallbacks atomic.Int64
	shared            *atomic.Int64 // also counts them when set (by a Manager) before first use

	shapeMu sync.Mutex
	shapes  map[[2]int]bool // padded (batch, sequence) shapes run so far

	mu     sync.RWMutex // read-held by model runs, write-held by Close
	closed bool
}

// LoadInfo describes how a model load went.
type LoadInfo struct {
	LoadedAt time.Time
	// LoadDuration covers reading, parsing and building the model, before
	// warm-up.
	LoadDuration time.Duration
	// WarmupDuration is the time spent compiling the warmed input shapes.
	WarmupDuration time.Duration
	// WarmShapes is the number of shapes compiled during warm-up.
	WarmShapes int
	// QueryLatency is the median time to embed one short query, measured
	// after warm-up.
	QueryLatency time.Duration
	// TokenizerVocab is the tokenizer's vocabulary size, added tokens
	// included.
	TokenizerVocab int
	// Native is set when the model is evaluated natively (no runtime, no
	// shapes to compile), with NativeTokenizer when its tokenizer is
	// encoded natively too (ASCII text for a static graph, all text
	// without an added token for an encoder graph).
	Native, NativeTokenizer bool
	// Evaluator names what evaluates the model: "static" for a static
	// embedding graph, "encoder-avx512", "encoder-avx2" or "encoder-go"
	// for an encoder graph (with the kernels it runs), "runtime" for
	// hugot's ONNX runtime.
	Evaluator string
	// Outputs lists the model's output names; Output is the one used.
	Outputs []string
	Output  string
}

// Identity returns the model's identity.
func (m *Model) Identity() Identity { return m.id }

// Config returns the configuration in effect, defaults and model-folder
// values filled in, and Pooling and OutputName as chosen.
func (m *Model) Config() Config { return m.cfg }

// LoadInfo returns load timings and details.
func (m *Model) LoadInfo() LoadInfo { return m.info }

// Computed returns the number of texts Embed has run through the model.
func (m *Model) Computed() int64 { return m.computed.Load() }

// TokenizeFallbacks returns the number of texts the tokenizer failed on,
// which were then embedded from their ASCII characters only.
func (m *Model) TokenizeFallbacks() int64 { return m.tokenizeFallbacks.Load() }

// Shapes returns the number of distinct padded input shapes run so far,
// which is the number of graphs compiled.
func (m *Model) Shapes() int {
	m.shapeMu.Lock()
	defer m.shapeMu.Unlock()
	return len(m.shapes)
}

// Close releases the model after the runs in flight finish. Embed returns
// ErrClosed afterwards.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.runtimeOnce.Do(func() {}) // no runtime is built once closed
	if m.hm != nil {
		destroy(m.hm)
	}
	return nil
}

// Embed returns one L2-normalised vector per text; see Embedder.
func (m *Model) Embed(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	vecs, n, err := m.embed(ctx, texts, kind)
	m.computed.Add(int64(n))
	if m.shared != nil {
		m.shared.Add(int64(n))
	}
	return vecs, err
}

// EmbedRuntime is Embed through hugot's ONNX runtime even when the model
// is evaluated natively, building the runtime on first use: verification
// compares the two. It does not count the texts in Computed.
func (m *Model) EmbedRuntime(ctx context.Context, texts []string, kind Kind) ([][]float32, error) {
	vecs, _, err := m.embedWith(ctx, texts, kind, m.runTimed)
	return vecs, err
}

// embed is Embed without the counter; it also returns the number of texts
// run through the model.
func (m *Model) embed(ctx context.Context, texts []string, kind Kind) ([][]float32, int, error) {
	return m.embedWith(ctx, texts, kind, m.runBatch)
}

// embedWith is embed with the batches run by run.
func (m *Model) embedWith(ctx context.Context, texts []string, kind Kind, run func(context.Context, []tokenized, time.Duration) ([][]float32, error)) ([][]float32, int, error) {
	var prefix string
	switch kind {
	case Query:
		prefix = m.cfg.QueryPrefix
	case Document:
		prefix = m.cfg.DocumentPrefix
	default:
		return nil, 0, fmt.Errorf("embed: %w: %v", ErrInvalidKind, kind)
	}
	computed := 0
	out := make([][]float32, len(texts))
	var batch []tokenized
	var slots []int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		vecs, err := run(ctx, batch, runTimeout(m.cfg.Timeout, batch, kind))
		if err != nil {
			return err
		}
		computed += len(batch)
		for i, v := range vecs {
			if err := normalize(v); err != nil {
				return withReason(ReasonEmbedError, fmt.Errorf("embed: %w", err))
			}
			out[slots[i]] = v
		}
		batch, slots = batch[:0], slots[:0]
		return nil
	}
	ins, err := m.tokenizeAll(prefix, texts)
	if err != nil {
		return nil, 0, withReason(ReasonEmbedError, fmt.Errorf("embed: tokenize: %w", err))
	}
	for i, in := range ins {
		if len(in.ids) == 0 { // empty after sanitising
			out[i] = make([]float32, m.id.Dimension)
			continue
		}
		batch = append(batch, in)
		slots = append(slots, i)
		if len(batch) == m.cfg.BatchSize {
			if err := flush(); err != nil {
				return nil, computed, err
			}
		}
	}
	if err := flush(); err != nil {
		return nil, computed, err
	}
	return out, computed, nil
}

// tokenized is one encoded text.
type tokenized struct {
	ids, typeIDs, mask []int
}

// tokenizeAll sanitises and encodes texts, on up to GOMAXPROCS goroutines
// when there are several: the Go tokenizer, not the model, bounds the
// throughput of a static embedding model. A text that is empty after
// sanitising gets no ids.
func (m *Model) tokenizeAll(prefix string, texts []string) ([]tokenized, error) {
	ins := make([]tokenized, len(texts))
	errs := make([]error, len(texts))
	one := func(i int) {
		s := Sanitize(texts[i], m.maxTextBytes)
		if s == "" {
			return
		}
		ins[i], errs[i] = m.tokenize(prefix + s)
		if errs[i] != nil {
			// The Go tokenizer panics on a few valid texts (a lowercasing
			// normaliser meets U+023A or U+023E, whose lowercase is longer in
			// UTF-8). One odd text must not fail its batch, nor degrade a
			// Manager: retry it as ASCII, which keeps its ASCII words.
			m.tokenizeFallbacks.Add(1)
			ins[i], errs[i] = m.tokenize(prefix + Sanitize(asciiOnly(s), 0))
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(texts)/4)
	if workers < 2 {
		for i := range texts {
			one(i)
		}
		return ins, errors.Join(errs...)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(texts); i = int(next.Add(1) - 1) {
				one(i)
			}
		})
	}
	wg.Wait()
	return ins, errors.Join(errs...)
}

// asciiOnly replaces every non-ASCII rune with a space.
func asciiOnly(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf {
			return ' '
		}
		return r
	}, s)
}

// wordPieces returns the ids the general tokenizer gives one word, without
// [CLS] and [SEP]; ok is false when it fails or does not frame the word
// with them.
func (m *Model) wordPieces(word string) (ids []int, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
	}()
	enc, err := m.tk.EncodeSingle(word, true)
	if err != nil || len(enc.Ids) < 2 || enc.Ids[0] != m.wp.cls || enc.Ids[len(enc.Ids)-1] != m.wp.sep {
		return nil, false
	}
	return enc.Ids[1 : len(enc.Ids)-1], true
}

// nativeIDs returns the ids of text from the native tokenizer; ok is false
// when the text is not for it.
func (m *Model) nativeIDs(text string) (ids []int, ok bool) {
	if m.wpUnicode {
		return m.wp.encodeUnicode(text, m.cfg.MaxTokens)
	}
	return m.wp.encode(text, m.cfg.MaxTokens, m.wordPieces)
}

// tokenize encodes one sanitised text, turning tokenizer panics into errors.
func (m *Model) tokenize(text string) (in tokenized, err error) {
	if m.wp != nil {
		if ids, ok := m.nativeIDs(text); ok {
			n := min(len(ids), m.cfg.MaxTokens)
			in = tokenized{ids: ids[:n], typeIDs: make([]int, n), mask: make([]int, n)}
			for i := range in.mask {
				in.mask[i] = 1
			}
			return in, nil
		}
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	enc, err := m.tk.EncodeSingle(text, true)
	if err != nil {
		return in, err
	}
	n := min(len(enc.Ids), m.cfg.MaxTokens)
	if len(enc.TypeIds) < n || len(enc.AttentionMask) < n {
		return in, fmt.Errorf("tokenizer returned %d ids, %d type ids, %d mask values", len(enc.Ids), len(enc.TypeIds), len(enc.AttentionMask))
	}
	return tokenized{ids: enc.Ids[:n], typeIDs: enc.TypeIds[:n], mask: enc.AttentionMask[:n]}, nil
}

// runBatch runs one batch: natively for a static embedding graph or an
// encoder graph, else through the model runtime.
func (m *Model) runBatch(ctx context.Context, batch []tokenized, limit time.Duration) ([][]float32, error) {
	if m.enc != nil {
		return m.runEncoder(ctx, batch, limit)
	}
	if m.static == nil {
		return m.runTimed(ctx, batch, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	start := time.Now()
	vecs := m.runStatic(batch)
	if d := time.Since(start); d > limit {
		return nil, fmt.Errorf("embed %d texts: %w after %v", len(batch), ErrTimeout, d.Round(time.Microsecond))
	}
	return vecs, nil
}

// runStatic pools the static graph's token rows as pool does with the
// runtime's output: the same values, added in the same order.
func (m *Model) runStatic(batch []tokenized) [][]float32 {
	vecs := make([][]float32, len(batch))
	for i, in := range batch {
		v := make([]float32, m.id.Dimension)
		if m.cfg.Pooling == PoolingCLS {
			if in.mask[0] != 0 {
				m.static.AddRow(v, in.ids[0])
			}
		} else {
			var n float32
			for j, on := range in.mask {
				if on == 0 {
					continue
				}
				m.static.AddRow(v, in.ids[j])
				n++
			}
			for k := range v {
				v[k] /= max(n, 1)
			}
		}
		vecs[i] = v
	}
	return vecs
}

// acquire takes one of the model's concurrency slots, waiting for one
// unless ctx ends first. The caller gives the slot back with <-m.sem.
func (m *Model) acquire(ctx context.Context) error {
	// A select with a free slot and a closed Done picks either at random;
	// a call whose context already ended must never start a run.
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// runTimed runs one batch with the configured timeout. On timeout the run
// goes on in the background, holding its concurrency slot and the read lock
// that keeps Close waiting, and runTimed returns ErrTimeout.
func (m *Model) runTimed(ctx context.Context, batch []tokenized, timeout time.Duration) ([][]float32, error) {
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		<-m.sem
		return nil, ErrClosed
	}
	type result struct {
		vecs [][]float32
		err  error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		defer func() { <-m.sem }()
		defer m.mu.RUnlock()
		vecs, err := m.run(batch)
		done <- result{vecs, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := func() error {
		return fmt.Errorf("embed %d texts: %w after %v", len(batch), ErrTimeout, timeout)
	}
	select {
	case r := <-done:
		// A run that took longer than the timeout is a timeout, whichever
		// case the select saw first.
		if r.err == nil && time.Since(start) > timeout {
			return nil, timedOut()
		}
		return r.vecs, r.err
	case <-timer.C:
		return nil, timedOut()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// timeoutTokens is how many tokens one Config.Timeout is for: a batch of
// more gets one Timeout per timeoutTokens (a batch of long skill texts is
// many times the work of one task).
const timeoutTokens = 2048

// documentTimeouts is how many Timeouts a run of documents gets per
// timeoutTokens: skill texts are embedded in the background, where a busy
// machine slows a run without anything being wrong with the model.
const documentTimeouts = 8

// runTimeout is the time a run of batch, texts of kind, may take.
func runTimeout(perRun time.Duration, batch []tokenized, kind Kind) time.Duration {
	tokens := 0
	for _, in := range batch {
		tokens += len(in.ids)
	}
	n := max(1, (tokens+timeoutTokens-1)/timeoutTokens)
	if kind == Document {
		n *= documentTimeouts
	}
	return perRun * time.Duration(n)
}

// run runs one batch through the model and pools the output. It does not
// normalise.
func (m *Model) run(batch []tokenized) (vecs [][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = withReason(ReasonEmbedError, fmt.Errorf("model run: panic: %v", r))
		}
	}()
	hm, pipe, err := m.runtime()
	if err != nil {
		return nil, err
	}
	b := backends.NewBatch(len(batch))
	b.Input = make([]backends.TokenizedInput, len(batch))
	for i, in := range batch {
		b.Input[i] = backends.TokenizedInput{
			TokenIDs:          toUint32(in.ids),
			TypeIDs:           toUint32(in.typeIDs),
			AttentionMask:     toUint32(in.mask),
			MaxAttentionIndex: len(in.ids) - 1,
		}
		b.MaxSequenceLength = max(b.MaxSequenceLength, len(in.ids))
	}
	defer func() { err = errors.Join(err, b.Destroy()) }()
	// hugot writes Model.FixedCacheSize on every CreateInputTensors call:
	// harmless, but a data race between concurrent runs, so serialise this
	// cheap step and run the model itself concurrently.
	m.inputMu.Lock()
	err = backends.CreateInputTensors(b, hm, "GO")
	m.inputMu.Unlock()
	if err != nil {
		return nil, withReason(ReasonEmbedError, fmt.Errorf("model input: %w", err))
	}
	m.noteShape(len(batch), b.MaxSequenceLength)
	if err := pipe.Forward(b); err != nil {
		return nil, withReason(ReasonEmbedError, fmt.Errorf("model run: %w", err))
	}
	return m.pool(b, batch)
}

func (m *Model) noteShape(batch, seq int) {
	shape := [2]int{bucket(batch, m.cfg.BatchBuckets), bucket(seq, m.cfg.SequenceBuckets)}
	m.shapeMu.Lock()
	m.shapes[shape] = true
	m.shapeMu.Unlock()
}

func bucket(n int, buckets []int) int {
	for _, b := range buckets {
		if n <= b {
			return b
		}
	}
	return n
}

// pool turns the model output into one vector per text.
func (m *Model) pool(b *backends.PipelineBatch, batch []tokenized) ([][]float32, error) {
	dim := m.id.Dimension
	vecs := make([][]float32, len(batch))
	switch out := b.OutputValues[m.outIndex].(type) {
	case [][]float32: // already pooled
		if len(out) < len(batch) {
			return nil, fmt.Errorf("model returned %d vectors for %d texts", len(out), len(batch))
		}
		for i := range batch {
			if len(out[i]) != dim {
				return nil, fmt.Errorf("model returned a %d-dimensional vector, want %d", len(out[i]), dim)
			}
			vecs[i] = slices.Clone(out[i])
		}
	case [][][]float32: // token vectors, padded positions already dropped
		if len(out) < len(batch) {
			return nil, fmt.Errorf("model returned %d sequences for %d texts", len(out), len(batch))
		}
		for i, in := range batch {
			tokens := out[i]
			if len(tokens) < len(in.ids) {
				return nil, fmt.Errorf("model returned %d token vectors for %d tokens", len(tokens), len(in.ids))
			}
			v := make([]float32, dim)
			if m.cfg.Pooling == PoolingCLS {
				copy(v, tokens[0])
			} else {
				var n float32
				for j, on := range in.mask {
					if on == 0 {
						continue
					}
					for k, x := range tokens[j] {
						v[k] += x
					}
					n++
				}
				for k := range v {
					v[k] /= max(n, 1)
				}
			}
			vecs[i] = v
		}
	default:
		return nil, fmt.Errorf("model output %T is not supported", out)
	}
	return vecs, nil
}

// normalize scales v to unit length in place. It fails on NaN or infinite
// values and leaves a zero vector zero.
func normalize(v []float32) error {
	var sum float64
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("vector value %d is %v", i, x)
		}
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return nil
}

func toUint32(s []int) []uint32 {
	out := make([]uint32, len(s))
	for i, x := range s {
		out[i] = uint32(x)
	}
	return out
}
