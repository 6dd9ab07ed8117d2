package eval_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
)

var updateScores = flag.Bool("update-scores", false, "rewrite the score fingerprints under testdata/scores")

// scoresDir holds the score fingerprints of TestScoresUnchanged.
var scoresDir = filepath.Join("..", "..", "testdata", "scores")

// scoreRun is one way of matching a query set.
type scoreRun struct {
	mode   skill.MatchMode
	fusion skill.Fusion
	topK   int
	agent  string
}

// scoreRuns are the modes and fusion rules whose every score is
// fingerprinted.
var scoreRuns = []scoreRun{
	{mode: skill.ModeHybrid},
	{mode: skill.ModeKeyword},
	{mode: skill.ModeDense},
	{mode: skill.ModeHybrid, fusion: skill.FusionRRF, topK: 10},
	{mode: skill.ModeHybrid, fusion: skill.FusionConvex},
	{mode: skill.ModeHybrid, fusion: skill.FusionTiebreak},
}

// TestScoresUnchanged matches fixed query sets and compares every score the
// match path computes (cosine, BM25, fused score, ranks, boosts, features,
// the classifier's probability, the decision, the verdict and their wording) bit for bit
// with fingerprints recorded before the index was rewritten for speed: the
// routing tree with the tiny model (always), and, when ../shared and the
// default model are present, the dev sets and the real skill trees, with
// the dev queries as written and joined into long tasks of about 2,000
// characters. Floats are compared exactly (printed in hexadecimal): the
// scoring code promises the same operations in the same order, so any
// difference is a change. Run with -update-scores to accept a change.
func TestScoresUnchanged(t *testing.T) {
	t.Run("routing", func(t *testing.T) {
		c, qs := openRouting(t)
		tasks := queryTexts(qs)
		tasks = append(tasks, longTasks(tasks, 600, 30)...)
		runs := append(append([]scoreRun(nil), scoreRuns...), scoreRun{mode: skill.ModeHybrid, agent: "reviewer"})
		checkScores(t, c.Index, tasks, runs, "routing")
	})
	if testing.Short() {
		t.Skip("slow: the dev sets and skill trees")
	}
	slowtest.Skip(t, "the dev sets and skill trees of ../shared")
	skipUnderRace(t)
	if _, err := os.Stat(filepath.Join(devModelDir, "model.onnx")); err != nil {
		t.Skipf("default model not built at %s", devModelDir)
	}
	sets, _ := filepath.Glob(filepath.Join(devEvalDir, "*", "queries.jsonl"))
	if len(sets) == 0 {
		t.Skipf("no dev sets under %s", devEvalDir)
	}
	var all []string
	for _, qf := range sets {
		qs, err := eval.LoadQueries(qf)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, queryTexts(qs)...)
		set := filepath.Base(filepath.Dir(qf))
		t.Run(set, func(t *testing.T) {
			c := openDev(t, filepath.Dir(qf))
			tasks := queryTexts(qs)
			tasks = append(tasks, longTasks(tasks, 2000, 200)...)
			checkScores(t, c.Index, tasks, scoreRuns[:3], set)
		})
	}
	t.Run("corpora", func(t *testing.T) {
		if _, err := os.Stat(devCorporaDir); err != nil {
			t.Skipf("no skill corpora at %s", devCorporaDir)
		}
		c := openDev(t, gatherCorpora(t, devCorporaDir))
		tasks := all[:0:0]
		for i := 0; i < len(all); i += 10 {
			tasks = append(tasks, all[i])
		}
		tasks = append(tasks, longTasks(all, 2000, 200)...)
		checkScores(t, c.Index, tasks, scoreRuns[:3], "corpora")
	})
}

// queryTexts returns the tasks of qs.
func queryTexts(qs []eval.Query) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Query
	}
	return out
}

// longTasks joins consecutive tasks into n tasks of at least chars
// characters each, spread over the list.
func longTasks(tasks []string, chars, n int) []string {
	var out []string
	step := max(1, len(tasks)/n)
	for i := 0; i < len(tasks) && len(out) < n; i += step {
		var b strings.Builder
		for j := i; b.Len() < chars; j++ {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(tasks[j%len(tasks)])
		}
		out = append(out, b.String())
	}
	return out
}

