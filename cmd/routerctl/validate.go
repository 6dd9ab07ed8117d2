package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

const validateLong = `Checks skill folders offline, without a router, the way the router would load
them: YAML frontmatter, the Agent Skills spec rules (name, description,
compatibility, metadata), size caps, registry.json files and name collisions.
Each DIR may be a skill folder (holds SKILL.md), a workspace (holds skills/ or
agents/) or a folder of skills. Every problem is printed with its file and
line. Errors mean the router skips the file; warnings mean it loads it anyway.

Exit code 1 when there are errors (with --strict, also when there are
warnings), 0 otherwise.`

// validateOutput is validate's JSON output.
type validateOutput struct {
	Files    int              `json:"files"`
	Valid    int              `json:"valid"`
	Served   int              `json:"served"`
	Errors   int              `json:"errors"`
	Warnings int              `json:"warnings"`
	Problems []problemJSON    `json:"problems"`
	Shadows  []shadowJSON     `json:"shadows"`
	ByCode   map[string]int   `json:"by_code"`
	Roots    []string         `json:"roots"`
	Limits   map[string]int64 `json:"limits"`
}

type problemJSON struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Field    string `json:"field"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Message  string `json:"message"`
}

type shadowJSON struct {
	Name     string `json:"name"`
	Served   string `json:"served"`
	Shadowed string `json:"shadowed"`
	Reason   string `json:"reason"`
}

func newValidateCmd(e *env) *cobra.Command {
	var (
		strict, quiet bool
		maxFile       int64
	)
	cmd := &cobra.Command{
		Use:   "validate DIR...",
		Short: "check SKILL.md folders the way the router loads them",
		Long:  validateLong,
		Example: `  routerctl validate examples
  routerctl validate --strict skills/pdf-form-filling
  routerctl validate ~/.codex/skills --json`,
		Args: minArgs(1, "at least one DIR"),
	}
	f := cmd.Flags()
	f.BoolVar(&strict, "strict", false, "treat warnings as errors")
	f.BoolVar(&quiet, "quiet", false, "print errors only, and the summary")
	f.Int64Var(&maxFile, "max-file-bytes", skillmd.DefaultLimits.MaxFileBytes, "skip SKILL.md files larger than `N` bytes")
	cmd.RunE = func(_ *cobra.Command, dirs []string) error {
		return validate(e, dirs, strict, quiet, maxFile)
	}
	return cmd
}

func validate(e *env, dirs []string, strict, quiet bool, maxFile int64) error {
	if maxFile <= 0 {
		return usageErrorf("--max-file-bytes %d: want a positive size", maxFile)
	}
	var roots []skill.Root
	for _, d := range dirs {
		rs, err := skillfs.RootsForPath(d)
		if err != nil {
			return usageError{fmt.Sprintf("cannot read %s: %v", d, err)}
		}
		for _, r := range rs {
			r.Order = len(roots)
			roots = append(roots, r)
		}
	}
	lim := skillmd.DefaultLimits
	lim.MaxFileBytes = maxFile
	rep := loader.Validate(roots, nil, lim, skillfs.DefaultScanLimits)

	out := validateOutput{Files: rep.Files, Valid: rep.Valid, Served: rep.Served,
		Limits: map[string]int64{"max_file_bytes": lim.MaxFileBytes, "max_frontmatter_bytes": int64(lim.MaxFrontmatterBytes)}}
	for _, r := range roots {
		out.Roots = append(out.Roots, r.Path)
	}
	out.ByCode, out.Errors, out.Warnings = skill.TallyProblems(rep.Problems)
	for _, p := range rep.Problems {
		out.Problems = append(out.Problems, problemJSON{Severity: p.Severity.String(), Code: p.Code, Field: p.Field, File: p.File, Line: p.Line, Message: p.Message})
	}
	for _, s := range rep.Shadows {
		out.Shadows = append(out.Shadows, shadowJSON{Name: s.Name, Served: s.Winner.Dir, Shadowed: s.Loser.Dir, Reason: s.Reason})
	}

	if e.json {
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		text := e.stdout
		for _, p := range rep.Problems {
			if quiet && p.Severity != skill.SeverityError {
				continue
			}
			fmt.Fprintln(text, p.String())
		}
		for _, s := range rep.Shadows {
			fmt.Fprintf(text, "%s: warning: name %q also defined in %s; this copy is hidden (%s) (name-collision)\n", s.Loser.Dir, s.Name, s.Winner.Dir, s.Reason)
		}
		fmt.Fprintf(e.stdout, "%d SKILL.md files, %d valid, %d would be served; %d errors, %d warnings, %d name collisions\n",
			out.Files, out.Valid, out.Served, out.Errors, out.Warnings, len(out.Shadows))
		if out.Files == 0 {
			fmt.Fprintln(e.stdout, "no SKILL.md found; folders starting with '.' or '_' are skipped unless you name them directly")
		}
	}
	if out.Errors > 0 || (strict && out.Warnings+len(out.Shadows) > 0) {
		return exitStatus(exitError)
	}
	return nil
}
