package match

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
)

// zipfText returns words drawn from a Zipf distribution over a made-up
// vocabulary, so that a few words are in most documents and most words in
// few, as in real text.
func zipfText(r *rand.Rand, z *rand.Zipf, words int) string {
	var b strings.Builder
	for i := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%dx", z.Uint64())
	}
	return b.String()
}

// exactCorpus builds n skills with Zipf-distributed names, descriptions,
// triggers and bodies, and clustered vectors (many near-equal cosines).
func exactCorpus(t testing.TB, n, dim int, seed uint64) ([]*skill.Skill, [][]float32, map[string]string) {
	r := rand.New(rand.NewPCG(seed, 1))
	z := rand.NewZipf(r, 1.1, 2, 20000)
	centers := make([][]float32, 20)
	for i := range centers {
		centers[i] = make([]float32, dim)
		for j := range centers[i] {
			centers[i][j] = float32(r.NormFloat64())
		}
	}
	skills := make([]*skill.Skill, n)
	vecs := make([][]float32, n)
	bodies := map[string]string{}
	for i := range skills {
		name := fmt.Sprintf("s%d-%s", i, strings.ReplaceAll(zipfText(r, z, 2), " ", "-"))
		s := &skill.Skill{
			Name: name, Dir: "/skills/" + name, Root: skill.Root{Path: "/skills", Kind: skill.KindProject},
			Frontmatter: skill.Frontmatter{Name: name, Description: zipfText(r, z, 5+r.IntN(30))},
			ContentHash: fmt.Sprintf("h%d", i),
		}
		if i%7 == 0 {
			s.Frontmatter.Triggers = []string{zipfText(r, z, 2), zipfText(r, z, 1)}
		}
		if i%11 == 0 {
			s.Frontmatter.Tags = []string{zipfText(r, z, 1)}
		}
		if i%13 == 0 {
			s.Root.Agent = "reviewer"
		}
		if i%17 == 0 {
			s.Frontmatter.Hidden = true
		}
		skills[i] = s
		bodies[s.ContentHash] = zipfText(r, z, r.IntN(600))
		if i%29 != 0 {
			c := centers[r.IntN(len(centers))]
			v := make([]float32, dim)
			for j := range v {
				v[j] = c[j] + float32(0.3*r.NormFloat64())
			}
			if i%31 == 0 && i > 0 {
				v = vecs[i-1] // exact duplicates tie
			}
			vecs[i] = v
		}
	}
	return skills, vecs, bodies
}

// zipfTasks returns n tasks of words(i) Zipf-distributed words, every
// fifth naming one of skills, and a random dim-dimensional vector for each.
func zipfTasks(r *rand.Rand, z *rand.Zipf, skills []*skill.Skill, n, dim int, words func(i int) int) ([]string, map[string][]float32) {
	var tasks []string
	qv := map[string][]float32{}
	for i := range n {
		task := zipfText(r, z, words(i))
		if i%5 == 0 {
			task += " " + skills[r.IntN(len(skills))].Name
		}
		tasks = append(tasks, task)
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		qv[task] = v
	}
	return tasks, qv
}

// exactRendering is everything Rank returns that a client or the
// evaluation sees.
func exactRendering(rk *Ranking) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v %v %+v\n", rk.Rule, rk.Probability, rk.Features)
	res := rk.Result
	fmt.Fprintf(&b, "%v %v %v %v %v\n", res.Abstained, res.AbstainReason, res.AbstainDetail, res.Mode, res.Degraded)
	for _, c := range rk.Ranked {
		fmt.Fprintf(&b, "%s %v %v %v %d %d %v %v %v %s\n", c.Skill.Name, math.Float64bits(c.Cosine), math.Float64bits(c.BM25),
			math.Float64bits(c.Fused), c.DenseRank, c.BM25Rank, c.TriggerBoost, c.TriggersFired, c.NameMentioned, c.Reason)
	}
	for _, c := range res.Candidates {
		b.WriteString(c.Skill.Name + ",")
	}
	return b.String()
}

// withExhaustive runs f with the int8 pre-scan turned off (on == true) or
// forced on even for small inputs.
func withExhaustive(on bool, f func()) {
	qm, hs, vn := quantizedMinRows, haveInt8Scan, haveVNNI
	defer func() { quantizedMinRows, haveInt8Scan, haveVNNI = qm, hs, vn }()
	if on {
		haveInt8Scan = false
	} else {
		quantizedMinRows = 1
	}
	f()
}

