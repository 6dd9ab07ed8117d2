package eval

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// The scaffolding of a long agent task statement, around the request it
// carries: where the input is, numbered steps, an output format, checks.
// None of it names a kind of work, so a router should rank and judge a
// lengthened task by its request, as it does the short one.
var (
	lengthenIntros = []string{
		"You are working in a Linux container with Python 3 and the usual command line tools installed.",
		"This is a self-contained task; everything you need is in the working directory.",
		"A colleague left the following request in the team's tracker, and it is now assigned to you.",
		"You are an autonomous agent operating on a fresh checkout of the repository.",
		"",
		"",
	}
	lengthenInputs = []string{
		"The input is in `/root/%s`.",
		"Input files live under `/app/data/` (see `/app/data/%s`).",
		"Use the file at `/workspace/input/%s` as the source of truth.",
		"The data you need has been placed at `%s` in the current directory.",
	}
	lengthenFiles = []string{"input.csv", "data.json", "records.xlsx", "notes.md", "config.yaml", "report.pdf",
		"sample.txt", "dataset.parquet", "main.py", "events.log"}
	lengthenSteps = [][]string{
		{"Read the input and check that it is well formed.", "Do the work described above.",
			"Write the result where the output section says."},
		{"Inspect the structure of the provided files before changing anything.",
			"Implement the requested change step by step and keep intermediate results.",
			"Validate the outcome against the requirements below."},
		{"Load the data.", "Handle missing or malformed entries sensibly and document what you skipped.",
			"Produce the final answer in the required format."},
	}
	lengthenOutputs = []string{
		"Save the result to `/root/output.json` in the following format:\n\n```json\n{\n  \"%s\": ...,\n  \"status\": \"ok\"\n}\n```",
		"Write your answer to `/app/output/%s.txt`, one item per line.",
		"The final output must be written to `/workspace/result/%s.csv` with a header row.",
		"Print a short summary to stdout and store the full result in `%s.json`.",
	}
	lengthenKeys  = []string{"result", "answer", "summary", "items", "values", "report"}
	lengthenNotes = []string{
		"NOTE: the result is checked automatically, so keep the keys and file names exactly as specified.",
		"Notes:\n- Do not modify the input files.\n- Keep the solution deterministic.\n- Your output will be compared with a reference within a small tolerance.",
		"Constraints: do not use the network; only the standard library and the packages already installed are available.",
		"",
	}
)

// Lengthen wraps each query in the scaffolding of a long agent task
// statement (an introduction, an input file, numbered steps, an output
// format, notes), drawn with seed, keeping its labels; ids get the prefix
// "L". Long tasks share many words with any catalog of long skills, so
// scores drift with task length: lengthened tasks let a fit see that drift
// without any long task of its own.
func Lengthen(qs []Query, seed uint64) []Query {
	r := rand.New(rand.NewPCG(seed, 0x6c6f6e67))
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	out := make([]Query, len(qs))
	for i, q := range qs {
		var b strings.Builder
		if in := pick(lengthenIntros); in != "" {
			b.WriteString(in + " ")
		}
		task := strings.TrimSpace(q.Query)
		if !strings.HasSuffix(task, ".") && !strings.HasSuffix(task, "?") {
			task += "."
		}
		b.WriteString(task + "\n\n")
		b.WriteString(fmt.Sprintf(pick(lengthenInputs), pick(lengthenFiles)) + "\n\nYou need to:\n")
		for j, s := range lengthenSteps[r.IntN(len(lengthenSteps))] {
			fmt.Fprintf(&b, "%d. %s\n", j+1, s)
		}
		b.WriteString("\n" + fmt.Sprintf(pick(lengthenOutputs), pick(lengthenKeys)) + "\n")
		if n := pick(lengthenNotes); n != "" {
			b.WriteString("\n" + n + "\n")
		}
		out[i] = Query{ID: "L" + q.ID, Query: b.String(), Relevant: q.Relevant}
	}
	return out
}
