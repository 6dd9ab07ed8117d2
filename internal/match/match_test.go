package match_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

func TestRequestValidation(t *testing.T) {
	ix := build(t, catalog(), match.DefaultConfig(), nil, nil)
	tests := []struct {
		name   string
		req    skill.MatchRequest
		field  string
		reason string
	}{
		{"empty", skill.MatchRequest{Task: ""}, skill.FieldTask, skill.ReasonTaskEmpty},
		{"whitespace", skill.MatchRequest{Task: " \t\n "}, skill.FieldTask, skill.ReasonTaskEmpty},
		{"control characters only", skill.MatchRequest{Task: "\x00\x01\x7f"}, skill.FieldTask, skill.ReasonTaskEmpty},
		{"one MiB", skill.MatchRequest{Task: strings.Repeat("pdf ", 1<<18)}, skill.FieldTask, skill.ReasonTaskTooLarge},
		{"one byte over", skill.MatchRequest{Task: strings.Repeat("a", match.DefaultMaxTaskBytes+1)}, skill.FieldTask, skill.ReasonTaskTooLarge},
		{"invalid UTF-8", skill.MatchRequest{Task: "fill \xff\xfe form"}, skill.FieldTask, skill.ReasonTaskEncoding},
		{"negative top_k", skill.MatchRequest{Task: "pdf", TopK: -1}, skill.FieldTopK, skill.ReasonTopKRange},
		{"top_k over max", skill.MatchRequest{Task: "pdf", TopK: match.DefaultMaxTopK + 1}, skill.FieldTopK, skill.ReasonTopKRange},
		{"top_k 10^9", skill.MatchRequest{Task: "pdf", TopK: 1_000_000_000}, skill.FieldTopK, skill.ReasonTopKRange},
		{"unknown mode", skill.MatchRequest{Task: "pdf", Options: skill.MatchOptions{Mode: "magic"}}, skill.FieldMode, ""},
		{"unknown fusion", skill.MatchRequest{Task: "pdf", Options: skill.MatchOptions{Fusion: "average"}}, skill.FieldFusion, ""},
		{"NaN threshold", skill.MatchRequest{Task: "pdf", Options: skill.MatchOptions{Threshold: ptr(math.NaN())}}, skill.FieldThreshold, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ix.Match(context.Background(), tc.req, nil)
			var e *skill.Error
			if !errors.As(err, &e) {
				t.Fatalf("got error %v, want a *skill.Error", err)
			}
			if e.Code != skill.CodeInvalidArgument || e.Field != tc.field || e.Reason != tc.reason {
				t.Errorf("got code %v field %q reason %q, want invalid_argument %q %q", e.Code, e.Field, e.Reason, tc.field, tc.reason)
			}
		})
	}
}

func TestTopKDefaultsAndBounds(t *testing.T) {
	cfg := match.DefaultConfig()
	cfg.Abstain.Relative = 0 // keep every candidate
	ix := build(t, catalog(), cfg, nil, nil)
	for _, tc := range []struct{ topK, want int }{{0, match.DefaultTopK}, {1, 1}, {50, 4}} {
		res := mustMatch(t, ix, skill.MatchRequest{Task: "pdf files, sql queries and images", TopK: tc.topK})
		if len(res.Candidates) != tc.want {
			t.Errorf("top_k %d: got %d candidates %v, want %d", tc.topK, len(res.Candidates), names(res.Candidates), tc.want)
		}
	}
}