// TestBoundedWorkIsExact checks that the int8 pre-scan of the vectors
// returns exactly what the exhaustive scan does:
// every score, rank, feature and decision, for short and long tasks, with
// agents and hidden skills, in every mode.
func TestBoundedWorkIsExact(t *testing.T) {
	slowtest.Skip(t, "ranks a 3,000-skill corpus exactly for every query; over a minute under -race")
	if !haveInt8Scan {
		t.Log("no AVX2: the int8 pre-scan runs its portable kernel")
	}
	skills, vecs, bodies := exactCorpus(t, 3000, 48, 1)
	qv := map[string][]float32{}
	r := rand.New(rand.NewPCG(9, 9))
	z := rand.NewZipf(r, 1.1, 2, 20000)
	var tasks []string
	for i := range 120 {
		words := 3 + r.IntN(8)
		if i%3 == 0 {
			words = 150 + r.IntN(250)
		}
		task := zipfText(r, z, words)
		if i%10 == 0 {
			task += " " + skills[r.IntN(len(skills))].Name // names a skill
		}
		tasks = append(tasks, task)
		v := make([]float32, 48)
		base := vecs[r.IntN(len(vecs))]
		for j := range v {
			if base != nil {
				v[j] = base[j]
			}
			v[j] += float32(0.2 * r.NormFloat64())
		}
		qv[task] = v
	}
	emb := fakeQuery{vecs: qv}
	ix, err := Build(context.Background(), BuildInput{
		Skills: skills, Vectors: vecs, Embedder: emb, Config: DefaultConfig(),
		Body: func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, ix, tasks)
	if haveVNNI {
		haveVNNI = false
		defer func() { haveVNNI = true }()
		t.Log("again with the AVX2 kernel")
		checkExact(t, ix, tasks)
	}
}

func checkExact(t *testing.T, ix *Index, tasks []string) {
	t.Helper()
	ctx := context.Background()
	long := 0
	for _, mode := range []skill.MatchMode{skill.ModeHybrid, skill.ModeKeyword, skill.ModeDense} {
		for i, task := range tasks {
			for _, agent := range []string{"", "reviewer"} {
				req := skill.MatchRequest{Task: task, Agent: agent, TopK: 5, Options: skill.MatchOptions{Mode: mode, IncludeHidden: i%2 == 0}}
				var want, got *Ranking
				var err error
				withExhaustive(true, func() { want, err = ix.Rank(ctx, req, nil) })
				if err != nil {
					t.Fatal(err)
				}
				withExhaustive(false, func() { got, err = ix.Rank(ctx, req, nil) })
				if err != nil {
					t.Fatal(err)
				}
				if a, b := exactRendering(want), exactRendering(got); a != b {
					t.Fatalf("%s task %d agent %q: bounded work differs from the exhaustive pass:\nwant %s\ngot  %s", mode, i, agent, a, b)
				}
				if len(strings.Fields(task)) > 100 {
					long++
				}
			}
		}
	}
	if long == 0 {
		t.Error("no long task was checked")
	}
}

// fakeQuery returns a fixed vector per task.
type fakeQuery struct{ vecs map[string][]float32 }

func (f fakeQuery) EmbedQueries(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = f.vecs[t]
	}
	return out, nil
}

// TestScratchClearedAfterEverySlot checks that a task whose postings cover
// most documents (scored without a list of touched documents) leaves no
// score behind for the next match on the same scratch.
func TestScratchClearedAfterEverySlot(t *testing.T) {
	skills, vecs, bodies := exactCorpus(t, 800, 16, 7)
	r := rand.New(rand.NewPCG(2, 2))
	z := rand.NewZipf(r, 1.1, 2, 20000)
	broad, narrow := zipfText(r, z, 300), skills[5].Frontmatter.Description
	build := func() *Index {
		ix, err := Build(context.Background(), BuildInput{
			Skills: skills, Vectors: vecs, Config: DefaultConfig(),
			Body: func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix, fresh := build(), build()
	var st queryStats
	if _, total := ix.sparse.taskPairs(ix.sparse.analyzeTask(broad, newScratch(0)), nil, map[[2]string]bool{}, &st); total < ix.sparse.n/2 {
		t.Fatalf("the broad task's postings (%d) do not cover half the %d documents", total, ix.sparse.n)
	}
	ctx := context.Background()
	req := func(task string) skill.MatchRequest {
		return skill.MatchRequest{Task: task, TopK: 10, Options: skill.MatchOptions{Mode: skill.ModeKeyword}}
	}
	want, err := fresh.Rank(ctx, req(narrow), nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := ix.Rank(ctx, req(broad), nil); err != nil {
			t.Fatal(err)
		}
		got, err := ix.Rank(ctx, req(narrow), nil)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := exactRendering(want), exactRendering(got); a != b {
			t.Fatalf("after a broad task:\n%s\nwant\n%s", b, a)
		}
	}
}

// TestTopSparseKeepsTies checks BM25's top list against a sort of every
// scored document (score, then ord), on scores drawn from a few values so
// that many tie at the list's edge (one negative, so that a slot without a
// score is not above the list's worst), over every slot and over touched
// documents only, for lists shorter and longer than the documents scored.
func TestTopSparseKeepsTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	for round := range 400 {
		n := 1 + rng.IntN(300)
		sc := newScratch(n)
		ord := make([]int32, n)
		for i, o := range rng.Perm(n) {
			ord[i] = int32(o)
		}
		values := []float32{0.5, 1, -1, 1.5, 2, 2.5}[:1+rng.IntN(6)]
		for d := range n {
			if rng.IntN(3) > 0 {
				sc.acc[d] = values[rng.IntN(len(values))]
				sc.touched = append(sc.touched, int32(d))
			}
		}
		sc.everySlot = round%2 == 0
		k := 1 + rng.IntN(n+5)
		var want []entry
		for _, d := range sc.touched {
			want = append(want, entry{doc: d, ord: ord[d], score: sc.acc[d]})
		}
		slices.SortFunc(want, func(a, b entry) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return cmp.Compare(a.ord, b.ord)
		})
		want = want[:min(k, len(want))]
		if got := topSparse(sc, ord, k); !slices.Equal(got, want) {
			t.Fatalf("round %d (n %d, k %d, every slot %v): top list\n%v\nwant\n%v", round, n, k, sc.everySlot, got, want)
		}
	}
}
