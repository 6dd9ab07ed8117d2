// Package synthetic makes skill catalogs of any size from the dev sets, for
// benchmarks and load tests. A catalog of n skills takes the dev sets' skills
// as they are, then renamed copies that splice in half of another skill's
// description, so that names are distinct and texts read like real ones.
// With real skill trees loaded (LoadCorpora), each body is followed by a
// stretch of a real SKILL.md body, so bodies have the length and vocabulary
// of real ones; tasks of agent length (a request followed by its context)
// come from the same texts. The same sources, size and seed give the same
// catalog.
package synthetic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

// Skill is one skill's text.
type Skill struct {
	Name, Description, Body string
}

// Source is what catalogs are made from: the dev sets' skills and queries,
// and optionally the bodies of real skill trees.
type Source struct {
	Skills  []Skill
	Queries []string
	// Bodies are real SKILL.md bodies (LoadCorpora); empty means the dev
	// sets' own bodies only.
	Bodies []string
}

// Load reads every dev set under evalDir: the skills of <set>/skills and the
// queries of <set>/queries.jsonl, sets in name order.
func Load(evalDir string) (*Source, error) {
	sets, err := filepath.Glob(filepath.Join(evalDir, "*", "queries.jsonl"))
	if err != nil || len(sets) == 0 {
		return nil, fmt.Errorf("no dev sets (*/queries.jsonl) under %s", evalDir)
	}
	sort.Strings(sets)
	src := &Source{}
	for _, qf := range sets {
		dir := filepath.Join(filepath.Dir(qf), "skills")
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name(), skillfs.SkillFile))
			if err != nil {
				continue
			}
			if p, _ := skillmd.Parse(data, e.Name(), skillmd.DefaultLimits); p != nil {
				src.Skills = append(src.Skills, Skill{p.Name, p.Frontmatter.Description, p.Body})
			}
		}
		if err := readQueries(qf, src); err != nil {
			return nil, err
		}
	}
	if len(src.Skills) == 0 {
		return nil, fmt.Errorf("no skills in the dev sets under %s", evalDir)
	}
	return src, nil
}

func readQueries(path string, src *Source) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var q struct{ Query string }
		if json.Unmarshal(sc.Bytes(), &q) == nil && q.Query != "" {
			src.Queries = append(src.Queries, q.Query)
		}
	}
	return sc.Err()
}

