package models

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/slowtest"
)

// referenceTexts is how many texts of the dev sets the reference check
// embeds: tasks (short requests and long agent task statements, some past
// the model's token limit) and skill texts as the router embeds them.
const referenceTexts = 1000

// TestBundledModelMatchesReference: the router's embeddings of 1,000 texts
// of the dev sets equal those of the reference implementation, Hugging
// Face's tokenizers library and onnxruntime in Python on the same model
// files (recipe/encoder/reference.py), at cosine 0.999 or more each. It
// checks the bundled model, or the folder MCPSAG_MODEL_DIR names.
func TestBundledModelMatchesReference(t *testing.T) {
	slowtest.Skip(t, "embeds 1,000 texts twice, in Go and in Python")
	python := referencePython(t)
	queries, docs := devTexts(t)
	dir := os.Getenv("MCPSAG_MODEL_DIR") // another model folder to check
	if dir == "" {
		var err error
		if dir, err = Default(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	m, err := embed.Open(ctx, embed.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := m.Config()
	var got [][]float32
	for _, part := range []struct {
		texts []string
		kind  embed.Kind
	}{{queries, embed.Query}, {docs, embed.Document}} {
		vecs, err := m.Embed(ctx, part.texts, part.kind)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vecs...)
	}
	// The reference sees each text as the model does: cleaned as the
	// router cleans it (control characters read as spaces, cut at 16 bytes
	// a token), after the kind's prefix.
	var ref []string
	for _, q := range queries {
		ref = append(ref, cfg.QueryPrefix+embed.Sanitize(q, 16*cfg.MaxTokens))
	}
	for _, d := range docs {
		ref = append(ref, cfg.DocumentPrefix+embed.Sanitize(d, 16*cfg.MaxTokens))
	}
	want := runReference(t, python, dir, ref, cfg.MaxTokens, cfg.Dimension)
	cosines := make([]float64, len(got))
	for i := range got {
		cosines[i] = cosine(got[i], want[i])
		if cosines[i] < 0.999 || math.IsNaN(cosines[i]) {
			t.Errorf("text %d (%.60q): cosine %.6f with the reference, want at least 0.999", i, ref[i], cosines[i])
		}
	}
	slices.Sort(cosines)
	t.Logf("%s: %d texts (%d tasks, %d skill texts), cosine with onnxruntime and Hugging Face's tokenizers: min %.9f, median %.9f",
		m.Identity().Name, len(got), len(queries), len(docs), cosines[0], cosines[len(cosines)/2])
}

// referencePython returns a Python that runs reference.py: the one
// MCPSAG_REFERENCE_PYTHON names, else python3. It skips the test when
// that cannot import what the script needs.
func referencePython(t *testing.T) string {
	t.Helper()
	python := os.Getenv("MCPSAG_REFERENCE_PYTHON")
	if python == "" {
		python = "python3"
	}
	if out, err := exec.Command(python, "-c", "import numpy, onnxruntime, tokenizers").CombinedOutput(); err != nil {
		t.Skipf("%s cannot import numpy, onnxruntime and tokenizers (%v: %s); install models/recipe/encoder/requirements-reference.txt and set MCPSAG_REFERENCE_PYTHON",
			python, err, strings.TrimSpace(string(out)))
	}
	return python
}

// runReference embeds texts with reference.py and returns its vectors.
func runReference(t *testing.T, python, dir string, texts []string, maxTokens, dim int) [][]float32 {
	t.Helper()
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "texts.json"), filepath.Join(tmp, "vectors.f32")
	b, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("recipe", "encoder", "reference.py"), dir, in, out, strconv.Itoa(maxTokens))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference.py: %v\n%s", err, msg)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 4*dim*len(texts) {
		t.Fatalf("reference.py wrote %d bytes, want %d vectors of %d float32", len(raw), len(texts), dim)
	}
	vecs := make([][]float32, len(texts))
	for i := range vecs {
		vecs[i] = make([]float32, dim)
		for j := range dim {
			vecs[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*dim+j):]))
		}
	}
	return vecs
}

// devTexts returns referenceTexts tasks and skill texts of the dev sets
// beside the checkout (../../shared/eval and eval-transfer): from each set
// an even share, two thirds tasks and one third skill texts, spread over
// its queries and skills, the shares of a set that has too few taken from
// the others. It skips the test when there are no dev sets.
func devTexts(t *testing.T) (queries, docs []string) {
	t.Helper()
	var sets []string
	for _, parent := range []string{"eval", "eval-transfer"} {
		matches, _ := filepath.Glob(filepath.Join("..", "..", "shared", parent, "*", "queries.jsonl"))
		sets = append(sets, matches...)
	}
	if len(sets) == 0 {
		t.Skip("no dev sets in ../../shared/eval or ../../shared/eval-transfer: the reference check embeds their texts")
	}
	slices.Sort(sets)
	type pool struct{ texts []string }
	var qs, ds []pool
	for _, qpath := range sets {
		qs = append(qs, pool{readQueries(t, qpath)})
		ds = append(ds, pool{skillTexts(t, filepath.Join(filepath.Dir(qpath), "skills"))})
	}
	take := func(pools []pool, want int) []string {
		got := make([]int, len(pools)) // how many of each pool are taken
		for left := want; left > 0; {
			open := 0
			for i, p := range pools {
				if got[i] < len(p.texts) {
					open++
				}
			}
			if open == 0 {
				break
			}
			share := max(1, left/open)
			for i, p := range pools {
				n := min(share, len(p.texts)-got[i], left)
				got[i] += n
				left -= n
			}
		}
		var out []string
		for i, p := range pools {
			out = append(out, everyKth(p.texts, got[i])...)
		}
		return out
	}
	queries = take(qs, referenceTexts*2/3)
	docs = take(ds, referenceTexts-len(queries))
	return queries, docs
}

// readQueries returns the query texts of a queries.jsonl file.
func readQueries(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			out = append(out, q.Query)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// skillTexts returns the embedded texts of the skills under root, as the
// router makes them (skill.Skill.DocumentText, without body).
func skillTexts(t *testing.T, root string) []string {
	t.Helper()
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(root, d.Name(), "SKILL.md"))
		if err != nil {
			continue
		}
		p, _ := skillmd.Parse(b, d.Name(), skillmd.DefaultLimits)
		if p == nil || p.Frontmatter.Description == "" {
			continue
		}
		s := skill.Skill{Name: p.Name, Frontmatter: p.Frontmatter}
		out = append(out, s.DocumentText("", 0))
	}
	return out
}

// everyKth returns n items of xs spread evenly (all of them when there are
// fewer).
func everyKth(xs []string, n int) []string {
	if len(xs) <= n {
		return xs
	}
	out := make([]string, n)
	for i := range out {
		out[i] = xs[i*len(xs)/n]
	}
	return out
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}
