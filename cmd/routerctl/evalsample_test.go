package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The labelled sample the README's eval command uses, over the examples/
// workspace.
var (
	sampleSkills  = filepath.Join("..", "..", "examples")
	sampleQueries = filepath.Join("..", "..", "testdata", "eval-sample", "queries.jsonl")
)

// TestEvalSample runs the README's eval command on the shipped sample and
// holds the figures to floors under what the bundled model reaches (Hit@1
// 100, NDCG@10 100, none of the 10 queries that need no skill given a
// confident match, 2 of 28 answerable ones hidden by an abstention, when
// this was written): a broken model, index, fusion or verdict path falls
// below them.
func TestEvalSample(t *testing.T) {
	type query struct {
		ID       string   `json:"id"`
		Query    string   `json:"query"`
		Relevant []string `json:"relevant"`
	}
	f, err := os.Open(sampleQueries)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var queries []query
	ids := map[string]bool{}
	var needSkill int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q query
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&q); err != nil || q.ID == "" || q.Query == "" || q.Relevant == nil {
			t.Fatalf("line %d: want {\"id\", \"query\", \"relevant\": [...]}: %v", len(queries)+1, err)
		}
		if ids[q.ID] {
			t.Errorf("duplicate id %s", q.ID)
		}
		ids[q.ID] = true
		for _, name := range q.Relevant {
			if _, err := os.Stat(filepath.Join(sampleSkills, "skills", name, "SKILL.md")); err != nil {
				t.Errorf("%s: relevant skill %s is not in examples/skills", q.ID, name)
			}
		}
		if len(q.Relevant) > 0 {
			needSkill++
		}
		queries = append(queries, q)
	}
	if needSkill < 20 || len(queries)-needSkill < 5 {
		t.Fatalf("%d queries need a skill and %d none: want at least 20 and 5", needSkill, len(queries)-needSkill)
	}

	res := ctl(t, "--json", "eval", "--skills", sampleSkills, "--queries", sampleQueries)
	if res.code != 0 {
		t.Fatalf("eval: exit %d\n%s", res.code, res.stderr)
	}
	var rep struct {
		Queries        int  `json:"queries"`
		NeedSkill      int  `json:"need_skill"`
		NoSkill        int  `json:"no_skill"`
		DenseAvailable bool `json:"dense_available"`
		Degraded       int  `json:"degraded"`
		Ranking        struct {
			Hit1    float64 `json:"hit_at_1"`
			Recall5 float64 `json:"recall_at_5"`
			NDCG10  float64 `json:"ndcg_at_10"`
		} `json:"ranking"`
		EndToEndHit1 float64 `json:"end_to_end_hit_at_1"`
		Abstention   struct {
			Precision float64 `json:"precision"`
			Recall    float64 `json:"recall"`
		} `json:"abstention"`
		HiddenHits int `json:"hidden_hits"`
		Verdicts   struct {
			NoSkill struct {
				Confident int `json:"confident"`
			} `json:"no_skill"`
		} `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, res.stdout)
	}
	if rep.Queries != len(queries) || rep.NeedSkill != needSkill || rep.NoSkill != len(queries)-needSkill {
		t.Errorf("eval counted %d queries (%d need a skill, %d none), the file has %d (%d, %d)",
			rep.Queries, rep.NeedSkill, rep.NoSkill, len(queries), needSkill, len(queries)-needSkill)
	}
	if !rep.DenseAvailable || rep.Degraded != 0 {
		t.Errorf("dense available %v, %d queries degraded: the bundled model did not run", rep.DenseAvailable, rep.Degraded)
	}
	floors := []struct {
		name      string
		got, want float64
	}{
		{"Hit@1", rep.Ranking.Hit1, 85},
		{"Recall@5", rep.Ranking.Recall5, 95},
		{"NDCG@10", rep.Ranking.NDCG10, 90},
		{"Hit@1 after abstention", rep.EndToEndHit1, 75},
		{"abstention recall", rep.Abstention.Recall, 40},
		{"abstention precision", rep.Abstention.Precision, 60},
		{"share of the queries that need no skill not given a confident match",
			100 * float64(rep.NoSkill-rep.Verdicts.NoSkill.Confident) / float64(rep.NoSkill), 70},
	}
	for _, fl := range floors {
		if fl.got < fl.want {
			t.Errorf("%s = %.1f, want at least %.0f", fl.name, fl.got, fl.want)
		}
	}
	if rep.HiddenHits > 3 {
		t.Errorf("%d answerable queries hidden by an abstention although a relevant skill was in the top 3, want at most 3", rep.HiddenHits)
	}
	t.Logf("Hit@1 %.1f, Recall@5 %.1f, NDCG@10 %.1f, end-to-end Hit@1 %.1f, abstention P %.1f R %.1f, %d hidden, %d of %d needing none confident",
		rep.Ranking.Hit1, rep.Ranking.Recall5, rep.Ranking.NDCG10, rep.EndToEndHit1, rep.Abstention.Precision, rep.Abstention.Recall,
		rep.HiddenHits, rep.Verdicts.NoSkill.Confident, rep.NoSkill)
}
