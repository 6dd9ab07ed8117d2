// Package synthetic makes skill catalogs of any size from the dev sets, for
// benchmarks and load tests. A catalog of n skills takes the dev sets' skills
// as they are, then renamed copies that splice in half of another skill's
// description, so that names are distinct and texts read like real ones. The
// same sets, size and seed give the same catalog.
package synthetic

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

// Skill is one skill's text.
type Skill struct {
	Name, Description, Body string
}

// Source is what catalogs are made from: the dev sets' skills and queries.
type Source struct {
	Skills  []Skill
	Queries []string
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

// Catalog returns n skills: the source's own first, then copies of them
// named <name>-v<pass> whose description is the original's plus half of
// another skill's.
func (s *Source) Catalog(n int, seed uint64) []Skill {
	r := rand.New(rand.NewPCG(uint64(n), seed))
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
		out[i] = d
	}
	return out
}

// WriteWorkspace writes skills under dir as a workspace:
// dir/skills/<name>/SKILL.md.
func WriteWorkspace(dir string, skills []Skill) error {
	for _, s := range skills {
		fm, err := yaml.Marshal(struct {
			Name        string `yaml:"name"`
			Description string `yaml:"description"`
		}{s.Name, s.Description})
		if err != nil {
			return err
		}
		p := filepath.Join(dir, "skills", s.Name, skillfs.SkillFile)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("---\n"+string(fm)+"---\n"+s.Body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
