package embed

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/knights-analytics/hugot/backends"
	"github.com/knights-analytics/hugot/options"
	"github.com/knights-analytics/hugot/pipelines"
	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"

	"github.com/mcpsag/router/internal/filestamp"
	"github.com/mcpsag/router/internal/mapfile"
	"github.com/mcpsag/router/internal/onnxgraph"
)

// modelFiles are the files a model folder contributes, with their stamps.
type modelFiles struct {
	dir       string
	onnx      string
	tokenizer string
	stamp     filestamp.Stamp // every file read, as read
}

// Open loads the model folder cfg.Dir, resolves cfg against its
// mcpsag-model.json and config files, compiles the batch-1 shapes, and
// measures the query latency. Errors carry a Reason (see ReasonOf).
func Open(ctx context.Context, cfg Config) (*Model, error) {
	start := time.Now()
	cfg, files, hf, err := openFolder(cfg)
	if err != nil {
		return nil, err
	}
	g, release, err := readGraph(files, cfg.MaxTokens)
	if err != nil {
		return nil, err
	}
	defer release()
	m := &Model{
		cfg:          cfg,
		files:        files,
		hf:           hf,
		onnxSum:      g.onnxSum,
		tk:           g.tk,
		maxTextBytes: 16 * cfg.MaxTokens,
		sem:          make(chan struct{}, cfg.Concurrency),
		shapes:       map[[2]int]bool{},
	}
	m.info.TokenizerVocab = g.tk.GetVocabSize(true)
	if err := m.setUp(g); err != nil {
		m.Close()
		return nil, err
	}
	m.info.LoadDuration = time.Since(start)
	if err := m.warm(ctx); err != nil {
		m.Close()
		return nil, err
	}
	m.info.LoadedAt = time.Now()
	return m, nil
}

// openFolder makes cfg.Dir absolute, finds the folder's files and resolves
// cfg against its mcpsag-model.json and config.json.
func openFolder(cfg Config) (Config, modelFiles, hfConfig, error) {
	if cfg.Dir == "" {
		return cfg, modelFiles{}, hfConfig{}, withReason(ReasonModelMissing, errors.New("no model folder configured"))
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return cfg, modelFiles{}, hfConfig{}, withReason(ReasonModelMissing, err)
	}
	cfg.Dir = dir
	files, err := findFiles(dir)
	if err != nil {
		return cfg, files, hfConfig{}, err
	}
	man, _, _, err := ReadManifest(dir)
	if err != nil {
		return cfg, files, hfConfig{}, withReason(ReasonModelInvalid, err)
	}
	hf, err := readHFConfig(dir)
	if err != nil {
		return cfg, files, hf, withReason(ReasonModelInvalid, err)
	}
	cfg, err = resolve(cfg, man, hf)
	if err != nil {
		return cfg, files, hf, withReason(ReasonConfigInvalid, err)
	}
	return cfg, files, hf, nil
}

// graphRead is what Open reads from a model folder's graph and tokenizer.
type graphRead struct {
	onnx        []byte   // the graph's mapping, valid until its release
	onnxSum     [32]byte // the ONNX file's own digest
	fingerprint string   // the digest of the graph and then the tokenizer
	static      *onnxgraph.Static
	enc         *onnxgraph.Encoder
	wp          *wordPiece // nil unless the graph is evaluated natively
	tk          *tokenizer.Tokenizer
}

// readGraph maps the graph, reads the tokenizer, hashes both and
// recognises a static or encoder graph. The graph is read from a mapping
// for as long as Open runs: a static graph's table is copied out of it, and
// another graph is copied for the runtime. A mapping is the page cache's
// pages, not 10 MB and more of fresh memory to fault in at every start.
// The caller calls release once it is done with g.onnx.
func readGraph(files modelFiles, maxTokens int) (g graphRead, release func(), err error) {
	onnx, unmap, err := mapfile.Read(files.onnx)
	if err != nil {
		return g, nil, withReason(ReasonUnreadable, err)
	}
	g.onnx = onnx
	defer func() {
		if err != nil {
			unmap()
		}
	}()
	tokBytes, err := os.ReadFile(files.tokenizer)
	if err != nil {
		return g, nil, withReason(ReasonUnreadable, err)
	}
	// The general tokenizer loads on one core while the other hashes the
	// files and reads the graph: at start, loading the model is most of
	// what a router on a few skills waits for.
	type loaded struct {
		tk  *tokenizer.Tokenizer
		err error
	}
	tokDone := make(chan loaded, 1)
	go func() {
		tk, err := loadTokenizer(tokBytes, maxTokens)
		tokDone <- loaded{tk, err}
	}()
	err = mapfile.Guard(files.onnx, func() error {
		h := sha256.New()
		h.Write(g.onnx)
		h.Sum(g.onnxSum[:0]) // the ONNX file's own digest; the hash goes on
		h.Write(tokBytes)
		g.fingerprint = hex.EncodeToString(h.Sum(nil))
		g.static, _ = onnxgraph.ReadStatic(g.onnx)
		if g.static == nil {
			g.enc, _ = onnxgraph.ReadEncoder(g.onnx)
		}
		return nil
	})
	if g.static != nil || g.enc != nil {
		g.wp = newWordPiece(tokBytes)
	}
	tl := <-tokDone
	if err != nil {
		return g, nil, withReason(ReasonUnreadable, err)
	}
	if tl.err != nil {
		return g, nil, withReason(ReasonModelInvalid, fmt.Errorf("load %s: %w", files.tokenizer, tl.err))
	}
	g.tk = tl.tk
	return g, unmap, nil
}

