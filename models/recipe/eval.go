package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcpsag/router/internal/skillmd"
)

// EvalSet is a skill-routing eval set in the format of ../shared/eval: a
// skills/ tree of SKILL.md files and queries.jsonl lines
// {"id","query","relevant":[names]} (an empty list means "abstain").
type EvalSet struct {
	Names   []string
	Docs    []string // "name: description", as the reference BM25 indexes it
	Queries []string
	Rel     []map[int]bool
	Empty   int // queries whose right answer is no skill
}

// loadEvalSet reads the eval set in dir.
func loadEvalSet(dir string) (*EvalSet, error) {
	s, index, err := readEvalSkills(filepath.Join(dir, "skills"))
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return s, s.readQueries(f, index)
}

// readEvalSkills reads the skills of the folders under root, in order of
// their folders' names, and returns them with the index of each name.
func readEvalSkills(root string) (*EvalSet, map[string]int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, err
	}
	s := &EvalSet{}
	index := map[string]int{}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, dirName := range names {
		data, err := os.ReadFile(filepath.Join(root, dirName, "SKILL.md"))
		if err != nil {
			continue
		}
		p, _ := skillmd.Parse(data, dirName, skillmd.DefaultLimits)
		if p == nil {
			continue
		}
		name := p.Name
		if name == "" {
			name = dirName
		}
		index[name] = len(s.Names)
		s.Names = append(s.Names, name)
		s.Docs = append(s.Docs, name+": "+p.Frontmatter.Description)
	}
	return s, index, nil
}

// readQueries reads the queries.jsonl lines of r into s; index numbers the
// skills' names.
func (s *EvalSet) readQueries(r io.Reader, index map[string]int) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q struct {
			Query    string   `json:"query"`
			Relevant []string `json:"relevant"`
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			return fmt.Errorf("queries.jsonl: %w", err)
		}
		rel := map[int]bool{}
		for _, n := range q.Relevant {
			i, ok := index[n]
			if !ok {
				return fmt.Errorf("queries.jsonl: unknown skill %q", n)
			}
			rel[i] = true
		}
		if len(rel) == 0 {
			s.Empty++
		}
		s.Queries = append(s.Queries, q.Query)
		s.Rel = append(s.Rel, rel)
	}
	return sc.Err()
}

func runEval(args []string) error {
	fs := flag.NewFlagSet("eval", flag.ExitOnError)
	model := fs.String("model", defaultModel, "model folder (model.onnx + tokenizer.json)")
	weight := fs.Float64("w", 0.4, "dense weight of the hybrid (convex mix of min-max normalised scores)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: recipe eval [-model DIR] SET_DIR...")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("no eval set given")
	}
	t := time.Now()
	emb, err := newHugotEmbedder(*model)
	if err != nil {
		return err
	}
	defer emb.Close()
	fmt.Fprintf(os.Stderr, "eval: model %s loaded in %s\n", *model, time.Since(t).Round(time.Millisecond))
	for _, dir := range fs.Args() {
		set, err := loadEvalSet(dir)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		res, err := evalTask(set.Queries, set.Docs, set.Rel, emb, []float64{*weight})
		if err != nil {
			return err
		}
		fmt.Printf("# %s: %d skills, %d queries (%d scored, %d no-skill)\n", dir, len(set.Docs), len(set.Queries), len(set.Queries)-set.Empty, set.Empty)
		printMetrics(filepath.Base(dir), res, []float64{*weight})
		hk := fmt.Sprintf("hybrid%.1f", *weight)
		mean, lo, hi := pairedBootstrap(res[hk].PerQuery, res["bm25"].PerQuery, 2000)
		fmt.Printf("%-24s %s - bm25: NDCG@10 %+.1f [%+.1f, %+.1f] (paired bootstrap, 95%%)\n", filepath.Base(dir), hk, mean, lo, hi)
	}
	return nil
}
