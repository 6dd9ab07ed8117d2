package eval

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Query is one labelled task: the skills that should be proposed for it, by
// name. An empty Relevant list means the right answer is to abstain.
type Query struct {
	ID       string   `json:"id"`
	Query    string   `json:"query"`
	Relevant []string `json:"relevant"`
}

// NeedSkill reports whether some skill is relevant to the query.
func (q Query) NeedSkill() bool { return len(q.Relevant) > 0 }

// maxQueryLine caps one line of a queries file.
const maxQueryLine = 4 << 20

// ReadQueries reads JSON lines of Query. Blank lines are skipped; a line
// that is not a Query object, a missing id or query, or a repeated id is an
// error naming the line.
func ReadQueries(r io.Reader) ([]Query, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxQueryLine)
	var out []Query
	ids := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var q Query
		dec := json.NewDecoder(strings.NewReader(text))
		if err := dec.Decode(&q); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if q.ID == "" || strings.TrimSpace(q.Query) == "" {
			return nil, fmt.Errorf("line %d: a query needs an id and a query text", line)
		}
		if prev, ok := ids[q.ID]; ok {
			return nil, fmt.Errorf("line %d: id %q repeats line %d", line, q.ID, prev)
		}
		ids[q.ID] = line
		out = append(out, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(out) == 0 {
		return nil, errors.New("no queries")
	}
	return out, nil
}

// LoadQueries reads a queries file.
func LoadQueries(path string) ([]Query, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	qs, err := ReadQueries(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return qs, nil
}

// Digest identifies a query set by content: "sha256:" and 16 hex digits over
// the ids, texts and labels in order. Calibration records it, so a report
// can tell when it evaluates on the set its values were fitted on.
func Digest(qs []Query) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, q := range qs {
		_ = enc.Encode(q)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
}