// setUp chooses how m evaluates the graph g and sets m's identity. A static
// embedding graph or an encoder graph is evaluated natively: the runtime is
// built only if something asks for it (Verify, a test comparing the two).
func (m *Model) setUp(g graphRead) error {
	native := m.useNative(g.static, g.wp)
	if !native && g.enc != nil {
		var err error
		if native, err = m.useEncoder(g.enc, g.wp); err != nil {
			return withReason(ReasonModelInvalid, err)
		}
	}
	if !native {
		// The runtime keeps the graph's bytes: a copy of the mapping.
		var graph []byte
		if err := mapfile.Guard(m.files.onnx, func() error { graph = bytes.Clone(g.onnx); return nil }); err != nil {
			return withReason(ReasonUnreadable, err)
		}
		if err := m.build(m.files.onnx, graph); err != nil {
			return err
		}
	}
	if m.cfg.Dimension != 0 && m.id.Dimension != m.cfg.Dimension {
		return withReason(ReasonDimension, fmt.Errorf("model %s gives %d-dimensional vectors, configured dimension is %d",
			m.cfg.Dir, m.id.Dimension, m.cfg.Dimension))
	}
	m.cfg.Dimension = m.id.Dimension
	m.id.Name = m.cfg.Name
	m.id.Fingerprint = g.fingerprint
	m.id.Path = m.cfg.Dir
	m.id.Settings = settingsHash(m.cfg) // after build chose pooling and output
	return nil
}

// findFiles locates model.onnx (or onnx/model.onnx) and tokenizer.json.
func findFiles(dir string) (modelFiles, error) {
	f := modelFiles{dir: dir}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return f, withReason(ReasonModelMissing, fmt.Errorf("model folder %s does not exist", dir))
	case err != nil:
		return f, withReason(ReasonUnreadable, err)
	case !st.IsDir():
		return f, withReason(ReasonModelMissing, fmt.Errorf("model folder %s is not a directory", dir))
	}
	for _, name := range []string{"model.onnx", filepath.Join("onnx", "model.onnx")} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			f.onnx = p
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return f, withReason(ReasonUnreadable, err)
		}
	}
	if f.onnx == "" {
		return f, withReason(ReasonModelMissing, fmt.Errorf("model folder %s has no model.onnx or onnx/model.onnx", dir))
	}
	f.tokenizer = filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(f.tokenizer); errors.Is(err, fs.ErrNotExist) {
		return f, withReason(ReasonModelMissing, fmt.Errorf("model folder %s has no tokenizer.json", dir))
	} else if err != nil {
		return f, withReason(ReasonUnreadable, err)
	}
	f.stamp = filestamp.Of(f.onnx, f.tokenizer,
		filepath.Join(dir, ManifestFile),
		filepath.Join(dir, "config.json"),
		filepath.Join(dir, "1_Pooling", "config.json"))
	return f, nil
}

// inputs hugot's Go backend knows how to fill.
var knownInputs = []string{"input_ids", "attention_mask", "token_type_ids", "position_ids"}

