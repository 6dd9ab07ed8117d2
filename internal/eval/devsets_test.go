package eval_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
	"github.com/mcpsag/router/models"
)

// Dev sets, real skill trees and the default model, beside the checkout;
// MCPSAG_EVAL_DIR, MCPSAG_EVAL_TRANSFER_DIR, MCPSAG_CORPORA_DIR and
// MCPSAG_MODEL_DIR override the locations.
var (
	devEvalDir     = envOr("MCPSAG_EVAL_DIR", filepath.Join("..", "..", "..", "shared", "eval"))
	devTransferDir = envOr("MCPSAG_EVAL_TRANSFER_DIR", filepath.Join("..", "..", "..", "shared", "eval-transfer"))
	devCorporaDir  = envOr("MCPSAG_CORPORA_DIR", filepath.Join("..", "..", "..", "shared", "corpora"))
	devModelDir    = envOr("MCPSAG_MODEL_DIR", filepath.Join("..", "..", "models", models.DefaultName))
)

// devModel is the dev-set tests' one open model: the corpora they build
// share its query cache, so a task ranked against several catalogs, or by
// several tests, is embedded once.
var devModel = sync.OnceValues(func() (*embed.Manager, error) {
	cfg := embed.Config{Dir: devModelDir, QueryCacheSize: 1 << 17}
	m := embed.NewManager(cfg, nil, nil)
	if err := m.Reload(context.Background(), cfg); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
})

// devStates holds a state folder per catalog the dev-set tests build, for
// the life of the test binary (removed by TestMain): a catalog built again
// by another test finds its skills' vectors in the cache instead of
// embedding thousands of skill texts again.
var devStates = struct {
	sync.Mutex
	root string
	dirs map[string]string
}{dirs: map[string]string{}}

// devState returns the state folder of the catalog under dir.
func devState(t *testing.T, dir string) string {
	t.Helper()
	devStates.Lock()
	defer devStates.Unlock()
	if d, ok := devStates.dirs[dir]; ok {
		return d
	}
	if devStates.root == "" {
		root, err := os.MkdirTemp("", "mcpsag-devsets-")
		if err != nil {
			t.Fatal(err)
		}
		devStates.root = root
	}
	d := filepath.Join(devStates.root, fmt.Sprint(len(devStates.dirs)))
	devStates.dirs[dir] = d
	return d
}

// removeDevStates removes the dev-set tests' state folders.
func removeDevStates() {
	if devStates.root != "" {
		os.RemoveAll(devStates.root)
	}
}