func TestExclusions(t *testing.T) {
	skills := []*skill.Skill{
		newSkill("pdf-forms", "Fill in PDF forms"),
		newSkill("pdf-secret", "Fill in PDF forms for the legal team", hidden),
		newSkill("pdf-manual", "Fill in PDF forms by hand only", noModel),
		newSkill("pdf-legacy", "Fill in PDF forms the old way", disabled),
		newSkill("pdf-reviewer", "Fill in PDF forms for reviewers", forAgent("reviewer")),
	}
	ix := build(t, skills, match.DefaultConfig(), nil, nil)
	if st := ix.Stats(); st.Skills != 3 || st.Excluded != 2 || st.Hidden != 1 {
		t.Errorf("stats %+v: want 3 indexed, 2 excluded, 1 hidden", st)
	}
	task := "fill in pdf forms"
	tests := []struct {
		name    string
		req     skill.MatchRequest
		visible match.Visibility
		want    []string
	}{
		{"global caller", skill.MatchRequest{Task: task, TopK: 10}, nil, []string{"pdf-forms"}},
		{"hidden on request", skill.MatchRequest{Task: task, TopK: 10, Options: skill.MatchOptions{IncludeHidden: true}}, nil, []string{"pdf-forms", "pdf-secret"}},
		{"agent sees its own", skill.MatchRequest{Task: task, TopK: 10, Agent: "reviewer"}, nil, []string{"pdf-forms", "pdf-reviewer"}},
		{"unknown agent sees global only", skill.MatchRequest{Task: task, TopK: 10, Agent: "nobody"}, nil, []string{"pdf-forms"}},
		{"caller's visibility rule", skill.MatchRequest{Task: task, TopK: 10, Options: skill.MatchOptions{IncludeHidden: true}},
			func(s *skill.Skill) bool { return s.Name != "pdf-forms" }, []string{"pdf-reviewer", "pdf-secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := match.DefaultConfig()
			cfg.Abstain.Relative = 0
			ix, err := ix.WithConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ix.Match(context.Background(), tc.req, tc.visible)
			if err != nil {
				t.Fatal(err)
			}
			got := names(res.Candidates)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNoSkillsAndNoMatch(t *testing.T) {
	ix := build(t, catalog(), match.DefaultConfig(), nil, nil)
	res, err := ix.Match(context.Background(), skill.MatchRequest{Task: "fill pdf form"}, func(*skill.Skill) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if !res.Abstained || res.AbstainReason != skill.AbstainNoSkills || len(res.Candidates) != 0 {
		t.Errorf("nothing visible: got %+v, want abstained no_skills", res)
	}
	res = mustMatch(t, ix, skill.MatchRequest{Task: "zebra quokka"})
	if !res.Abstained || res.AbstainReason != skill.AbstainNoMatch {
		t.Errorf("unknown words: got %+v, want abstained no_match", res)
	}
	if res.Generation != 7 {
		t.Errorf("generation %d, want 7", res.Generation)
	}
}

// vectors gives each catalog skill its own axis, so the cosine with a
// one-hot query picks one skill.
func vectors(n int) [][]float32 {
	vs := make([][]float32, n)
	for i := range vs {
		vs[i] = onehot(n, i)
	}
	return vs
}

func TestDegradedWhenEmbeddingsFail(t *testing.T) {
	skills := catalog()
	tests := []struct {
		name string
		vecs [][]float32
		emb  match.QueryEmbedder
		mode skill.MatchMode
		want bool
	}{
		{"embedder fails", vectors(len(skills)), failingEmbedder, skill.ModeHybrid, true},
		{"no embedder", vectors(len(skills)), nil, skill.ModeHybrid, true},
		{"no vectors", nil, constEmbedder(onehot(len(skills), 0)), skill.ModeDense, true},
		{"wrong dimension", vectors(len(skills)), constEmbedder(onehot(3, 0)), skill.ModeHybrid, true},
		{"zero vector", vectors(len(skills)), constEmbedder(make([]float32, len(skills))), skill.ModeHybrid, true},
		{"keyword mode asks for no embedding", vectors(len(skills)), failingEmbedder, skill.ModeKeyword, false},
		{"healthy", vectors(len(skills)), constEmbedder(onehot(len(skills), 0)), skill.ModeHybrid, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ix := build(t, skills, match.DefaultConfig(), tc.vecs, tc.emb)
			res := mustMatch(t, ix, skill.MatchRequest{Task: "fill a pdf form", Options: skill.MatchOptions{Mode: tc.mode}})
			if res.Degraded != tc.want {
				t.Errorf("degraded %v, want %v", res.Degraded, tc.want)
			}
			if tc.want && res.Mode != skill.ModeKeyword {
				t.Errorf("mode %q, want bm25 when degraded", res.Mode)
			}
			if len(res.Candidates) == 0 || res.Candidates[0].Skill.Name != "pdf-forms" {
				t.Errorf("got %v, want pdf-forms first", names(res.Candidates))
			}
		})
	}
}

func TestCanceledContext(t *testing.T) {
	ix := build(t, catalog(), match.DefaultConfig(), vectors(6), fakeEmbedder{embed: func(ctx context.Context, _ string) ([]float32, error) {
		return nil, ctx.Err()
	}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Match(ctx, skill.MatchRequest{Task: "pdf"}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

// TestAdaptiveFusion checks that the adaptive rule's dense share follows
// the share of the task's terms that the index lacks: a task the index fully
// covers is ranked by BM25 alone, one made mostly of unknown words mostly by
// the dense ranking.
func TestAdaptiveFusion(t *testing.T) {
	skills := catalog()
	cfg := match.DefaultConfig()
	cfg.Fields.BodyChars = 0 // only the stemmed fields: coverage is easy to count
	cfg.Fusion.Rule = skill.FusionAdaptive
	cfg.Fusion.AdaptiveWeight = 1
	cfg.Fusion.ConvexWeight = 0.1
	cfg.Abstain.Relative = 0
	// Dense wants image-resize; the known words point at sql-tuning.
	ix := build(t, skills, cfg, vectors(len(skills)), constEmbedder(onehot(len(skills), 5)))
	tests := []struct {
		task     string
		fusion   skill.Fusion
		coverage float64
		first    string
	}{
		{"slow sql queries", "", 1, "sql-tuning"},                                  // dense share 0
		{"slow sql grobbles wizzle frumps", "", 0.4, "image-resize"},               // dense share 0.6
		{"slow sql grobbles wizzle frumps", skill.FusionConvex, 0.4, "sql-tuning"}, // fixed share 0.1
	}
	for _, tc := range tests {
		rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: tc.task, TopK: 5, Options: skill.MatchOptions{Fusion: tc.fusion}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rk.Features.Coverage; math.Abs(got-tc.coverage) > 1e-9 {
			t.Errorf("%q: coverage %v, want %v", tc.task, got, tc.coverage)
		}
		if got := rk.Ranked[0].Skill.Name; got != tc.first {
			t.Errorf("%q (%s): first %s, want %s (all %v)", tc.task, tc.fusion, got, tc.first, names(rk.Ranked))
		}
	}
}

func TestFusionRules(t *testing.T) {
	// Dense prefers image-resize (axis 5) slightly over sql-tuning (axis
	// 4); the task's words match sql-tuning only.
	skills := catalog()
	q := make([]float32, len(skills))
	q[5], q[4] = 0.7, 0.695
	cfg := match.DefaultConfig()
	cfg.Abstain.Relative = 0
	ix := build(t, skills, cfg, vectors(len(skills)), constEmbedder(q))
	task := "slow sql queries"
	tests := []struct {
		mode   skill.MatchMode
		fusion skill.Fusion
		first  string
	}{
		{skill.ModeDense, "", "image-resize"},
		{skill.ModeKeyword, "", "sql-tuning"},
		{skill.ModeHybrid, skill.FusionTiebreak, "sql-tuning"}, // cosines within epsilon: BM25 decides
		{skill.ModeHybrid, skill.FusionConvex, "sql-tuning"},
		{skill.ModeHybrid, skill.FusionRRF, "sql-tuning"},
		{skill.ModeHybrid, skill.FusionAdaptive, "sql-tuning"},
	}
	for _, tc := range tests {
		t.Run(string(tc.mode)+"/"+string(tc.fusion), func(t *testing.T) {
			res := mustMatch(t, ix, skill.MatchRequest{Task: task, TopK: 5, Options: skill.MatchOptions{Mode: tc.mode, Fusion: tc.fusion}})
			if got := res.Candidates[0].Skill.Name; got != tc.first {
				t.Errorf("first %s, want %s (all %v)", got, tc.first, names(res.Candidates))
			}
			if tc.mode == skill.ModeHybrid && res.Fusion != tc.fusion {
				t.Errorf("result fusion %q, want %q", res.Fusion, tc.fusion)
			}
		})
	}
	// Outside the epsilon, tiebreak follows the cosine.
	q[4] = 0.5
	ix = build(t, skills, cfg, vectors(len(skills)), constEmbedder(q))
	res := mustMatch(t, ix, skill.MatchRequest{Task: task, Options: skill.MatchOptions{Fusion: skill.FusionTiebreak}})
	if got := res.Candidates[0].Skill.Name; got != "image-resize" {
		t.Errorf("tiebreak with a clear cosine winner: first %s, want image-resize", got)
	}
}

func TestExplanations(t *testing.T) {
	skills := catalog()
	ix := build(t, skills, match.DefaultConfig(), vectors(len(skills)), constEmbedder(onehot(len(skills), 0)))
	res := mustMatch(t, ix, skill.MatchRequest{Task: "please fill pdf form for me", TopK: 3})
	c := res.Candidates[0]
	if c.Skill.Name != "pdf-forms" || c.DenseRank != 1 || c.BM25Rank != 1 || c.Cosine < 0.99 || c.BM25 <= 0 {
		t.Errorf("first candidate %+v: want pdf-forms ranked first in both lists", c)
	}
	if !slices.Equal(c.TriggersFired, []string{"fill pdf form"}) || c.TriggerBoost <= 0 || !c.NameMentioned {
		t.Errorf("triggers %v boost %v name %v: want the trigger and the name to fire", c.TriggersFired, c.TriggerBoost, c.NameMentioned)
	}
	for _, c := range res.Candidates {
		if c.Reason == "" || c.Fused == 0 {
			t.Errorf("%s: empty reason or fused score: %+v", c.Skill.Name, c)
		}
	}
	if !strings.Contains(c.Reason, `trigger "fill pdf form"`) || !strings.Contains(c.Reason, "dense #1") {
		t.Errorf("reason %q lacks the trigger or the dense rank", c.Reason)
	}
}

func TestThresholdAndClassifier(t *testing.T) {
	skills := catalog()
	q := onehot(len(skills), 4) // sql-tuning, cosine 1
	cfg := match.DefaultConfig()
	cfg.Abstain.Threshold = 0.8
	ix := build(t, skills, cfg, vectors(len(skills)), constEmbedder(q))
	if res := mustMatch(t, ix, skill.MatchRequest{Task: "slow sql"}); res.Abstained {
		t.Errorf("cosine 1 over threshold 0.8 abstained: %+v", res)
	}
	res := mustMatch(t, ix, skill.MatchRequest{Task: "slow sql", Options: skill.MatchOptions{Threshold: ptr(1.5)}})
	if !res.Abstained || res.AbstainReason != skill.AbstainBelowThreshold || len(res.Candidates) != 0 {
		t.Errorf("request threshold 1.5: got %+v, want below_threshold", res)
	}
	if !strings.Contains(res.AbstainDetail, "1.000") {
		t.Errorf("detail %q does not give the cosine", res.AbstainDetail)
	}

	// A classifier that always says no (bias -10).
	no := match.Classifier{Mode: skill.ModeHybrid, Features: []string{match.FeatDenseTop},
		Mean: []float64{0}, Scale: []float64{1}, Weights: []float64{0}, Bias: -10, Cutoff: 0.5}
	cfg.Abstain.Classifiers = []match.Classifier{no}
	ix, err := ix.WithConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: "slow sql"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rk.Result.Abstained || rk.Result.AbstainReason != skill.AbstainCalibrated || rk.Rule != match.RuleClassifier || rk.Probability > 0.01 {
		t.Errorf("classifier: got %+v rule %s p %.3f, want calibrated abstention", rk.Result, rk.Rule, rk.Probability)
	}
	if len(rk.Ranked) == 0 {
		t.Error("Ranking lost the ranked candidates of an abstained match")
	}
	// The request's threshold replaces the classifier.
	if res := mustMatch(t, ix, skill.MatchRequest{Task: "slow sql", Options: skill.MatchOptions{Threshold: ptr(0.5)}}); res.Abstained {
		t.Errorf("request threshold did not replace the classifier: %+v", res)
	}
	// A classifier fitted with another model is not used.
	no.Model = "another-model"
	cfg.Abstain.Classifiers = []match.Classifier{no}
	if ix, err = ix.WithConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if res := mustMatch(t, ix, skill.MatchRequest{Task: "slow sql"}); res.Abstained {
		t.Errorf("classifier of another model was used: %+v", res)
	}
	// Keyword-only matching uses the keyword threshold.
	cfg.Abstain.KeywordThreshold = 1000
	if ix, err = ix.WithConfig(cfg); err != nil {
		t.Fatal(err)
	}
	res = mustMatch(t, ix, skill.MatchRequest{Task: "slow sql", Options: skill.MatchOptions{Mode: skill.ModeKeyword}})
	if !res.Abstained || res.AbstainReason != skill.AbstainBelowThreshold {
		t.Errorf("keyword threshold: got %+v", res)
	}
}

// TestCommonWordTriggerCannotLiftOverThreshold is the rule: a
// single common word is never enough, a specific phrase is.
func TestCommonWordTriggerCannotLiftOverThreshold(t *testing.T) {
	skills := catalog()
	skills = append(skills,
		newSkill("weather", "Show the weather forecast for a city", withTriggers("file", "data", "the")),
		newSkill("crm-sync", "Sync contacts with the CRM", withTriggers("sync crm contacts")),
	)
	n := len(skills)
	// The task is about none of the skills: every cosine is 0.
	q := make([]float32, n+1)
	q[n] = 1
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = onehot(n+1, i)
	}
	cfg := match.DefaultConfig()
	cfg.Abstain.Threshold = 0.3
	cfg.Triggers.WordBoost = 1 // even the largest one-word boost
	ix := build(t, skills, cfg, vecs, constEmbedder(q))
	for _, task := range []string{"send me the file", "which data do you have", "file data file data"} {
		rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: task}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !rk.Result.Abstained {
			t.Errorf("%q: a one-word trigger lifted %v over the threshold (rule %s)", task, names(rk.Result.Candidates), rk.Rule)
		}
	}
	res := mustMatch(t, ix, skill.MatchRequest{Task: "please sync CRM contacts tonight"})
	if res.Abstained || res.Candidates[0].Skill.Name != "crm-sync" {
		t.Errorf("explicit phrase: got %+v, want crm-sync", res)
	}
	cfg.Triggers.Explicit = false
	ix, err := ix.WithConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustMatch(t, ix, skill.MatchRequest{Task: "please sync CRM contacts tonight"}); !res.Abstained {
		t.Errorf("with explicit off the phrase still overrode the threshold: %+v", res)
	}
}

func TestPhraseOfCommonWordsIsWeak(t *testing.T) {
	// "file" and "data" appear in every skill, so the phrase "data file"
	// carries little information: a small boost, never explicit.
	skills := []*skill.Skill{
		newSkill("a", "Read a data file", withTriggers("data file")),
		newSkill("b", "Write a data file"),
		newSkill("c", "Check a data file"),
		newSkill("d", "Merge a data file with another file"),
	}
	cfg := match.DefaultConfig()
	cfg.Abstain.Threshold = 0.99
	q := []float32{0, 0, 0, 0, 1}
	vecs := [][]float32{{1, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}}
	ix := build(t, skills, cfg, vecs, constEmbedder(q))
	rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: "data file"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rk.Result.Abstained || rk.Rule == match.RuleExplicit {
		t.Errorf("a phrase of common words overrode abstention: %+v", rk.Result)
	}
	if b := rk.Ranked[0].TriggerBoost; b >= cfg.Triggers.PhraseBoost/2 {
		t.Errorf("boost %.3f for a phrase of common words, want under half of %.2f", b, cfg.Triggers.PhraseBoost)
	}
}

func TestCutOffRules(t *testing.T) {
	skills := catalog()
	cfg := match.DefaultConfig()
	cfg.Abstain.Relative = 0
	ix := build(t, skills, cfg, nil, nil)
	all := mustMatch(t, ix, skill.MatchRequest{Task: "pdf forms and sql queries and images", TopK: 10}).Candidates
	if len(all) < 3 {
		t.Fatalf("want at least 3 candidates, got %v", names(all))
	}
	cfg.Abstain.Relative = 0.999
	rel, err := ix.WithConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := mustMatch(t, rel, skill.MatchRequest{Task: "pdf forms and sql queries and images", TopK: 10}).Candidates
	for _, c := range got {
		if c.Fused < 0.999*got[0].Fused {
			t.Errorf("relative rule kept %s at %.3f of %.3f", c.Skill.Name, c.Fused, got[0].Fused)
		}
	}
	cfg.Abstain.Relative = 0
	cfg.Abstain.Margin = 0.0001
	mar, err := ix.WithConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got = mustMatch(t, mar, skill.MatchRequest{Task: "fill pdf form please", TopK: 10}).Candidates
	if len(got) != 1 {
		t.Errorf("margin rule with a clear winner returned %v", names(got))
	}
}

func TestMatchIsDeterministicAndConcurrent(t *testing.T) {
	skills := catalog()
	ix := build(t, skills, match.DefaultConfig(), vectors(len(skills)), constEmbedder(onehot(len(skills), 2)))
	want := mustMatch(t, ix, skill.MatchRequest{Task: "deploy pdf sql images", TopK: 5})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := ix.Match(context.Background(), skill.MatchRequest{Task: "deploy pdf sql images", TopK: 5}, nil)
				if err != nil || !slices.Equal(names(got.Candidates), names(want.Candidates)) {
					t.Errorf("concurrent match: %v %v, want %v", err, names(got.Candidates), names(want.Candidates))
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestEmptyIndex(t *testing.T) {
	ix := build(t, nil, match.DefaultConfig(), nil, nil)
	res := mustMatch(t, ix, skill.MatchRequest{Task: "anything"})
	if !res.Abstained || res.AbstainReason != skill.AbstainNoSkills {
		t.Errorf("empty index: got %+v, want no_skills", res)
	}
}

func TestBodyIsIndexed(t *testing.T) {
	skills := []*skill.Skill{newSkill("alpha", "First tool"), newSkill("beta", "Second tool")}
	body := func(s *skill.Skill) (string, error) {
		if s.Name == "beta" {
			return "Handles quarterly xylophone inventories.", nil
		}
		return "", errors.New("no body")
	}
	ix, err := match.Build(context.Background(), match.BuildInput{Skills: skills, Body: body, Config: match.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Stats().BodyErrors != 1 {
		t.Errorf("body errors %d, want 1", ix.Stats().BodyErrors)
	}
	res := mustMatch(t, ix, skill.MatchRequest{Task: "xylophone inventories"})
	if res.Abstained || res.Candidates[0].Skill.Name != "beta" {
		t.Errorf("body words did not match: %+v", res)
	}
	cfg := match.DefaultConfig()
	cfg.Fields.BodyChars = 0
	ix, err = match.Build(context.Background(), match.BuildInput{Skills: skills, Body: body, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if res := mustMatch(t, ix, skill.MatchRequest{Task: "xylophone inventories"}); !res.Abstained {
		t.Errorf("body indexed although body_chars is 0: %+v", res)
	}
}

func TestWithConfigRejectsIndexChanges(t *testing.T) {
	ix := build(t, catalog(), match.DefaultConfig(), nil, nil)
	for name, change := range map[string]func(*match.Config){
		"analyzer":   func(c *match.Config) { c.Fields.Description.Analyzer = match.AnalyzerPlain },
		"field off":  func(c *match.Config) { c.Fields.Tags.Weight = 0 },
		"body chars": func(c *match.Config) { c.Fields.BodyChars = 100 },
		"invalid":    func(c *match.Config) { c.Fusion.ConvexWeight = 2 },
	} {
		cfg := match.DefaultConfig()
		change(&cfg)
		if _, err := ix.WithConfig(cfg); err == nil {
			t.Errorf("%s: WithConfig accepted a change that needs a rebuild", name)
		}
	}
	cfg := match.DefaultConfig()
	cfg.Fields.Name.Weight = 3
	cfg.Fusion.Rule = skill.FusionRRF
	if _, err := ix.WithConfig(cfg); err != nil {
		t.Errorf("query-time change rejected: %v", err)
	}
}