// build creates the model runtime (hugot's model and pipeline) and picks
// the output from the outputs the runtime finds.
func (m *Model) build(onnxPath string, onnxBytes []byte) error {
	hm, err := m.newBackend(onnxPath, onnxBytes)
	if err != nil {
		return err
	}
	out, pooling, err := pickOutput(hm.OutputsMeta, m.cfg.OutputName, m.cfg.Pooling)
	if err != nil {
		destroy(hm)
		return withReason(ReasonModelInvalid, err)
	}
	m.setOutput(hm.OutputsMeta, out, pooling)
	if m.pipe, err = m.newPipeline(onnxPath, hm, out.Name); err != nil {
		destroy(hm)
		return err
	}
	m.hm = hm
	m.info.Evaluator = "runtime"
	return nil
}

// runtime returns the model runtime, building it on first use for a graph
// evaluated natively. It reads the ONNX file again and refuses it
// when it is not the one Open loaded.
func (m *Model) runtime() (*backends.Model, *pipelines.FeatureExtractionPipeline, error) {
	m.runtimeOnce.Do(func() {
		if m.hm != nil {
			return
		}
		b, err := os.ReadFile(m.files.onnx)
		if err != nil {
			m.runtimeErr = withReason(ReasonUnreadable, err)
			return
		}
		if sha256.Sum256(b) != m.onnxSum {
			m.runtimeErr = withReason(ReasonModelInvalid, fmt.Errorf("%s changed since the model was loaded", m.files.onnx))
			return
		}
		hm, err := m.newBackend(m.files.onnx, b)
		if err != nil {
			m.runtimeErr = err
			return
		}
		out := slices.IndexFunc(hm.OutputsMeta, func(o backends.InputOutputInfo) bool { return o.Name == m.cfg.OutputName })
		if out < 0 {
			destroy(hm)
			m.runtimeErr = withReason(ReasonModelInvalid, fmt.Errorf("model has no output %q (outputs: %v)", m.cfg.OutputName, backends.GetNames(hm.OutputsMeta)))
			return
		}
		pipe, err := m.newPipeline(m.files.onnx, hm, m.cfg.OutputName)
		if err != nil {
			destroy(hm)
			m.runtimeErr = err
			return
		}
		m.hm, m.pipe, m.outIndex = hm, pipe, out
	})
	if m.hm == nil && m.runtimeErr == nil {
		return nil, nil, ErrClosed // Close ran first
	}
	return m.hm, m.pipe, m.runtimeErr
}

// runtimeOptions are hugot's options for cfg: the pure-Go backend and the
// shape buckets.
func runtimeOptions(cfg Config) *options.Options {
	opts := options.Defaults()
	opts.Backend = "GO"
	opts.GoMLXOptions.BatchBuckets = cfg.BatchBuckets
	opts.GoMLXOptions.SequenceBuckets = cfg.SequenceBuckets
	return opts
}

// newBackend parses the ONNX graph into hugot's model and checks its
// inputs.
func (m *Model) newBackend(onnxPath string, onnxBytes []byte) (hm *backends.Model, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = withReason(ReasonModelInvalid, fmt.Errorf("load %s: panic: %v", onnxPath, r))
		}
	}()
	hm = &backends.Model{
		ID:                    onnxPath,
		Path:                  filepath.Dir(onnxPath), // external data is relative to the ONNX file
		OnnxFilename:          filepath.Base(onnxPath),
		Pipelines:             map[string]backends.Pipeline{},
		OnnxBytes:             onnxBytes,
		MaxPositionEmbeddings: m.hf.maxPositions,
	}
	if err := backends.CreateModelBackend(hm, runtimeOptions(m.cfg)); err != nil {
		return nil, withReason(ReasonModelInvalid, fmt.Errorf("load %s: %w", onnxPath, err))
	}
	hm.Tokenizer = &backends.Tokenizer{
		Runtime:          "GO",
		GoTokenizer:      &backends.GoTokenizer{Tokenizer: m.tk},
		MaxAllowedTokens: m.cfg.MaxTokens,
		Destroy:          func() error { return nil },
	}
	for _, in := range hm.InputsMeta {
		if !slices.Contains(knownInputs, in.Name) {
			destroy(hm)
			return nil, withReason(ReasonModelInvalid, fmt.Errorf("model input %q is not supported (want %v)", in.Name, knownInputs))
		}
		if len(in.Dimensions) != 2 {
			destroy(hm)
			return nil, withReason(ReasonModelInvalid, fmt.Errorf("model input %q has shape %v, want [batch, sequence]", in.Name, in.Dimensions))
		}
	}
	return hm, nil
}

