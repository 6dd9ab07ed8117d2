package embed

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// VerifyReport is what Verify found about a model folder.
type VerifyReport struct {
	Identity Identity
	Config   Config // resolved; zero if the model did not load
	Load     LoadInfo
	// BatchThroughput is texts per second embedding one full batch of
	// document-length texts.
	BatchThroughput float64
	Checks          []Check
	Warnings        []string // not failures: unknown manifest keys and the like
}

// Check is one verification step.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// OK reports whether every check passed.
func (r *VerifyReport) OK() bool {
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Problems returns the failed checks as "name: detail" lines.
func (r *VerifyReport) Problems() []string {
	var p []string
	for _, c := range r.Checks {
		if !c.OK {
			p = append(p, c.Name+": "+c.Detail)
		}
	}
	return p
}

func (r *VerifyReport) check(name string, ok bool, format string, args ...any) bool {
	r.Checks = append(r.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	return ok
}

// Verify loads the model folder dir with cfg (cfg.Dir is replaced by dir),
// embeds sample and hostile texts, and checks dimension, norms, finite
// values, that different texts give different vectors, that a text gives
// the same vector alone and inside a padded batch, the tokenizer
// vocabulary against the model, and, for a model evaluated natively, that
// its vectors are those of hugot's runtime on the same graph (cosine at
// least 0.9999). It returns an error only when the model cannot be loaded;
// failed checks are in the report (see OK).
func Verify(ctx context.Context, dir string, cfg Config) (VerifyReport, error) {
	var r VerifyReport
	cfg.Dir = dir
	if _, unknown, _, err := ReadManifest(dir); err == nil && len(unknown) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s: unknown keys %v are ignored", ManifestFile, unknown))
	}
	m, err := Open(ctx, cfg)
	if err != nil {
		r.check("load", false, "%s: %v", ReasonOf(err), err)
		return r, err
	}
	defer m.Close()
	r.Identity, r.Config, r.Load = m.Identity(), m.Config(), m.LoadInfo()
	r.check("load", true, "%s, %d dimensions, output %q, %s pooling, loaded in %v, %d shapes warmed in %v",
		r.Identity.Name, r.Identity.Dimension, r.Load.Output, r.Config.Pooling,
		r.Load.LoadDuration.Round(time.Millisecond), r.Load.WarmShapes, r.Load.WarmupDuration.Round(time.Millisecond))

	r.checkVocab(m)

	samples := []string{
		"fill in a pdf form",
		"deploy a service to kubernetes",
		"send an email with an attachment",
		"resize and crop images",
		"run database migrations",
		"translate a document to french",
	}
	vecs, err := m.Embed(ctx, samples, Query)
	if !r.check("embed queries", err == nil, "%d sample queries: %v", len(samples), errString(err)) {
		return r, nil
	}
	r.checkVectors("query vectors", vecs, r.Identity.Dimension, false)
	docs, err := m.Embed(ctx, samples, Document)
	if r.check("embed documents", err == nil, "%d sample documents: %v", len(samples), errString(err)) {
		r.checkVectors("document vectors", docs, r.Identity.Dimension, false)
	}
	if r.Load.Native {
		r.checkNative(ctx, m, samples, vecs)
	}

	r.checkDistinct(samples, vecs)
	r.checkPadding(ctx, m, samples[0], vecs[0])
	r.checkHostile(ctx, m)
	r.measureThroughput(ctx, m)
	return r, nil
}

// checkDistinct checks that distinct texts give distinct vectors.
func (r *VerifyReport) checkDistinct(samples []string, vecs [][]float32) {
	var same []string
	for i := range vecs {
		for j := i + 1; j < len(vecs); j++ {
			if cosine(vecs[i], vecs[j]) > 0.9999 {
				same = append(same, strconv.Quote(samples[i])+" = "+strconv.Quote(samples[j]))
			}
		}
	}
	r.check("distinct texts", len(same) == 0, "%d sample queries give pairwise different vectors%s", len(samples), problemList(same))
}

// checkPadding checks that padding does not change a text's vector: it
// embeds the sample, whose vector alone is vec, as the shortest member of a
// longer batch.
func (r *VerifyReport) checkPadding(ctx context.Context, m *Model, sample string, vec []float32) {
	long := strings.Repeat("a longer text that makes the batch pad the short one ", 4)
	batch, err := m.Embed(ctx, []string{sample, long, long + long}, Query)
	if r.check("padded batch", err == nil, "%v", errString(err)) {
		c := cosine(vec, batch[0])
		r.check("padding invariance", c > 0.999, "cosine between %q alone and in a padded batch is %.6f", sample, c)
	}
}

// checkHostile checks that hostile texts embed to valid vectors.
func (r *VerifyReport) checkHostile(ctx context.Context, m *Model) {
	hostile := []string{"", " \t\n", "\xff\xfe invalid utf-8 \xc3\x28", "control \x00\x07\x1b[31m chars",
		"emoji 🚀🔥👩‍👩‍👧 mix", strings.Repeat("x", 1<<20), strings.Repeat("ab ", 1<<18), "\u202eRTL override\u200b"}
	hv, err := m.Embed(ctx, hostile, Query)
	if r.check("hostile inputs", err == nil, "%d hostile texts (empty, invalid UTF-8, control chars, emoji, 1 MiB): %v", len(hostile), errString(err)) {
		// A text of unknown tokens only may pool to the zero vector (a model
		// can give [UNK] a zero row); that is allowed here.
		r.checkVectors("hostile vectors", hv, r.Identity.Dimension, true)
	}
}

func (r *VerifyReport) checkVocab(m *Model) {
	// A static graph evaluated natively has no runtime until asked: the
	// check builds it, so the graph is also one the runtime can run.
	hm, _, err := m.runtime()
	if !r.check("runtime", err == nil, "the ONNX runtime loads the graph: %v", errString(err)) {
		return
	}
	if hm.GoMLXModel == nil || hm.GoMLXModel.OnnxModel == nil {
		return
	}
	for _, p := range hm.GoMLXModel.OnnxModel.Proto.MetadataProps {
		if p.Key != "mcpsag.vocab_size" {
			continue
		}
		rows, err := strconv.Atoi(p.Value)
		if err != nil {
			r.check("vocabulary", false, "metadata mcpsag.vocab_size %q is not a number", p.Value)
			return
		}
		// Token ids past the table are clamped by the backend, silently
		// giving the last row: the tokenizer must fit the table.
		r.check("vocabulary", r.Load.TokenizerVocab <= rows,
			"tokenizer has %d tokens, embedding table has %d rows", r.Load.TokenizerVocab, rows)
		return
	}
}

// minNativeCosine is the least cosine Verify accepts between a native
// vector and the runtime's for the same text.
const minNativeCosine = 0.9999

// checkNative compares the vectors of a model evaluated natively (vecs,
// of the query samples) with those of hugot's runtime on the same graph.
func (r *VerifyReport) checkNative(ctx context.Context, m *Model, samples []string, vecs [][]float32) {
	want, err := m.EmbedRuntime(ctx, samples, Query)
	if err != nil {
		r.check("native evaluation", false, "the runtime, to compare with, fails on the samples: %v", err)
		return
	}
	least := 1.0
	var low []string
	for i := range vecs {
		c := cosine(vecs[i], want[i])
		least = min(least, c)
		if c < minNativeCosine {
			low = append(low, fmt.Sprintf("%q %.6f", samples[i], c))
		}
	}
	r.check("native evaluation", len(low) == 0, "%s: cosine with the runtime's vectors at least %.6f over %d sample queries (want %v)%s",
		r.Load.Evaluator, least, len(samples), minNativeCosine, problemList(low))
}

// checkVectors checks lengths, finite values and unit norms; allowZero
// also accepts zero vectors.
func (r *VerifyReport) checkVectors(name string, vecs [][]float32, dim int, allowZero bool) {
	var problems []string
	for i, v := range vecs {
		if len(v) != dim {
			problems = append(problems, fmt.Sprintf("vector %d has %d values, want %d", i, len(v), dim))
			continue
		}
		var sum float64
		finite := true
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				finite = false
			}
			sum += float64(x) * float64(x)
		}
		if !finite {
			problems = append(problems, fmt.Sprintf("vector %d has NaN or Inf values", i))
		} else if n := math.Sqrt(sum); math.Abs(n-1) > 1e-3 && !(allowZero && n == 0) {
			problems = append(problems, fmt.Sprintf("vector %d has norm %.6f, want 1", i, n))
		}
	}
	norms := "unit norm"
	if allowZero {
		norms = "unit norm or zero"
	}
	r.check(name, len(problems) == 0, "%d vectors of %d dimensions, finite, %s%s", len(vecs), dim, norms, problemList(problems))
}

func (r *VerifyReport) measureThroughput(ctx context.Context, m *Model) {
	n := m.Config().BatchSize
	texts := make([]string, n)
	for i := range texts {
		texts[i] = fmt.Sprintf("skill %d: a document of moderate length describing what this skill does, "+
			"when to use it and which tools it needs, number %d", i, i)
	}
	// The first run compiles the batch shape; time the second.
	if _, err := m.Embed(ctx, texts, Document); err != nil {
		r.check("batch", false, "%v", err)
		return
	}
	start := time.Now()
	if _, err := m.Embed(ctx, texts, Document); err != nil {
		r.check("batch", false, "%v", err)
		return
	}
	r.BatchThroughput = float64(n) / time.Since(start).Seconds()
}

func problemList(p []string) string {
	if len(p) == 0 {
		return ""
	}
	if len(p) > 5 {
		p = append(slices.Clip(p[:5]), fmt.Sprintf("and %d more", len(p)-5))
	}
	return ": " + strings.Join(p, "; ")
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// cosine returns the cosine similarity of two vectors of equal length.
func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
