package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// sharedDir is the dev data beside the checkout (../shared).
var sharedDir = filepath.Join(repoRoot, "..", "shared")

// sourceSkill is the text of one skill the generator can write.
type sourceSkill struct {
	Name, Description, Body string
}

// query is one Match task with the skills that answer it.
type query struct {
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

var sources struct {
	once       sync.Once
	skills     []sourceSkill // Seal-Tools skills, or synthetic ones
	paragraphs []string      // body paragraphs from the real-world corpora
	queries    []query
	origin     string
}

// loadSources reads the Seal-Tools skills, their queries and paragraphs of the
// real-world corpora from ../shared. Without them it falls back to a
// deterministic synthetic set, so the suite still runs on a bare checkout.
func loadSources(t testing.TB) {
	sources.once.Do(func() {
		dir := filepath.Join(sharedDir, "eval", "seal-tools", "skills")
		entries, err := os.ReadDir(dir)
		if err != nil {
			sources.skills, sources.paragraphs, sources.queries = syntheticSources()
			sources.origin = "synthetic (../shared/eval/seal-tools not found)"
			return
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name(), "SKILL.md"))
			if err != nil {
				continue
			}
			if s, ok := parseSource(data); ok && s.Name == e.Name() {
				sources.skills = append(sources.skills, s)
			}
		}
		_ = filepath.WalkDir(filepath.Join(sharedDir, "corpora"), func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "SKILL.md" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			if s, ok := parseSource(data); ok {
				for _, para := range strings.Split(s.Body, "\n\n") {
					if para = strings.TrimSpace(para); len(para) > 80 && len(para) < 1500 && !strings.Contains(para, "---") {
						sources.paragraphs = append(sources.paragraphs, para)
					}
				}
			}
			return nil
		})
		if f, err := os.Open(filepath.Join(sharedDir, "eval", "seal-tools", "queries.jsonl")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var q query
				if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
					sources.queries = append(sources.queries, q)
				}
			}
			f.Close()
		}
		if len(sources.paragraphs) == 0 {
			_, sources.paragraphs, _ = syntheticSources()
		}
		sources.origin = fmt.Sprintf("%d Seal-Tools skills, %d corpus paragraphs (../shared)", len(sources.skills), len(sources.paragraphs))
	})
	if len(sources.skills) == 0 {
		t.Fatal("no source skills")
	}
}

// parseSource splits a SKILL.md into name, description and body.
func parseSource(data []byte) (sourceSkill, bool) {
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return sourceSkill{}, false
	}
	end := strings.Index(text[4:], "\n---")
	if end < 0 {
		return sourceSkill{}, false
	}
	var fm struct {
		Name        string `yaml:"name"`
		Description string `yaml:"description"`
	}
	if yaml.Unmarshal([]byte(text[4:4+end]), &fm) != nil || fm.Name == "" || fm.Description == "" {
		return sourceSkill{}, false
	}
	body := strings.TrimPrefix(text[4+end+4:], "\n")
	return sourceSkill{Name: fm.Name, Description: fm.Description, Body: body}, true
}

// syntheticSources builds 4,000 skills from word lists (verb, noun, domain):
// distinct names and descriptions over a shared vocabulary, so matching has
// work to do.
func syntheticSources() ([]sourceSkill, []string, []query) {
	verbs := []string{"analyze", "convert", "validate", "summarize", "deploy", "monitor", "translate", "compress", "schedule", "audit", "render", "index", "merge", "forecast", "classify", "encrypt", "migrate", "profile", "reconcile", "export"}
	nouns := []string{"invoices", "logs", "images", "contracts", "metrics", "emails", "datasets", "videos", "tickets", "reports", "spreadsheets", "transcripts", "sensors", "orders", "genomes", "playlists", "budgets", "recipes", "maps", "receipts"}
	domains := []string{"finance", "healthcare", "retail", "logistics", "education", "energy", "media", "legal", "travel", "security"}
	var skills []sourceSkill
	var queries []query
	for k, d := range domains {
		for i, v := range verbs {
			for j, n := range nouns {
				name := v + "-" + n + "-" + d
				desc := fmt.Sprintf("%s %s for %s teams, with a summary of what changed", strings.ToUpper(v[:1])+v[1:], n, d)
				body := fmt.Sprintf("# %s\n\nUse this skill to %s %s in %s workflows.\n\n## Steps\n\n1. Collect the %s.\n2. %s them.\n3. Report the result.\n", name, v, n, d, n, v)
				skills = append(skills, sourceSkill{Name: name, Description: desc, Body: body})
				if (i+j+k)%37 == 0 {
					queries = append(queries, query{Query: fmt.Sprintf("please %s the %s from our %s system", v, n, d), Relevant: []string{name}})
				}
			}
		}
	}
	var paras []string
	for i := range 200 {
		paras = append(paras, fmt.Sprintf("Note %d: %s the %s carefully; %s teams review every change before it ships, and the log keeps each step.",
			i, verbs[i%len(verbs)], nouns[(i*7)%len(nouns)], domains[i%len(domains)]))
	}
	return skills, paras, queries
}