// openDev builds a generation of the skills under dir with the default
// model (devModel) and the router's default configuration (bundled
// calibration included), closed when t ends.
func openDev(t *testing.T, dir string) *eval.Corpus {
	t.Helper()
	m, err := devModel()
	if err != nil {
		t.Fatalf("model %s: %v", devModelDir, err)
	}
	cfg := config.Default().Match
	c, err := eval.Open(context.Background(), eval.Options{Skills: dir, ModelDir: devModelDir, Model: m, Config: &cfg,
		StateDir: devState(t, dir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.DenseErr != nil {
		t.Fatalf("model: %v", c.DenseErr)
	}
	return c
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// corporaTasks are labelled tasks for the gathered corpora, written for
// this project: tasks its skills serve.
var corporaTasks = filepath.Join("..", "..", "testdata", "corpora-tasks", "queries.jsonl")

// everydayRequests are requests of a general kind, written for this
// project, that no skill serves: trivia, arithmetic, translation, creative
// writing, summaries of well-known works, advice.
var everydayRequests = filepath.Join("..", "..", "testdata", "everyday-requests", "queries.jsonl")

// devSet is one dev set present beside the checkout: its skill root (a
// folder holding skills/) and its queries.
type devSet struct {
	name, root, queries string
	// agent: tasks of agents against real skill folders; otherwise user
	// requests against API tools.
	agent bool
}

// ndcgFloors are today's hybrid NDCG@10 of the default configuration with
// the default model, less 0.3 points: no change may cost a set more than
// that.
var ndcgFloors = map[string]float64{
	"metatool": 77.9, "seal-tools": 95.6, "skillsbench-dev": 84.7, "toollens-train": 50.5, "corpora": 96.3,
}

// bm25Gain is how far hybrid NDCG@10 must rise above BM25 alone's on each
// set: 3 points, except where BM25 alone is near the ceiling: on
// Seal-Tools (94.4) the hybrid must not fall under it, and on the corpora
// (93.6; 80 tasks, where one task moves NDCG@10 by about a point) it gains
// 2.99 today, so the guard is 2.5.
func bm25Gain(set string) float64 {
	switch set {
	case "seal-tools":
		return 0
	case "corpora":
		return 2.5
	}
	return 3
}

// devRaceCommand runs the dev-set measurements without the race detector,
// as .ci/run and the README's full run do.
const devRaceCommand = "MCPSAG_TESTS=full go test -run '^(TestDevSets|TestDevSetsForeignTasks|TestScoresUnchanged)$' ./internal/eval"

// skipUnderRace skips a dev-set measurement under the race detector: it
// ranks tens of thousands of tasks with the encoder on one goroutine at a
// time, which the detector slows several times and has nothing to check in.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceDetector {
		t.Skipf("measures the dev sets; runs without the race detector: %s", devRaceCommand)
	}
}

// devSets lists the dev sets present: every set under ../shared/eval and
// ../shared/eval-transfer, and the corpora tasks against the gathered
// ../shared/corpora. It skips the test when the default model or every set
// is absent.
func devSets(t *testing.T) []devSet {
	t.Helper()
	if testing.Short() {
		t.Skip("slow: evaluates the dev sets")
	}
	slowtest.Skip(t, "evaluates the dev sets of ../shared")
	skipUnderRace(t)
	if _, err := os.Stat(filepath.Join(devModelDir, "model.onnx")); err != nil {
		t.Skipf("default model not built at %s", devModelDir)
	}
	var sets []devSet
	for _, dir := range []string{devEvalDir, devTransferDir} {
		found, _ := filepath.Glob(filepath.Join(dir, "*", "queries.jsonl"))
		for _, qf := range found {
			root := filepath.Dir(qf)
			name := filepath.Base(root)
			sets = append(sets, devSet{name: name, root: root, queries: qf, agent: name == "skillsbench-dev"})
		}
	}
	if _, err := os.Stat(devCorporaDir); err == nil {
		sets = append(sets, devSet{name: "corpora", root: gatherCorpora(t, devCorporaDir), queries: corporaTasks, agent: true})
	} else {
		t.Logf("no skill corpora at %s: the corpora tasks are not evaluated", devCorporaDir)
	}
	if len(sets) == 0 {
		t.Skipf("no dev sets under %s or %s", devEvalDir, devTransferDir)
	}
	return sets
}

// openSet builds a generation of the set's catalog (openDev).
func openSet(t *testing.T, s devSet) *eval.Corpus {
	t.Helper()
	return openDev(t, s.root)
}

// TestDevSets guards the routing goals on every dev set present, with the
// default configuration as the router runs it:
//   - ranking: hybrid NDCG@10 at least BM25 alone's plus bm25Gain and the
//     reference BM25 of ../shared/eval/bm25_baseline.py (body variant, when
//     python3 runs it); hybrid Hit@1 and Recall@5 at least BM25's; no set
//     more than 0.3 NDCG@10 points under today's. Dense alone is logged,
//     not bounded: the default model was fine-tuned on these sets, so in
//     sample its dense ranking can beat the hybrid that serves catalogs it
//     has not seen (docs/matching.md has the left-out figures);
//   - verdicts: at most 2% of the answerable tasks abstained on although a
//     relevant skill was in the top 3, none of those that name their skill
//     or fire its trigger, and Hit@1 end to end within a point of the
//     ranking's.
func TestDevSets(t *testing.T) {
	sets := devSets(t)
	ref := referenceNDCG(t, sets)
	for _, s := range sets {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			c := openSet(t, s)
			qs, err := eval.LoadQueries(s.queries)
			if err != nil {
				t.Fatal(err)
			}
			got := map[skill.MatchMode]eval.Ranking{}
			var hybrid *eval.Report
			for _, mode := range []skill.MatchMode{skill.ModeKeyword, skill.ModeDense, skill.ModeHybrid} {
				rep, err := c.Evaluate(ctx, qs, eval.RunOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				got[mode] = rep.Ranking
				hybrid = rep
				t.Logf("%-6s NDCG@10 %.2f  Recall@5 %.2f  Hit@1 %.2f", mode, rep.Ranking.NDCG10, rep.Ranking.R5, rep.Ranking.Hit1)
			}
			h, b := got[skill.ModeHybrid], got[skill.ModeKeyword]
			if gain := bm25Gain(s.name); h.NDCG10 < b.NDCG10+gain {
				t.Errorf("NDCG@10: hybrid %.2f is under bm25 %.2f + %g", h.NDCG10, b.NDCG10, gain)
			}
			for _, m := range []struct {
				name    string
				hyb, bm float64
			}{{"Recall@5", h.R5, b.R5}, {"Hit@1", h.Hit1, b.Hit1}} {
				if m.hyb < m.bm {
					t.Errorf("%s: hybrid %.2f is below bm25 %.2f", m.name, m.hyb, m.bm)
				}
			}
			if r, ok := ref[s.name]; ok && h.NDCG10 < r {
				t.Errorf("NDCG@10: hybrid %.2f is below the reference BM25's %.2f", h.NDCG10, r)
			}
			if floor, ok := ndcgFloors[s.name]; ok && h.NDCG10 < floor {
				t.Errorf("NDCG@10: hybrid %.2f is under its floor %.2f", h.NDCG10, floor)
			}

			v := hybrid.Verdicts.NeedSkill
			t.Logf("hidden hits %d of %d (%.1f%%); %d confident, %d low-confidence, %d no skill; Hit@1 %.1f, end to end %.1f",
				hybrid.HiddenHits, hybrid.NeedSkill, hybrid.HiddenHitShare, v.Confident, v.LowConfidence, v.NoSkill,
				hybrid.Ranking.Hit1, hybrid.EndToEndHit1)
			if hybrid.HiddenHitShare > 2 {
				t.Errorf("abstained on %d of %d answerable tasks although a relevant skill was in the top 3 (%.1f%%), over 2%%",
					hybrid.HiddenHits, hybrid.NeedSkill, hybrid.HiddenHitShare)
			}
			if hybrid.NamedAbstained > 0 {
				t.Errorf("abstained on %d of %d tasks that name their skill or fire its trigger", hybrid.NamedAbstained, hybrid.Named)
			}
			if hybrid.EndToEndHit1 < hybrid.Ranking.Hit1-1 {
				t.Errorf("Hit@1 end to end %.2f is more than a point under the ranking's %.2f", hybrid.EndToEndHit1, hybrid.Ranking.Hit1)
			}
		})
	}
}

// TestDevSetsForeignTasks guards the cross-catalog goal: a set's
// answerable tasks, run against the catalog of a set of the other kind
// (user requests for API tools against the gathered skill folders; agent
// tasks against the MetaTool and ToolLens tools), which cannot serve them,
// are given a confident match at most 10% of the time. The share abstained
// on outright and the tasks served confidently are logged: labels are noisy
// at the edges (a web-search skill can serve a news request). Requests of a
// general kind (everydayRequests) get no confident match from the gathered
// skill folders at all.
func TestDevSetsForeignTasks(t *testing.T) {
	sets := devSets(t)
	byName := map[string]devSet{}
	for _, s := range sets {
		byName[s.name] = s
	}
	catalogs := map[string]*eval.Corpus{}
	for _, to := range []string{"corpora", "metatool", "toollens-train"} {
		if s, ok := byName[to]; ok {
			catalogs[to] = openSet(t, s)
		}
	}
	pairs := 0
	for _, from := range sets {
		for _, to := range []string{"corpora", "metatool", "toollens-train"} {
			target, ok := byName[to]
			if !ok || from.name == to || from.agent == target.agent {
				continue
			}
			pairs++
			t.Run(from.name+">"+to, func(t *testing.T) {
				qs, err := eval.LoadQueries(from.queries)
				if err != nil {
					t.Fatal(err)
				}
				cr, err := eval.CrossCatalog(context.Background(), catalogs[to].Index, qs, eval.CrossOptions{N: 500, Run: eval.RunOptions{Set: from.name}})
				if err != nil {
					t.Fatal(err)
				}
				confident := 100 - cr.Rate - cr.LowRate
				t.Logf("%d tasks: %.1f%% abstained on, %.1f%% low-confidence, %.1f%% confident", cr.Tasks, cr.Rate, cr.LowRate, confident)
				if confident > 10 {
					shown := 0
					for _, s := range cr.Served {
						if s.Verdict == string(skill.VerdictConfident) && shown < 20 {
							shown++
							t.Logf("confident %s -> %s: %s", s.ID, s.Skill, s.Query)
						}
					}
					t.Errorf("%.1f%% of foreign tasks got a confident match, over 10%%", confident)
				}
			})
		}
	}
	if c, ok := catalogs["corpora"]; ok {
		pairs++
		t.Run("everyday>corpora", func(t *testing.T) {
			qs, err := eval.LoadQueries(everydayRequests)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := c.Evaluate(context.Background(), qs, eval.RunOptions{Mode: skill.ModeHybrid, PerQuery: true})
			if err != nil {
				t.Fatal(err)
			}
			v := rep.Verdicts.NoSkill
			t.Logf("%d requests: %d abstained on, %d low-confidence, %d confident", len(qs), v.NoSkill, v.LowConfidence, v.Confident)
			if v.NoSkill+v.LowConfidence+v.Confident != len(qs) {
				t.Fatalf("verdicts of %d requests counted, want %d", v.NoSkill+v.LowConfidence+v.Confident, len(qs))
			}
			text := map[string]string{}
			for _, q := range qs {
				text[q.ID] = q.Query
			}
			for _, q := range rep.PerQuery {
				if q.Verdict == string(skill.VerdictConfident) {
					t.Errorf("a request of a general kind got a confident match: %q -> %v", text[q.ID], q.Returned)
				}
			}
		})
	}
	if pairs == 0 {
		t.Skip("no pair of dev sets of different kinds is present")
	}
}

// referenceNDCG runs ../shared/eval/bm25_baseline.py (body variant) on
// every set and returns its NDCG@10 by set name; empty, with a log line,
// when python3 or the script is missing.
func referenceNDCG(t *testing.T, sets []devSet) map[string]float64 {
	t.Helper()
	script := filepath.Join(devEvalDir, "bm25_baseline.py")
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Logf("python3 not found: hybrid NDCG@10 is not compared with the reference BM25")
		return nil
	}
	if _, err := os.Stat(script); err != nil {
		t.Logf("no reference BM25 at %s: hybrid NDCG@10 is not compared with it", script)
		return nil
	}
	out := map[string]float64{}
	for _, s := range sets {
		js := filepath.Join(t.TempDir(), "ref.json")
		cmd := exec.Command(py, script, "--variant", "body", "--queries", s.queries, "--label", s.name, "--json", js, s.root)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("reference BM25 on %s: %v\n%s", s.name, err, b)
		}
		f, err := os.Open(js)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var r struct {
				Rows []struct {
					Group string  `json:"group"`
					NDCG  float64 `json:"NDCG@10"`
				} `json:"rows"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("reference BM25 output: %v", err)
			}
			for _, row := range r.Rows {
				if row.Group == "all" {
					out[s.name] = row.NDCG
				}
			}
		}
		f.Close()
		t.Logf("reference BM25 (body) on %s: NDCG@10 %.2f", s.name, out[s.name])
	}
	return out
}

// gatherCorpora copies every folder holding a SKILL.md under src into one
// temporary skill root (a folder whose name is taken gets a suffix).
func gatherCorpora(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "corpora")
	taken := map[string]bool{}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "SKILL.md" {
			return err
		}
		dir := filepath.Dir(p)
		name := filepath.Base(dir)
		for i := 2; taken[name]; i++ {
			name = fmt.Sprintf("%s-%d", filepath.Base(dir), i)
		}
		taken[name] = true
		return os.CopyFS(filepath.Join(dst, "skills", name), os.DirFS(dir))
	})
	if err != nil {
		t.Fatalf("gather %s: %v", src, err)
	}
	return dst
}
