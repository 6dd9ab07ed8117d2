package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/mcpsag/router/internal/match"
)

// DefaultForeignSeed is the shuffle seed of the cross-catalog protocol
// unless told otherwise.
const DefaultForeignSeed = 7

// Foreign builds the cross-catalog abstention protocol from one query set:
// up to n of its queries that need a skill, chosen in a pseudo-random order
// fixed by seed, relabelled as needing none (ids prefixed with "f"). Run
// against a catalog that cannot serve them (another set's skills), the
// right answer to each is to abstain. Labels are noisy at the edges: a
// general skill (web search, say) can serve many foreign tasks.
func Foreign(qs []Query, n int, seed uint64) []Query {
	var pool []Query
	for _, q := range qs {
		if q.NeedSkill() {
			pool = append(pool, q)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x666f726569676e))
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pool = pool[:min(n, len(pool))]
	out := make([]Query, len(pool))
	for i, q := range pool {
		out[i] = Query{ID: "f" + q.ID, Query: q.Query, Relevant: []string{}}
	}
	return out
}

// CrossOptions configure CrossCatalog.
type CrossOptions struct {
	// N is the number of foreign tasks (default 500).
	N int
	// Seed fixes which tasks are drawn (default DefaultForeignSeed).
	Seed uint64
	// Run selects the matching mode and names the set; PerQuery is
	// implied for the tasks that were served.
	Run RunOptions
}

// Served is a foreign task the catalog did not abstain on.
type Served struct {
	ID          string  `json:"id"`
	Query       string  `json:"query"`
	Skill       string  `json:"skill"`
	Verdict     string  `json:"verdict"`
	Rule        string  `json:"rule"`
	Probability float64 `json:"probability"`
}

// CrossReport is the outcome of the cross-catalog protocol.
type CrossReport struct {
	Set    string `json:"set,omitempty"`
	Skills int    `json:"skills"`
	// Tasks is the number of foreign tasks run; Abstained how many were
	// declined, Rate the share in percent.
	Tasks     int     `json:"tasks"`
	Abstained int     `json:"abstained"`
	Rate      float64 `json:"abstention_rate"`
	// LowConfidence counts the tasks served as low-confidence candidates,
	// LowRate their share in percent; the rest got a confident match.
	LowConfidence int     `json:"low_confidence"`
	LowRate       float64 `json:"low_confidence_rate"`
	// Report is the underlying evaluation (ranking figures are empty:
	// no task needs a skill of this catalog).
	Report *Report `json:"report"`
	// Served lists the tasks that got a skill, with the first one, so
	// the ones a catalog could legitimately serve can be judged.
	Served []Served `json:"served"`
}

// CrossCatalog runs the cross-catalog protocol: Foreign(from, opt.N,
// opt.Seed) against ix, whose catalog must not be the one from was
// labelled against.
func CrossCatalog(ctx context.Context, ix *match.Index, from []Query, opt CrossOptions) (*CrossReport, error) {
	if opt.N == 0 {
		opt.N = 500
	}
	if opt.N < 0 {
		return nil, fmt.Errorf("cross-catalog: %d tasks asked for", opt.N)
	}
	if opt.Seed == 0 {
		opt.Seed = DefaultForeignSeed
	}
	tasks := Foreign(from, opt.N, opt.Seed)
	if len(tasks) == 0 {
		return nil, errors.New("cross-catalog: the query set has no query that needs a skill")
	}
	run := opt.Run
	run.PerQuery = true
	rep, err := Run(ctx, ix, tasks, run)
	if err != nil {
		return nil, err
	}
	cr := &CrossReport{Set: run.Set, Skills: rep.Skills, Tasks: len(tasks), Abstained: rep.Abstention.Abstained, Report: rep,
		LowConfidence: rep.Verdicts.NoSkill.LowConfidence}
	cr.Rate = 100 * float64(cr.Abstained) / float64(cr.Tasks)
	cr.LowRate = 100 * float64(cr.LowConfidence) / float64(cr.Tasks)
	for i, q := range rep.PerQuery {
		if q.Abstained {
			continue
		}
		s := Served{ID: q.ID, Query: tasks[i].Query, Verdict: q.Verdict, Rule: q.Rule, Probability: q.Probability}
		if len(q.Returned) > 0 {
			s.Skill = q.Returned[0]
		}
		cr.Served = append(cr.Served, s)
	}
	rep.PerQuery = nil
	return cr, nil
}

// WriteText writes the cross-catalog report for people: the abstention
// rate, then every served task with the skill it got.
func (r *CrossReport) WriteText(w io.Writer) error {
	var b strings.Builder
	title := r.Set
	if title == "" {
		title = "foreign tasks"
	}
	fmt.Fprintf(&b, "%s against a catalog of %d skills that cannot serve them: %d tasks, %d abstained on (%.1f%%), "+
		"%d served as low-confidence (%.1f%%), %d as a confident match (%.1f%%)\n",
		title, r.Skills, r.Tasks, r.Abstained, r.Rate, r.LowConfidence, r.LowRate,
		r.Tasks-r.Abstained-r.LowConfidence, 100-r.Rate-r.LowRate)
	fmt.Fprintf(&b, "decided by: %s\n", rules(r.Report.Rules))
	for _, n := range r.Report.Notes {
		if !strings.HasPrefix(n, "no query needs no skill") {
			fmt.Fprintf(&b, "note: %s\n", n)
		}
	}
	if len(r.Served) > 0 {
		fmt.Fprintf(&b, "\nserved (%d; some may be legitimate, a general skill can serve many tasks):\n", len(r.Served))
		for _, s := range r.Served {
			fmt.Fprintf(&b, "  %s -> %s (%s; %s, p %.2f): %s\n", s.ID, s.Skill, s.Verdict, s.Rule, s.Probability, oneLine(s.Query, 100))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// oneLine shortens s to at most n runes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
