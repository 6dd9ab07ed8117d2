package match_test

import (
	"context"
	"math"
	"testing"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

func rank(t *testing.T, ix *match.Index, task string) *match.Ranking {
	t.Helper()
	rk, err := ix.Rank(context.Background(), skill.MatchRequest{Task: task}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rk
}

// TestCatalogFeatures: cover_best is the share of the task's idf mass one
// skill holds, whatever its term frequencies; skills and vocab describe
// the catalog; no_keyword says no skill shares a word.
func TestCatalogFeatures(t *testing.T) {
	cfg := match.DefaultConfig()
	cfg.Fields.BodyChars = 0 // one analyzer group: the stemmed short fields
	ix := build(t, catalog(), cfg, nil, nil)
	f := rank(t, ix, "resize images").Features
	if math.Abs(f.CoverBest-1) > 1e-6 {
		t.Errorf("cover_best of a task whose every word one skill holds = %.4f, want 1", f.CoverBest)
	}
	if got, want := f.Skills, math.Log1p(6); math.Abs(got-want) > 1e-9 {
		t.Errorf("skills = %.4f, want log(7) = %.4f", got, want)
	}
	if f.Vocab <= math.Log1p(10) || f.NoKeyword != 0 {
		t.Errorf("vocab %.3f (want over log 11), no_keyword %v (want 0)", f.Vocab, f.NoKeyword)
	}
	// Half the task is a word no skill holds, which weighs the largest idf:
	// the cover falls below a half.
	half := rank(t, ix, "resize zebras").Features
	if half.CoverBest <= 0.2 || half.CoverBest >= 0.5 {
		t.Errorf("cover_best with one unknown word of two = %.4f, want in (0.2, 0.5)", half.CoverBest)
	}
	// Repeating the word in the skill does not raise the cover.
	rep := build(t, append(catalog(), newSkill("thumbs", "Thumbnails thumbnails thumbnails")), cfg, nil, nil)
	if a, b := rank(t, rep, "thumbnails zebras").Features.CoverBest, rank(t, rep, "thumbnail zebras").Features.CoverBest; math.Abs(a-b) > 1e-6 || a <= 0 {
		t.Errorf("cover_best %.4f and %.4f for the same forms, want equal and positive", a, b)
	}
	none := rank(t, ix, "zebras giraffes").Features
	if none.NoKeyword != 1 || none.CoverBest != 0 {
		t.Errorf("a task no skill shares a word with: no_keyword %v cover_best %v, want 1 and 0", none.NoKeyword, none.CoverBest)
	}
	// Term statistics are per catalog: the same skills with more text hold
	// a larger vocabulary.
	cfg.Fields.BodyChars = 8000
	body := build(t, catalog(), cfg, nil, nil)
	if v := rank(t, body, "resize images").Features.Vocab; v <= f.Vocab {
		t.Errorf("vocab with bodies %.3f, without %.3f: want larger", v, f.Vocab)
	}
}

// TestCoverIsTheSameUnderSumScoring: the per-field sum reads the same
// analyzer groups, so the cover features do not depend on the scoring.
func TestCoverIsTheSameUnderSumScoring(t *testing.T) {
	cfg := match.DefaultConfig()
	a := rank(t, build(t, catalog(), cfg, nil, nil), "fill the pdf form and resize images").Features
	cfg.BM25.Scoring = match.ScoringSum
	b := rank(t, build(t, catalog(), cfg, nil, nil), "fill the pdf form and resize images").Features
	if a.CoverBest <= 0 || math.Abs(a.CoverBest-b.CoverBest) > 1e-6 || a.Vocab != b.Vocab || a.Coverage != b.Coverage {
		t.Errorf("bm25f %+v, sum %+v: want the same cover, vocab and coverage", a, b)
	}
}

// TestKeywordlessTaskIsDecidedByTheThreshold: with a classifier in force,
// a task no skill shares a word with is judged by the model's cosine
// threshold alone, whatever the classifier would say.
func TestKeywordlessTaskIsDecidedByTheThreshold(t *testing.T) {
	skills := catalog()
	yes := match.Classifier{Mode: skill.ModeHybrid, Features: []string{match.FeatDenseTop},
		Mean: []float64{0}, Scale: []float64{1}, Weights: []float64{0}, Bias: 10, Cutoff: 0.5}
	cfg := match.DefaultConfig()
	cfg.Abstain.Threshold = 0.5
	cfg.Abstain.Classifiers = []match.Classifier{yes}
	weak := make([]float32, len(skills))
	for i := range weak {
		weak[i] = 1 // cosine 1/sqrt(6) = 0.41 with every skill
	}
	ix := build(t, skills, cfg, vectors(len(skills)), constEmbedder(weak))
	rk := rank(t, ix, "zebras giraffes")
	if !rk.Result.Abstained || rk.Rule != match.RuleKeywordless || rk.Result.AbstainReason != skill.AbstainBelowThreshold {
		t.Errorf("keywordless task, cosine under the threshold: rule %s, result %+v; want a keywordless abstention", rk.Rule, rk.Result)
	}
	ix = build(t, skills, cfg, vectors(len(skills)), constEmbedder(onehot(len(skills), 4)))
	if rk := rank(t, ix, "zebras giraffes"); rk.Result.Abstained || rk.Rule != match.RuleKeywordless {
		t.Errorf("keywordless task, cosine 1: rule %s, abstained %v; want served by the keywordless rule", rk.Rule, rk.Result.Abstained)
	}
	// A task that shares a word goes to the classifier.
	if rk := rank(t, ix, "slow sql"); rk.Rule != match.RuleClassifier || rk.Result.Abstained {
		t.Errorf("task with keyword evidence: rule %s, abstained %v; want the classifier, serving", rk.Rule, rk.Result.Abstained)
	}
}

// TestVerdicts: a classifier's probability under its cutoff abstains
// (no skill), between its cutoffs serves low-confidence candidates, at or
// above Confident a confident match; a full-strength name is confident
// whatever the classifier says; keyword-only matching with no threshold
// judged nothing and says low confidence; a threshold that passes says
// confident.
func TestVerdicts(t *testing.T) {
	skills := append(catalog(), newSkill("archives", "Pack and unpack archives", withTriggers("zip")))
	// A classifier whose probability is its bias: sigmoid(bias).
	at := func(p, cutoff, confident float64) match.Classifier {
		return match.Classifier{Mode: skill.ModeHybrid, Features: []string{match.FeatDenseTop},
			Mean: []float64{0}, Scale: []float64{1}, Weights: []float64{0}, Bias: math.Log(p / (1 - p)),
			Cutoff: cutoff, Confident: confident}
	}
	for _, tc := range []struct {
		name string
		cls  match.Classifier
		want skill.Verdict
	}{
		{"under the cutoff", at(0.1, 0.2, 0.6), skill.VerdictNoSkill},
		{"between the cutoffs", at(0.4, 0.2, 0.6), skill.VerdictLowConfidence},
		{"at confident", at(0.6, 0.2, 0.6), skill.VerdictConfident},
		{"no confident cutoff", at(0.4, 0.2, 0), skill.VerdictConfident},
	} {
		cfg := match.DefaultConfig()
		cfg.Abstain.Classifiers = []match.Classifier{tc.cls}
		// The constant task vector points at sql-tuning, away from the
		// skill a task below names: keywords must decide that ranking.
		cfg.Fusion.ConvexWeight = 0.1
		ix := build(t, skills, cfg, vectors(len(skills)), constEmbedder(onehot(len(skills), 4)))
		res := rank(t, ix, "slow sql").Result
		if res.Verdict != tc.want || res.VerdictDetail == "" || res.Abstained != (tc.want == skill.VerdictNoSkill) {
			t.Errorf("%s: verdict %q (%q), abstained %v; want %q", tc.name, res.Verdict, res.VerdictDetail, res.Abstained, tc.want)
		}
		if tc.want != skill.VerdictNoSkill && len(res.Candidates) == 0 {
			t.Errorf("%s: no candidates served", tc.name)
		}
		// Naming a skill in so many words is confident even under the cutoff;
		// a weaker trigger (one word) is never abstained on.
		if named := rank(t, ix, "please use the image resize skill").Result; named.Verdict != skill.VerdictConfident {
			t.Errorf("%s: a task naming its skill got %q", tc.name, named.Verdict)
		}
		weak := rank(t, ix, "zip the logs")
		if weak.Features.Boost <= 0 || weak.Rule == match.RuleExplicit {
			t.Fatalf("%s: 'zip' fired no weak trigger (boost %v, rule %s)", tc.name, weak.Features.Boost, weak.Rule)
		}
		if want := tc.want; weak.Result.Abstained || (want != skill.VerdictNoSkill && weak.Result.Verdict != want) {
			t.Errorf("%s: a task that fires a weak trigger got %q (abstained %v)", tc.name, weak.Result.Verdict, weak.Result.Abstained)
		}
	}

	cfg := match.DefaultConfig()
	cfg.Mode = skill.ModeKeyword
	ix := build(t, skills, cfg, nil, nil)
	if res := rank(t, ix, "slow sql").Result; res.Verdict != skill.VerdictLowConfidence {
		t.Errorf("keyword-only without a threshold: verdict %q, want low_confidence", res.Verdict)
	}
	cfg.Abstain.KeywordThreshold = 0.001
	ix = build(t, skills, cfg, nil, nil)
	if res := rank(t, ix, "slow sql").Result; res.Verdict != skill.VerdictConfident {
		t.Errorf("keyword-only over its threshold: verdict %q, want confident", res.Verdict)
	}
	if res := rank(t, ix, "zebras giraffes").Result; res.Verdict != skill.VerdictNoSkill || !res.Abstained {
		t.Errorf("a task no skill shares a word with: verdict %q, abstained %v", res.Verdict, res.Abstained)
	}
}
