package match

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

func TestTaskParts(t *testing.T) {
	cases := []struct {
		name string
		task string
		max  int
		want []string
	}{
		{"one sentence", "fill in the pdf form from a json file", 8, nil},
		{"two sentences", "Fill in the PDF form. Then email it to the team.", 8,
			[]string{"Fill in the PDF form.", "Then email it to the team."}},
		{"question and semicolon", "Can you resize the images? Also crop them square; and upload to the bucket", 8,
			[]string{"Can you resize the images?", "Also crop them square;", "and upload to the bucket"}},
		{"lines and list markers", "You need to:\n1.\nParse the binary STL file\n2. Find the largest component\n", 8,
			[]string{"You need to:", "Parse the binary STL file", "Find the largest component"}},
		{"short sentences are dropped", "Thanks. Please deploy the chart to staging. Ok!", 8, nil},
		{"a period inside a word does not split", "Read config.yaml and print its keys", 8, nil},
		{"splitting off", "Fill in the PDF form. Then email it to the team.", 1, nil},
		{"grouped to max", "One two three. Four five six. Seven eight nine. Ten eleven twelve. Thirteen fourteen fifteen.", 2,
			[]string{"One two three. Four five six.", "Seven eight nine. Ten eleven twelve. Thirteen fourteen fifteen."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := taskParts(c.task, c.max); !slices.Equal(got, c.want) {
				t.Errorf("taskParts(%q, %d) = %q, want %q", c.task, c.max, got, c.want)
			}
		})
	}
}

// TestPartsFindAStepOfALongTask: the skill that serves one step of a task
// of several steps, far from the whole task's vector, ranks first when
// parts are on, and not when they are off.
func TestPartsFindAStepOfALongTask(t *testing.T) {
	skills := []*skill.Skill{
		{Name: "render-chart", Dir: "/s/render-chart", Frontmatter: skill.Frontmatter{Name: "render-chart", Description: "x"}, ContentHash: "a"},
		{Name: "general-helper", Dir: "/s/general-helper", Frontmatter: skill.Frontmatter{Name: "general-helper", Description: "y"}, ContentHash: "b"},
		{Name: "send-mail", Dir: "/s/send-mail", Frontmatter: skill.Frontmatter{Name: "send-mail", Description: "z"}, ContentHash: "c"},
	}
	vecs := [][]float32{{1, 0, 0, 0}, {0.3, 0.9, 0.3, 0.2}, {0, 0, 1, 0}}
	task := "Load the quarterly numbers from the sheet. Draw a bar chart of them for the board."
	emb := fakeQuery{vecs: map[string][]float32{
		task: {0.4, 0.9, 0, 0.2},
		"Load the quarterly numbers from the sheet.": {0, 0, 0, 1},
		"Draw a bar chart of them for the board.":    {1, 0, 0, 0},
	}}
	first := func(parts PartsConfig) string {
		cfg := DefaultConfig()
		cfg.Parts = parts
		ix, err := Build(context.Background(), BuildInput{Skills: skills, Vectors: vecs, Embedder: emb, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		res, err := ix.Match(context.Background(), skill.MatchRequest{Task: task, Options: skill.MatchOptions{Mode: skill.ModeDense}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Candidates) == 0 {
			t.Fatal("no candidate")
		}
		return res.Candidates[0].Skill.Name
	}
	if got := first(PartsConfig{}); got != "general-helper" {
		t.Fatalf("without parts the first candidate is %s, want general-helper (nearest to the whole task)", got)
	}
	if got := first(PartsConfig{Max: 8, Weight: 0.5}); got != "render-chart" {
		t.Errorf("with parts the first candidate is %s, want render-chart (the chart step)", got)
	}
}

// TestPartsScoresAgree: the scores a scan of every row gives a task of
// several parts equal those of the same rows scored one by one, so a
// candidate's cosine does not depend on which list found it.
func TestPartsScoresAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const dim, n = 24, 37
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = randomUnit(r, dim)
	}
	d, _ := newDense(vecs, n, false)
	q := denseQuery{whole: randomUnit(r, dim), parts: [][]float32{randomUnit(r, dim), randomUnit(r, dim), randomUnit(r, dim)}, weight: 0.4}
	sc := newScratch(n)
	ord := make([]int32, n)
	slots := make([]int32, n)
	for i := range ord {
		ord[i], slots[i] = int32(i), int32(i)
	}
	top := q.top(d, n, n, func(int32) bool { return true }, ord, sc)
	if len(top) != n {
		t.Fatalf("top gave %d of %d slots", len(top), n)
	}
	scan := map[int32]float32{}
	for _, e := range top {
		scan[e.doc] = e.score
	}
	q.exact(d, slots, sc, func(slot int32, s float32) {
		if scan[slot] != s {
			t.Errorf("slot %d: scan %v, one by one %v", slot, scan[slot], s)
		}
		row := d.row(slot)
		best := float32(math.Inf(-1))
		for _, p := range q.parts {
			best = max(best, Dot(p, row))
		}
		want := 0.6*Dot(q.whole, row) + 0.4*best
		if math.Abs(float64(s-want)) > 1e-5 {
			t.Errorf("slot %d: score %v, want 0.6·cos(task) + 0.4·best part = %v", slot, s, want)
		}
	})
}

func randomUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}
