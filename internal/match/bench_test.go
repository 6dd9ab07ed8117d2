package match_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	synth "github.com/mcpsag/router/internal/synthetic"
	"golang.org/x/sys/unix"
)

// Benchmark inputs. The dev sets live in shared/eval beside the checkout;
// MCPSAG_EVAL_DIR and MCPSAG_MODEL_DIR override the locations.
var (
	evalDir  = envOr("MCPSAG_EVAL_DIR", filepath.Join("..", "..", "..", "shared", "eval"))
	modelDir = envOr("MCPSAG_MODEL_DIR", filepath.Join("..", "..", "models", "mcpsag-static-v1"))
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// devText is one skill of the dev sets.
type devText struct{ name, desc, body string }

var devOnce struct {
	sync.Once
	skills  []devText
	queries []string
	err     error
}

// loadDev reads the skills and queries of every dev set under evalDir.
func loadDev(b *testing.B) ([]devText, []string) {
	devOnce.Do(func() {
		sets, err := filepath.Glob(filepath.Join(evalDir, "*", "queries.jsonl"))
		if err != nil || len(sets) == 0 {
			devOnce.err = fmt.Errorf("no dev sets under %s", evalDir)
			return
		}
		for _, qf := range sets {
			set := filepath.Dir(qf)
			dirs, err := os.ReadDir(filepath.Join(set, "skills"))
			if err != nil {
				devOnce.err = err
				return
			}
			for _, d := range dirs {
				data, err := os.ReadFile(filepath.Join(set, "skills", d.Name(), "SKILL.md"))
				if err != nil {
					continue
				}
				if p, _ := skillmd.Parse(data, d.Name(), skillmd.DefaultLimits); p != nil {
					devOnce.skills = append(devOnce.skills, devText{p.Name, p.Frontmatter.Description, p.Body})
				}
			}
			f, err := os.Open(qf)
			if err != nil {
				devOnce.err = err
				return
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var q struct{ Query string }
				if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
					devOnce.queries = append(devOnce.queries, q.Query)
				}
			}
			f.Close()
		}
	})
	if devOnce.err != nil {
		b.Skipf("skipping: the dev sets are needed for synthetic skills: %v (set MCPSAG_EVAL_DIR)", devOnce.err)
	}
	return devOnce.skills, devOnce.queries
}

// benchModel opens the default model, or the tiny test model when the
// default one has not been built (its 32 dimensions make the dense scan
// cheaper than the real thing; the log says so).
func benchModel(b *testing.B) (*embed.Model, string) {
	dir, note := modelDir, "default model"
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		dir = filepath.Join(b.TempDir(), "tiny")
		if _, err := embedtest.WriteTinyModel(dir); err != nil {
			b.Fatal(err)
		}
		note = "tiny test model (default model not built)"
	}
	m, err := embed.Open(context.Background(), embed.Config{Dir: dir})
	if err != nil {
		b.Fatalf("open model %s: %v", dir, err)
	}
	b.Cleanup(func() { m.Close() })
	return m, note
}

// synthetic makes n skills from the dev-set texts: the first pass uses them
// as they are; later passes rename each skill and splice in half of another
// skill's description, so no two skills are the same. Vectors of the copies
// are the original's plus a little noise.
func synthetic(b *testing.B, base []devText, baseVecs [][]float32, n int) ([]*skill.Skill, [][]float32, map[string]string) {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	skills := make([]*skill.Skill, n)
	vecs := make([][]float32, n)
	bodies := make(map[string]string, n)
	for i := range n {
		j := i % len(base)
		d := base[j]
		name, desc := d.name, d.desc
		v := baseVecs[j]
		if pass := i / len(base); pass > 0 {
			name = fmt.Sprintf("%s-v%d", d.name, pass)
			other := base[r.IntN(len(base))].desc
			desc = d.desc + " " + other[:len(other)/2]
			nv := make([]float32, len(v))
			for k := range v {
				nv[k] = v[k] + float32(0.05*r.NormFloat64())
			}
			v = nv
		}
		s := newSkill(name, desc)
		s.ContentHash = fmt.Sprintf("h%d", i)
		skills[i] = s
		vecs[i] = v
		bodies[s.ContentHash] = d.body
	}
	return skills, vecs, bodies
}