// newPipeline makes the feature-extraction pipeline that reads output out.
func (m *Model) newPipeline(onnxPath string, hm *backends.Model, out string) (pipe *pipelines.FeatureExtractionPipeline, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = withReason(ReasonModelInvalid, fmt.Errorf("load %s: panic: %v", onnxPath, r))
		}
	}()
	pipe, err = pipelines.NewFeatureExtractionPipeline(
		backends.PipelineConfig[*pipelines.FeatureExtractionPipeline]{
			ModelPath: m.files.dir,
			Name:      "embed",
			Options:   []backends.PipelineOption[*pipelines.FeatureExtractionPipeline]{pipelines.WithOutputName(out)},
		}, runtimeOptions(m.cfg), hm)
	if err != nil {
		return nil, withReason(ReasonModelInvalid, fmt.Errorf("load %s: %w", onnxPath, err))
	}
	return pipe, nil
}

// setOutput records the output the model's vectors are pooled from, among
// outs, and the pooling.
func (m *Model) setOutput(outs []backends.InputOutputInfo, out backends.InputOutputInfo, pooling Pooling) {
	m.cfg.OutputName, m.cfg.Pooling = out.Name, pooling
	for i, o := range outs {
		m.info.Outputs = append(m.info.Outputs, o.Name)
		if o.Name == out.Name {
			m.outIndex = i
		}
	}
	m.info.Output = out.Name
	m.id.Dimension = int(out.Dimensions[len(out.Dimensions)-1])
}

// destroy releases a runtime's model.
func destroy(hm *backends.Model) {
	if hm.GoMLXModel != nil {
		hm.GoMLXModel.Destroy()
	}
}

// pickOutput chooses the output and pooling; see PoolingAuto.
func pickOutput(outs []backends.InputOutputInfo, name string, pooling Pooling) (backends.InputOutputInfo, Pooling, error) {
	if name != "" {
		out, ok := outputs(outs).find(name, 0)
		if !ok {
			return out, "", fmt.Errorf("model has no output %q (outputs: %v)", name, backends.GetNames(outs))
		}
		return checkPooling(out, pooling)
	}
	out, ok := outputs(outs).forPooling(pooling)
	if !ok {
		return out, "", fmt.Errorf("model has no output usable with pooling %q (outputs: %v)", pooling, backends.GetNames(outs))
	}
	return checkPooling(out, pooling)
}

// outputs are a model's outputs.
type outputs []backends.InputOutputInfo

// find returns the output called name, of rank dimensions (any when 0).
func (outs outputs) find(name string, rank int) (backends.InputOutputInfo, bool) {
	for _, o := range outs {
		if o.Name == name && (rank == 0 || len(o.Dimensions) == rank) {
			return o, true
		}
	}
	return backends.InputOutputInfo{}, false
}

// firstOfRank returns the first output of rank dimensions.
func (outs outputs) firstOfRank(rank int) (backends.InputOutputInfo, bool) {
	for _, o := range outs {
		if len(o.Dimensions) == rank {
			return o, true
		}
	}
	return backends.InputOutputInfo{}, false
}

// outputName is an output looked for by name, of a rank.
type outputName struct {
	name string
	rank int
}

// The outputs each pooling looks for, in order: the token states for mean
// and CLS pooling, a pooled output for output pooling, and for auto either.
var (
	tokenOutputs  = []outputName{{"last_hidden_state", 3}}
	pooledOutputs = []outputName{{"sentence_embedding", 2}, {"pooler_output", 2}}
	autoOutputs   = []outputName{{"sentence_embedding", 2}, {"last_hidden_state", 3}, {"pooler_output", 2}}
)

// forPooling returns the output to pool as pooling says: the first of the
// outputs it looks for, else the first output of the rank it needs (for
// auto, the first output).
func (outs outputs) forPooling(pooling Pooling) (backends.InputOutputInfo, bool) {
	names, rank := autoOutputs, 0
	switch pooling {
	case PoolingMean, PoolingCLS:
		names, rank = tokenOutputs, 3
	case PoolingOutput:
		names, rank = pooledOutputs, 2
	}
	for _, n := range names {
		if o, ok := outs.find(n.name, n.rank); ok {
			return o, true
		}
	}
	if rank > 0 {
		return outs.firstOfRank(rank)
	}
	if len(outs) > 0 {
		return outs[0], true
	}
	return backends.InputOutputInfo{}, false
}