// qualifiers make further distinct skills from each source skill.
var qualifiers = []string{"batch", "regional", "archive", "audit", "preview", "bulk", "legacy", "realtime", "offline", "secure", "lite", "team", "daily", "export", "sandbox"}

// skillAt returns the i-th skill of the generator's endless list: the source
// skills, then variants of each with a qualifier in the name, a qualified
// description and a real-world paragraph added to the body.
func skillAt(i int) (sourceSkill, bool) {
	n := len(sources.skills)
	base, k := sources.skills[i%n], i/n
	if k == 0 {
		return base, true
	}
	if k > len(qualifiers) {
		return sourceSkill{}, false
	}
	q := qualifiers[k-1]
	name := base.Name + "-" + q
	if len(name) > 64 {
		return sourceSkill{}, false
	}
	para := sources.paragraphs[(i*31+k)%len(sources.paragraphs)]
	return sourceSkill{
		Name:        name,
		Description: base.Description + " (" + q + " variant)",
		Body:        base.Body + "\n\n## Notes (" + q + ")\n\n" + para + "\n",
	}, true
}

// workspace is a generated skill tree that tests edit between cycles.
type workspace struct {
	t    testing.TB
	Dir  string
	rng  *rand.Rand
	next int             // next generator index to add
	live map[string]bool // global skills on disk
	rev  int
	cfg  map[string]string // config file sections, by top-level key
}

// newWorkspace writes n skills under skills/, five agent skills (two of them
// shadowing global names), a registry disabling two skills, resource files
// on every tenth skill, and a config file.
func newWorkspace(t testing.TB, n int, seed uint64) *workspace {
	t.Helper()
	loadSources(t)
	w := &workspace{t: t, Dir: t.TempDir(), rng: rand.New(rand.NewPCG(seed, 1)), live: map[string]bool{},
		cfg: map[string]string{"watch": "watch:\n  debounce: 100ms\n  rescan_interval: 2s\n"}}
	for len(w.live) < n {
		s, ok := skillAt(w.next)
		w.next++
		if !ok {
			t.Fatalf("the generator ran out of distinct skills at %d (want %d)", len(w.live), n)
		}
		w.writeSkill("skills", s, false)
		if w.next%10 == 0 {
			w.writeFile(filepath.Join("skills", s.Name, "references", "notes.md"), "# Notes\n\n"+s.Description+"\n")
		}
		w.live[s.Name] = true
	}
	names := w.Names()
	for i, name := range []string{names[0], names[1], "review-checklist", "review-style", "review-security"} {
		s := sourceSkill{Name: name, Description: fmt.Sprintf("Reviewer's own %s: what to check before approving (agent copy %d)", name, i),
			Body: "# " + name + "\n\nReviewer-only instructions.\n"}
		w.writeSkill(filepath.Join("agents", "reviewer", "skills"), s, false)
	}
	reg := map[string]any{"skills": map[string]any{
		names[2]: map[string]any{"enabled": false, "owner": "release-eng"},
		names[3]: map[string]any{"enabled": false, "owner": "release-eng"},
		names[4]: map[string]any{"owner": "platform", "tags": []string{"core"}},
	}}
	b, _ := json.MarshalIndent(reg, "", "  ")
	w.writeFile(filepath.Join("skills", "registry.json"), string(b))
	w.writeConfig()
	return w
}