// LoadCorpora adds the bodies of every SKILL.md under dir (real skill
// trees) to s, in path order. Files that do not parse are skipped.
func (s *Source) LoadCorpora(dir string) error {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == skillfs.SkillFile {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("read skill trees %s: %w", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if sk, _ := skillmd.Parse(data, filepath.Base(filepath.Dir(p)), skillmd.DefaultLimits); sk != nil && len(sk.Body) > 200 {
			s.Bodies = append(s.Bodies, sk.Body)
		}
	}
	if len(s.Bodies) == 0 {
		return fmt.Errorf("no SKILL.md with a body under %s", dir)
	}
	return nil
}

// Catalog returns n skills: the source's own first, then copies of them
// named <name>-v<pass> whose description is the original's plus half of
// another skill's. When s has Bodies, every body goes on with a stretch of
// one of them (up to MaxExtraBody characters, from a line start).
func (s *Source) Catalog(n int, seed uint64) []Skill {
	r := rand.New(rand.NewPCG(uint64(n), seed))
	extra := rand.New(rand.NewPCG(uint64(n), seed+1)) // leaves the draws above as they were
	out := make([]Skill, n)
	for i := range n {
		d := s.Skills[i%len(s.Skills)]
		if pass := i / len(s.Skills); pass > 0 {
			other := s.Skills[r.IntN(len(s.Skills))].Description
			d = Skill{
				Name:        fmt.Sprintf("%s-v%d", d.Name, pass),
				Description: d.Description + " " + other[:len(other)/2],
				Body:        d.Body,
			}
		}
		if len(s.Bodies) > 0 {
			d.Body = strings.TrimRight(d.Body, "\n") + "\n\n" + s.stretch(extra, 500+extra.IntN(MaxExtraBody-500))
		}
		out[i] = d
	}
	return out
}

// MaxExtraBody is the longest stretch of a real body that Catalog appends.
const MaxExtraBody = 7000

// stretch returns about chars characters of one of s.Bodies, starting at a
// line start and ending at a line end.
func (s *Source) stretch(r *rand.Rand, chars int) string {
	b := s.Bodies[r.IntN(len(s.Bodies))]
	start := 0
	if len(b) > chars {
		start = r.IntN(len(b) - chars)
		if i := strings.IndexByte(b[start:], '\n'); i >= 0 {
			start += i + 1
		}
	}
	end := min(len(b), start+chars)
	if i := strings.LastIndexByte(b[start:end], '\n'); i > 0 && end < len(b) {
		end = start + i
	}
	return strings.ToValidUTF8(b[start:end], "")
}

// LongTasks returns n tasks of about chars characters, as agents send them:
// a dev-set query followed by context (a stretch of a real body). Without
// Bodies, the context is more dev-set queries.
func (s *Source) LongTasks(n, chars int, seed uint64) []string {
	r := rand.New(rand.NewPCG(uint64(n), seed))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		b.WriteString(s.Queries[r.IntN(len(s.Queries))])
		for b.Len() < chars {
			need := max(100, chars-b.Len())
			b.WriteString("\n\n")
			if len(s.Bodies) > 0 {
				b.WriteString(s.stretch(r, need))
			} else {
				b.WriteString(s.Queries[r.IntN(len(s.Queries))])
			}
		}
		t := b.String()
		if len(t) > chars+200 {
			t = strings.ToValidUTF8(t[:chars+200], "")
		}
		out[i] = t
	}
	return out
}

// WriteQueries writes tasks as a queries file (JSON lines with an id and a
// query, the format of the dev sets and of routerbench), ids prefix-<n>.
func WriteQueries(path, prefix string, tasks []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i, t := range tasks {
		if err := enc.Encode(struct {
			ID    string `json:"id"`
			Query string `json:"query"`
		}{fmt.Sprintf("%s-%d", prefix, i), t}); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteWorkspace writes skills under dir as a workspace:
// dir/skills/<name>/SKILL.md.
func WriteWorkspace(dir string, skills []Skill) error {
	return writeSkills(filepath.Join(dir, "skills"), skills)
}

// MaxRootSkills is the most skills WriteSplitWorkspace puts in one root,
// well under the scan's bound on folders per root.
const MaxRootSkills = 25000

// WriteSplitWorkspace writes skills under dir in roots of at most perRoot
// skills, dir/skills/part-NNN/<name>/SKILL.md, and a configuration file
// (dir/.mcp/.mcp-config.yaml) whose roots are those parts: how a catalog
// larger than one root's scan bound is served.
func WriteSplitWorkspace(dir string, skills []Skill, perRoot int) error {
	if perRoot <= 0 {
		return fmt.Errorf("perRoot %d must be positive", perRoot)
	}
	for part, lo := 0, 0; lo < len(skills); part, lo = part+1, lo+perRoot {
		if err := writeSkills(filepath.Join(dir, "skills", fmt.Sprintf("part-%03d", part)), skills[lo:min(len(skills), lo+perRoot)]); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".mcp"), 0o755); err != nil {
		return err
	}
	cfg := "# Written by routerbench gen: one root per part of the catalog.\nroots:\n  - path: skills/*\n    kind: project\n"
	return os.WriteFile(filepath.Join(dir, ".mcp", ".mcp-config.yaml"), []byte(cfg), 0o644)
}

// writeSkills writes root/<name>/SKILL.md for each skill.
func writeSkills(root string, skills []Skill) error {
	for _, s := range skills {
		fm, err := yaml.Marshal(struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		}{s.Name, s.Description})
		if err != nil {
			return err
		}
		p := filepath.Join(root, s.Name, skillfs.SkillFile)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("---\n"+string(fm)+"---\n"+s.Body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
