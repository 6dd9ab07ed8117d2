package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/synthetic"
)

// genOptions are the flags of gen.
type genOptions struct {
	skills      int
	out         string
	evalDir     string
	corporaDir  string
	seed        uint64
	longTasks   int
	longChars   int
	shortBodies bool
}

func newGenCmd() *cobra.Command {
	var o genOptions
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
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.OutOrStdout()) },
	}
	f := cmd.Flags()
	f.IntVar(&o.skills, "skills", 0, "number of `skills`")
	f.StringVar(&o.out, "out", "", "workspace `dir` to write (empty or new)")
	f.StringVar(&o.evalDir, "eval", filepath.Join("..", "shared", "eval"), "dev sets `dir` (<set>/skills, <set>/queries.jsonl)")
	f.StringVar(&o.corporaDir, "corpora", filepath.Join("..", "shared", "corpora"), "real skill trees `dir` for bodies and task context")
	f.Uint64Var(&o.seed, "seed", 1, "random `seed`")
	f.IntVar(&o.longTasks, "long", 500, "number of long tasks to write to long.jsonl (0: none)")
	f.IntVar(&o.longChars, "long-chars", 2000, "characters per long task")
	f.BoolVar(&o.shortBodies, "short-bodies", false, "keep the dev sets' own short bodies (no --corpora)")
	return cmd
}

// run writes the workspace and the query files, and says so on w.
func (o genOptions) run(w io.Writer) error {
	if o.skills <= 0 || o.out == "" {
		return usagef("gen needs --skills N > 0 and --out DIR")
	}
	src, err := synthetic.Load(o.evalDir)
	if err != nil {
		return err
	}
	if !o.shortBodies {
		if err := src.LoadCorpora(o.corporaDir); err != nil {
			return err
		}
	}
	if entries, err := os.ReadDir(filepath.Join(o.out, "skills")); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s already holds skills; write to an empty folder", o.out)
	}
	cat := src.Catalog(o.skills, o.seed)
	if o.skills > synthetic.MaxRootSkills {
		err = synthetic.WriteSplitWorkspace(o.out, cat, synthetic.MaxRootSkills)
	} else {
		err = synthetic.WriteWorkspace(o.out, cat)
	}
	if err != nil {
		return err
	}
	if err := synthetic.WriteQueries(filepath.Join(o.out, "queries.jsonl"), "q", src.Queries); err != nil {
		return err
	}
	if o.longTasks > 0 {
		if err := synthetic.WriteQueries(filepath.Join(o.out, "long.jsonl"), "long", src.LongTasks(o.longTasks, o.longChars, o.seed)); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "wrote %d skills, %d queries and %d long tasks under %s\n", o.skills, len(src.Queries), o.longTasks, o.out)
	return nil
}