// Names lists the global skills on disk, sorted.
func (w *workspace) Names() []string {
	out := make([]string, 0, len(w.live))
	for n := range w.live {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SetConfig sets one top-level section of the config file (the YAML text of
// that key) and writes the file; "" removes it.
func (w *workspace) SetConfig(key, yamlText string) {
	if yamlText == "" {
		delete(w.cfg, key)
	} else {
		w.cfg[key] = yamlText
	}
	w.writeConfig()
}

func (w *workspace) writeConfig() {
	keys := make([]string, 0, len(w.cfg))
	for k := range w.cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(w.cfg[k])
	}
	w.writeAtomic(filepath.Join(".mcp", ".mcp-config.yaml"), b.String())
}

// skillText renders a SKILL.md.
func skillText(s sourceSkill) string {
	fm, _ := yaml.Marshal(map[string]string{"name": s.Name, "description": s.Description})
	return "---\n" + string(fm) + "---\n\n" + s.Body
}

func (w *workspace) writeSkill(root string, s sourceSkill, atomic bool) {
	rel := filepath.Join(root, s.Name, "SKILL.md")
	if atomic {
		w.writeAtomic(rel, skillText(s))
	} else {
		w.writeFile(rel, skillText(s))
	}
}

// writeFile writes in place (truncate, then write), as a simple editor does.
func (w *workspace) writeFile(rel, content string) {
	p := filepath.Join(w.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// writeAtomic writes a temporary file and renames it over the target, as
// vim and most IDEs do.
func (w *workspace) writeAtomic(rel, content string) {
	p := filepath.Join(w.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(p), fmt.Sprintf(".%s.%d.tmp", filepath.Base(p), w.rng.Int64()))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		w.t.Fatal(err)
	}
}

// change is what one Mutate call did.
type change struct{ Edited, Added, Removed int }

// Mutate edits, adds and removes global skills: edits append a revision note
// to the body (and every third one rewrites the description), half of the
// writes atomic (rename) and half in place.
func (w *workspace) Mutate(edits, adds, removes int) change {
	var c change
	names := w.Names()
	w.rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, name := range names {
		if c.Edited >= edits {
			break
		}
		p := filepath.Join(w.Dir, "skills", name, "SKILL.md")
		data, err := os.ReadFile(p)
		if err != nil {
			w.t.Fatal(err)
		}
		s, ok := parseSource(data)
		if !ok {
			w.t.Fatalf("generated skill %s does not parse", name)
		}
		w.rev++
		s.Body += fmt.Sprintf("\nRevision %d: %s\n", w.rev, sources.paragraphs[w.rng.IntN(len(sources.paragraphs))])
		if w.rev%3 == 0 {
			s.Description = fmt.Sprintf("%s (revised %d)", strings.SplitN(s.Description, " (revised", 2)[0], w.rev)
		}
		w.writeSkill("skills", s, w.rng.IntN(2) == 0)
		c.Edited++
	}
	for range removes {
		if len(names) <= c.Edited+10 {
			break
		}
		victim := names[len(names)-1]
		names = names[:len(names)-1]
		if err := os.RemoveAll(filepath.Join(w.Dir, "skills", victim)); err != nil {
			w.t.Fatal(err)
		}
		delete(w.live, victim)
		c.Removed++
	}
	for c.Added < adds {
		s, ok := skillAt(w.next)
		w.next++
		if !ok {
			break
		}
		if w.live[s.Name] {
			continue
		}
		w.writeSkill("skills", s, w.rng.IntN(2) == 0)
		w.live[s.Name] = true
		c.Added++
	}
	return c
}

// Queries returns Match tasks for the workspace: up to n dev queries whose
// answer is on disk, and tasks no skill answers.
func (w *workspace) Queries(n int) []string {
	var out []string
	for _, q := range sources.queries {
		if len(out) >= n {
			break
		}
		for _, r := range q.Relevant {
			if w.live[r] {
				out = append(out, q.Query)
				break
			}
		}
	}
	names := w.Names()
	for i := 0; len(out) < n && i < len(names); i += max(1, len(names)/n) {
		s, _ := os.ReadFile(filepath.Join(w.Dir, "skills", names[i], "SKILL.md"))
		if src, ok := parseSource(s); ok {
			out = append(out, src.Description)
		}
	}
	return append(out, "what is the capital of France", "bake a sourdough loaf with a crispy crust", "zzqx flurble wibble")
}

// corpusSize is a one-line description of where the skills came from.
func corpusSize() string { return sources.origin }
