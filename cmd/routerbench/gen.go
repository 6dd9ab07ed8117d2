package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/synthetic"
)

func newGenCmd() *cobra.Command {
	var (
		skills      int
		out         string
		evalDir     string
		corporaDir  string
		seed        uint64
		longTasks   int
		longChars   int
		shortBodies bool
	)
	cmd := &cobra.Command{
		Use:   "gen --skills N --out DIR",
		Short: "write a synthetic workspace of N skills and query files",
		Long: `gen writes a workspace of N skills made from the dev sets (--eval) and, unless
--short-bodies, real SKILL.md bodies (--corpora): DIR/skills/<name>/SKILL.md,
or, above 25,000 skills, DIR/skills/part-NNN/<name>/SKILL.md with a
DIR/.mcp/.mcp-config.yaml whose roots are the parts (one root's scan stops
at 50,000 folders).
Beside it, DIR/queries.jsonl holds the dev sets' queries and DIR/long.jsonl
tasks of about --long-chars characters (a query followed by context), in the
format run --queries reads. The same sources, size and seed give the same
files.`,
		Example: `  routerbench gen --skills 10000 --out /tmp/ws10k
  routerbench gen --skills 100000 --out /tmp/ws100k --eval ../shared/eval --corpora ../shared/corpora`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if skills <= 0 || out == "" {
				return usagef("gen needs --skills N > 0 and --out DIR")
			}
			src, err := synthetic.Load(evalDir)
			if err != nil {
				return err
			}
			if !shortBodies {
				if err := src.LoadCorpora(corporaDir); err != nil {
					return err
				}
			}
			if entries, err := os.ReadDir(filepath.Join(out, "skills")); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s already holds skills; write to an empty folder", out)
			}
			cat := src.Catalog(skills, seed)
			if skills > synthetic.MaxRootSkills {
				err = synthetic.WriteSplitWorkspace(out, cat, synthetic.MaxRootSkills)
			} else {
				err = synthetic.WriteWorkspace(out, cat)
			}
			if err != nil {
				return err
			}
			if err := synthetic.WriteQueries(filepath.Join(out, "queries.jsonl"), "q", src.Queries); err != nil {
				return err
			}
			if longTasks > 0 {
				if err := synthetic.WriteQueries(filepath.Join(out, "long.jsonl"), "long", src.LongTasks(longTasks, longChars, seed)); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %d skills, %d queries and %d long tasks under %s\n", skills, len(src.Queries), longTasks, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&skills, "skills", 0, "number of `skills`")
	f.StringVar(&out, "out", "", "workspace `dir` to write (empty or new)")
	f.StringVar(&evalDir, "eval", filepath.Join("..", "shared", "eval"), "dev sets `dir` (<set>/skills, <set>/queries.jsonl)")
	f.StringVar(&corporaDir, "corpora", filepath.Join("..", "shared", "corpora"), "real skill trees `dir` for bodies and task context")
	f.Uint64Var(&seed, "seed", 1, "random `seed`")
	f.IntVar(&longTasks, "long", 500, "number of long tasks to write to long.jsonl (0: none)")
	f.IntVar(&longChars, "long-chars", 2000, "characters per long task")
	f.BoolVar(&shortBodies, "short-bodies", false, "keep the dev sets' own short bodies (no --corpora)")
	return cmd
}