// switchEmbedder embeds with the model, or returns precomputed vectors
// when cached is set (a text not precomputed, a part of a task, is
// embedded once and kept). It records how long each model run took.
type switchEmbedder struct {
	m      *embed.Model
	cache  map[string][]float32
	cached bool
	spent  []time.Duration // the model's time of each uncached call
}

func (e *switchEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	if !e.cached {
		t0 := time.Now()
		vecs, err := e.m.Embed(ctx, texts, embed.Query)
		e.spent = append(e.spent, time.Since(t0))
		return vecs, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := e.cache[t]
		if !ok {
			vs, err := e.m.Embed(ctx, []string{t}, embed.Query)
			if err != nil {
				return nil, err
			}
			v = vs[0]
			e.cache[t] = v
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkMatch measures in-process Match (hybrid, default config, bodies
// indexed) at 1k, 10k and 100k synthetic skills. "with-embedding" includes
// embedding the task with the model; "engine" uses precomputed task vectors.
// In the same run it measures the physical reference over the same data:
// "ref-dot-scan", a plain exact dot product of the task vector with every
// skill vector, and "ref-bm25", Match in keyword-only mode. It reports the
// median and 99th percentile per match.
func BenchmarkMatch(b *testing.B) {
	base, queries := loadDev(b)
	m, note := benchModel(b)
	b.Logf("%d dev skills, %d dev queries, %s", len(base), len(queries), note)
	texts := make([]string, len(base))
	for i, d := range base {
		texts[i] = (&skill.Skill{Name: d.name, Frontmatter: skill.Frontmatter{Description: d.desc}}).DocumentText("", 0)
	}
	baseVecs, err := m.Embed(context.Background(), texts, embed.Document)
	if err != nil {
		b.Fatal(err)
	}
	qvec := embedQueries(b, m, queries)
	for _, n := range []int{1000, 10000, 100000} {
		if n > 10000 && testing.Short() {
			continue
		}
		skills, vecs, bodies := synthetic(b, base, baseVecs, n)
		emb := &switchEmbedder{m: m, cache: qvec}
		ix := buildBench(b, skills, vecs, emb, func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil })
		runMatchBenches(b, fmt.Sprintf("skills=%d", n), ix, emb, queries, vecs)
	}
}

// BenchmarkMatchLong measures Match on tasks of about 2,000 characters (a
// dev-set request followed by context taken from real SKILL.md bodies) at
// 10k skills whose bodies go on with stretches of real bodies (up to 7,000
// characters), with the same references as BenchmarkMatch. It needs
// ../shared/corpora.
func BenchmarkMatchLong(b *testing.B) {
	base, _ := loadDev(b)
	src := &synth.Source{}
	for _, d := range base {
		src.Skills = append(src.Skills, synth.Skill{Name: d.name, Description: d.desc, Body: d.body})
	}
	_, queries := loadDev(b)
	src.Queries = queries
	if err := src.LoadCorpora(corporaDir); err != nil {
		b.Skipf("skipping: real skill trees are needed for long bodies and tasks: %v (set MCPSAG_CORPORA_DIR)", err)
	}
	m, note := benchModel(b)
	b.Logf("%s", note)
	const n = 10000
	cat := src.Catalog(n, 1)
	tasks := src.LongTasks(500, 2000, 1)
	qvec := embedQueries(b, m, tasks)
	texts := make([]string, len(base))
	for i, d := range base {
		texts[i] = (&skill.Skill{Name: d.name, Frontmatter: skill.Frontmatter{Description: d.desc}}).DocumentText("", 0)
	}
	baseVecs, err := m.Embed(context.Background(), texts, embed.Document)
	if err != nil {
		b.Fatal(err)
	}
	skills, vecs, bodies := synthetic(b, base, baseVecs, n)
	for i, s := range skills {
		bodies[s.ContentHash] = cat[i].Body
	}
	emb := &switchEmbedder{m: m, cache: qvec}
	ix := buildBench(b, skills, vecs, emb, func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil })
	runMatchBenches(b, fmt.Sprintf("skills=%d/task=2000", n), ix, emb, tasks, vecs)
}

var corporaDir = envOr("MCPSAG_CORPORA_DIR", filepath.Join("..", "..", "..", "shared", "corpora"))

// embedQueries embeds every query once, for the engine-only runs.
func embedQueries(b *testing.B, m *embed.Model, queries []string) map[string][]float32 {
	qvecs, err := m.Embed(context.Background(), queries, embed.Query)
	if err != nil {
		b.Fatal(err)
	}
	qvec := make(map[string][]float32, len(queries))
	for i, q := range queries {
		qvec[q] = qvecs[i]
	}
	return qvec
}

func buildBench(b *testing.B, skills []*skill.Skill, vecs [][]float32, emb match.QueryEmbedder, body func(*skill.Skill) (string, error)) *match.Index {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	ix, err := match.Build(context.Background(), match.BuildInput{
		Skills: skills, Vectors: vecs, Config: match.DefaultConfig(), Embedder: emb, Body: body,
	})
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.Logf("skills=%d: built in %s (dimension %d); heap +%.1f MiB", len(skills), took.Round(time.Millisecond),
		ix.Stats().Dimension, float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20))
	return ix
}

// runMatchBenches runs Match with and without the task embedding, and the
// two references, on the same index.
func runMatchBenches(b *testing.B, prefix string, ix *match.Index, emb *switchEmbedder, queries []string, vecs [][]float32) {
	timed := func(name string, f func(q string)) {
		b.Run(prefix+"/"+name, func(b *testing.B) {
			times := make([]time.Duration, 0, 1024)
			cpus := make([]time.Duration, 0, 1024)
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				c0 := processCPU()
				t0 := time.Now()
				f(q)
				times = append(times, time.Since(t0))
				cpus = append(cpus, processCPU()-c0)
			}
			reportPercentiles(b, times, cpus)
		})
	}
	match1 := func(mode skill.MatchMode, cached bool) func(string) {
		return func(q string) {
			emb.cached = cached
			if _, err := ix.Match(context.Background(), skill.MatchRequest{Task: q, Options: skill.MatchOptions{Mode: mode}}, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	emb.spent = emb.spent[:0]
	timed("with-embedding", match1("", false))
	if len(emb.spent) > 0 {
		// The task's embedding alone (the task and its parts, one model
		// run), timed inside the same matches: what Match adds is the rest.
		b.Run(prefix+"/ref-embedding", func(b *testing.B) {
			for b.Loop() {
			}
			spent := slices.Clone(emb.spent)
			slices.Sort(spent)
			b.ReportMetric(float64(spent[len(spent)/2].Nanoseconds())/1e3, "p50-µs")
		})
	}
	timed("engine", match1("", true))
	out := make([]float32, len(vecs))
	timed("ref-dot-scan", func(q string) {
		qv := emb.cache[q]
		for i, v := range vecs {
			if v != nil {
				out[i] = match.Dot(qv, v)
			}
		}
	})
	timed("ref-bm25", match1(skill.ModeKeyword, true))

}

// reportPercentiles reports the median and 99th percentile of the wall
// times, and the median of the process CPU times per operation: on a
// shared machine the wall time includes waiting for a CPU, the CPU time
// does not.
func reportPercentiles(b *testing.B, times, cpus []time.Duration) {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	sort.Slice(cpus, func(i, j int) bool { return cpus[i] < cpus[j] })
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(times[min(len(times)-1, int(math.Ceil(0.99*float64(len(times))))-1)].Nanoseconds())/1e3, "p99-µs")
	b.ReportMetric(float64(cpus[len(cpus)/2].Nanoseconds())/1e3, "p50-cpu-µs")
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
