package main

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestCompletionAsksTheRouter: the shell completion offers the skills, their
// files and the agents of a running router, and flag values from their
// fixed lists; without a router it offers nothing, quickly, and never file
// names where a skill is expected.
func TestCompletionAsksTheRouter(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	env := map[string]string{"MCPSAG_ADDR": r.Addr}
	words := func(res result) []string {
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		return lines[:len(lines)-1] // the last line is the directive
	}
	for _, tc := range []struct {
		args []string
		want string // the words offered, space-separated
	}{
		{[]string{"show", "p"}, "pdf-form-filling"},
		{[]string{"load", "k"}, "kubernetes-debugging"},
		{[]string{"show", "--agent", "reviewer", "code-"}, "code-review-checklist"},
		{[]string{"load", "pdf-form-filling", "--resource", ""}, "references/field-types.md scripts/fill_form.py"},
		{[]string{"authorize-exec", "csv-data-cleaning", ""}, "scripts/profile_csv.py"},
		{[]string{"list", "--agent", ""}, "reviewer"},
		{[]string{"match", "--kinds", ""}, "both skills tools"},
		{[]string{"match", "--fusion", "r"}, "rrf"},
		{[]string{"load", "x", "--level", ""}, "1 2 3"},
		{[]string{"token", "--groups", "read,m"}, "read,match"},
		{[]string{"token", "--agents", "rev"}, "reviewer"},
		{[]string{"show", "pdf-form-filling", ""}, ""},
	} {
		res := ctlEnv(t, env, append([]string{"__complete"}, tc.args...)...)
		if got := strings.Join(words(res), " "); res.code != 0 || got != tc.want {
			t.Errorf("complete %q: %q (exit %d, stderr %q), want %q", tc.args, got, res.code, res.stderr, tc.want)
		}
		if !strings.Contains(res.stdout, ":") || strings.HasSuffix(strings.TrimSpace(res.stdout), ":0") {
			t.Errorf("complete %q: directive in %q offers file names", tc.args, res.stdout)
		}
	}
	res := ctl(t, "__complete", "--addr", daemontest.FreeAddr(t), "show", "")
	if got := words(res); res.code != 0 || len(got) != 0 || res.took > 3*time.Second {
		t.Errorf("without a router: %q after %s, want nothing at once", got, res.took)
	}
	if res := ctl(t, "__complete", "validate", ""); !strings.HasSuffix(strings.TrimSpace(res.stdout), ":16") {
		t.Errorf("validate completes %q, want folders (directive 16)", res.stdout)
	}
}