// checkPooling resolves auto pooling for out (output pooling for a rank-2
// output, else mean) and checks that out's shape suits the pooling.
func checkPooling(out backends.InputOutputInfo, pooling Pooling) (backends.InputOutputInfo, Pooling, error) {
	rank := len(out.Dimensions)
	if pooling == PoolingAuto {
		pooling = PoolingMean
		if rank == 2 {
			pooling = PoolingOutput
		}
	}
	switch {
	case (pooling == PoolingMean || pooling == PoolingCLS) && rank != 3:
		return out, "", fmt.Errorf("output %q has shape %v; %s pooling needs [batch, sequence, hidden]", out.Name, out.Dimensions, pooling)
	case pooling == PoolingOutput && rank != 2:
		return out, "", fmt.Errorf("output %q has shape %v; pooled output needs [batch, hidden]", out.Name, out.Dimensions)
	case out.Dimensions[rank-1] <= 0:
		return out, "", fmt.Errorf("output %q has no fixed hidden size (shape %v)", out.Name, out.Dimensions)
	}
	return out, pooling, nil
}

// loadTokenizer parses tokenizer.json, replaces its truncation and padding
// with ours, and checks that it can encode a sample.
func loadTokenizer(b []byte, maxTokens int) (tk *tokenizer.Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	tk, err = pretrained.FromReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	tk.WithTruncation(&tokenizer.TruncationParams{MaxLength: maxTokens, Strategy: tokenizer.LongestFirst})
	tk.WithPadding(nil)
	// A WordPiece vocabulary without its unknown token, for one, fails on
	// every unknown word; find out now rather than on the first query.
	if _, err := tk.EncodeSingle("Sample text, 123.", true); err != nil {
		return nil, fmt.Errorf("encode a sample: %w", err)
	}
	return tk, nil
}

// useNative turns on native evaluation when the model is a static
// embedding graph (st, nil for others) whose one output the pooling reads
// and whose rows the tokenizer's ids index, choosing the output as build
// would from the outputs the runtime finds in that graph, and native
// tokenization when tokenizer.json is a BERT WordPiece one (wp, nil for
// others) whose ids fit the table. It reports whether the model is
// evaluated natively.
func (m *Model) useNative(st *onnxgraph.Static, wp *wordPiece) bool {
	if st == nil || m.info.TokenizerVocab > st.VocabSize {
		return false
	}
	outs := []backends.InputOutputInfo{{Name: onnxgraph.LastHiddenState, Dimensions: backends.Shape{-1, -1, int64(st.Dim)}}}
	out, pooling, err := pickOutput(outs, m.cfg.OutputName, m.cfg.Pooling)
	if err != nil {
		return false // build reports it
	}
	m.setOutput(outs, out, pooling)
	m.static = st
	m.info.Native = true
	m.info.Evaluator = "static"
	if wp != nil {
		top := 0
		for _, id := range wp.vocab {
			top = max(top, id)
		}
		if top < st.VocabSize {
			m.wp = wp
			m.info.NativeTokenizer = true
		}
	}
	return true
}

// warm compiles the batch-1 shapes (one per sequence bucket), checks the
// output, and measures the query latency. A graph evaluated natively
// compiles nothing: one shape checks the output.
func (m *Model) warm(ctx context.Context) error {
	start := time.Now()
	buckets := m.cfg.SequenceBuckets
	if m.static != nil || m.enc != nil {
		buckets = buckets[:min(1, len(buckets))]
	}
	for _, seq := range buckets {
		if err := ctx.Err(); err != nil {
			return err
		}
		ids := make([]int, seq)
		in := tokenized{ids: ids, typeIDs: make([]int, seq), mask: make([]int, seq)}
		for i := range in.mask {
			in.mask[i] = 1
		}
		vecs, err := m.runBatch(ctx, []tokenized{in}, m.cfg.Timeout)
		if err != nil {
			return withReason(ReasonModelInvalid, fmt.Errorf("warm up shape [1, %d]: %w", seq, err))
		}
		if len(vecs) != 1 || len(vecs[0]) != m.id.Dimension {
			return withReason(ReasonModelInvalid, fmt.Errorf("warm up shape [1, %d]: got %d vectors, want 1 of %d values",
				seq, len(vecs), m.id.Dimension))
		}
		m.info.WarmShapes++
	}
	m.info.WarmupDuration = time.Since(start)

	samples := []string{"fill in a pdf form", "deploy to kubernetes", "send an email", "resize images", "query a database"}
	lat := make([]time.Duration, 0, len(samples))
	for _, s := range samples {
		t0 := time.Now()
		if _, _, err := m.embed(ctx, []string{s}, Query); err != nil {
			return withReason(ReasonModelInvalid, fmt.Errorf("embed a sample query: %w", err))
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	m.info.QueryLatency = lat[len(lat)/2]
	return nil
}