// checkScores ranks every task under every run and compares the SHA-256 of
// each ranking's rendering with testdata/scores/<name>.txt (hashes, since
// the dev sets' skill names and tasks are not ours to copy). On a
// difference it shows the first changed ranking in full.
func checkScores(t *testing.T, ix *match.Index, tasks []string, runs []scoreRun, name string) {
	t.Helper()
	ctx := context.Background()
	var lines []string
	texts := map[string]string{}
	for _, r := range runs {
		for i, task := range tasks {
			req := skill.MatchRequest{Task: task, TopK: r.topK, Agent: r.agent,
				Options: skill.MatchOptions{Mode: r.mode, Fusion: r.fusion}}
			rk, err := ix.Rank(ctx, req, nil)
			if err != nil {
				t.Fatalf("%v task %d: %v", r, i, err)
			}
			head := fmt.Sprintf("%s/%s/%d/%s #%d", r.mode, r.fusion, r.topK, r.agent, i)
			text := rankingText(rk)
			sum := sha256.Sum256([]byte(text))
			lines = append(lines, head+" "+hex.EncodeToString(sum[:12]))
			texts[head] = text
		}
	}
	path := filepath.Join(scoresDir, name+".txt")
	got := strings.Join(lines, "\n") + "\n"
	if *updateScores {
		if err := os.MkdirAll(scoresDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := readLines(path)
	if err != nil {
		t.Fatalf("%v (run with -update-scores to create it)", err)
	}
	if got == want {
		return
	}
	wl := strings.Split(want, "\n")
	changed := 0
	for i, l := range lines {
		if i < len(wl) && wl[i] == l {
			continue
		}
		if changed == 0 {
			head, _, _ := strings.Cut(l, " #")
			t.Errorf("%s: scores changed, first at %s #%s (was %q); now:\n%s", name, head, strings.Fields(l)[1][1:],
				wl[min(i, len(wl)-1)], texts[l[:strings.LastIndex(l, " ")]])
		}
		changed++
	}
	t.Errorf("%s: %d of %d rankings changed (go test -run TestScoresUnchanged -args -update-scores to accept)", name, changed, len(lines))
}

func readLines(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteString("\n")
	}
	return b.String(), sc.Err()
}

// rankingText renders everything Rank computed, floats in hexadecimal so
// that equal text means equal bits.
func rankingText(rk *match.Ranking) string {
	x := func(v float64) string { return strconv.FormatFloat(v, 'x', -1, 64) }
	var b strings.Builder
	res := rk.Result
	f := rk.Features
	fmt.Fprintf(&b, "  rule %s p %s abstained %v %s %q verdict %s %q mode %s fusion %s degraded %v\n",
		rk.Rule, x(rk.Probability), res.Abstained, res.AbstainReason, res.AbstainDetail, res.Verdict, res.VerdictDetail,
		res.Mode, res.Fusion, res.Degraded)
	fmt.Fprintf(&b, "  features %s %s %s %s %s %s %s %s %s %s %s\n", x(f.DenseTop), x(f.DenseGap), x(f.DenseSpread),
		x(f.BM25Top), x(f.BM25Ratio), x(f.BM25Norm), x(f.Coverage), x(f.Agree), x(f.CrossRank), x(f.TaskTerms), x(f.Boost))
	for _, c := range rk.Ranked {
		fmt.Fprintf(&b, "  %s %s cos %s bm25 %s fused %s d%d b%d boost %s fired %v named %v | %s\n",
			c.Skill.Name, c.Skill.RelPath, x(c.Cosine), x(c.BM25), x(c.Fused), c.DenseRank, c.BM25Rank, x(c.TriggerBoost),
			c.TriggersFired, c.NameMentioned, c.Reason)
	}
	var names []string
	for _, c := range res.Candidates {
		names = append(names, c.Skill.Name)
	}
	fmt.Fprintf(&b, "  returned %s", strings.Join(names, ","))
	return b.String()
}
