package match

import (
	"strings"
	"unicode"
)

// A task of several sentences or lines (an agent's task statement with its
// steps, a request that asks for two things) is matched densely as a whole
// and part by part: its dense score against a skill is
//
//	(1 − w)·cos(task, skill) + w·max over parts cos(part, skill)
//
// with w = PartsConfig.Weight, so a skill that serves one step of a long
// task is found although the whole task's vector averages every step. A
// task of one part is scored by its own vector alone.

// PartsConfig configures how a task is split into parts for dense matching.
type PartsConfig struct {
	// Max is the most parts a task is split into; when it has more
	// sentences, consecutive ones are grouped. 0 or 1 turns splitting off.
	Max int `json:"max" yaml:"max"`
	// Weight is the best part's share of the dense score, 0 to 1.
	Weight float64 `json:"weight" yaml:"weight"`
}

// minPartWords is the fewest words a sentence needs to be a part: shorter
// ones ("Thanks.", a list marker) say nothing on their own.
const minPartWords = 3

// taskParts returns the parts of task: its sentences (ended by . ! ? or ;
// before a space) and lines of at least minPartWords words, grouped into at
// most max parts; nil when there are fewer than two.
func taskParts(task string, max int) []string {
	if max < 2 {
		return nil
	}
	var parts []string
	for _, s := range sentences(task) {
		if len(strings.Fields(s)) >= minPartWords {
			parts = append(parts, s)
		}
	}
	if len(parts) < 2 {
		return nil
	}
	if len(parts) <= max {
		return parts
	}
	grouped := make([]string, 0, max)
	for g := range max {
		lo, hi := g*len(parts)/max, (g+1)*len(parts)/max
		grouped = append(grouped, strings.Join(parts[lo:hi], " "))
	}
	return grouped
}

// sentences splits text at line breaks and after . ! ? or ; followed by
// white space, trimming each piece.
func sentences(text string) []string {
	var out []string
	start := 0
	add := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	var prev rune
	for i, r := range text {
		switch {
		case r == '\n' || r == '\r':
			add(i)
		case unicode.IsSpace(r) && (prev == '.' || prev == '!' || prev == '?' || prev == ';'):
			add(i)
		}
		prev = r
	}
	add(len(text))
	return out
}

// denseQuery is a task's unit vectors: the whole task's and its parts'
// (none for a task of one part), with the best part's share of the score.
type denseQuery struct {
	whole  []float32
	parts  [][]float32
	weight float32
}

// top returns the k best visible slots by the dense score of q, as
// dense.top does for one vector.
func (q denseQuery) top(d *dense, k, n int, visible func(int32) bool, ord []int32, sc *scratch) []entry {
	if len(q.parts) == 0 {
		return d.top(q.whole, k, n, visible, ord, sc)
	}
	if k <= 0 {
		return nil
	}
	d.exactScan(q.whole, n, sc.cos)
	best, part := grow(&sc.partBest, n), grow(&sc.part, n)
	for i, p := range q.parts {
		d.exactScan(p, n, part)
		if i == 0 {
			copy(best, part)
			continue
		}
		for j, s := range part {
			best[j] = max(best[j], s)
		}
	}
	for j, s := range sc.cos[:n] {
		if s > -2 { // a slot without a vector stays below every score
			sc.cos[j] = (1-q.weight)*s + q.weight*best[j]
		}
	}
	return d.topScanned(k, n, visible, ord, sc)
}

// exact calls f with the dense score of q for each slot of slots, from the
// same arithmetic as top.
func (q denseQuery) exact(d *dense, slots []int32, sc *scratch, f func(int32, float32)) {
	if len(q.parts) == 0 {
		d.exact(q.whole, slots, sc, f)
		return
	}
	whole, best := grow(&sc.part, len(slots)), grow(&sc.partBest, len(slots))
	i := 0
	d.exact(q.whole, slots, sc, func(_ int32, s float32) { whole[i] = s; i++ })
	for pi, p := range q.parts {
		i = 0
		d.exact(p, slots, sc, func(_ int32, s float32) {
			if pi == 0 || s > best[i] {
				best[i] = s
			}
			i++
		})
	}
	for i, slot := range slots {
		f(slot, (1-q.weight)*whole[i]+q.weight*best[i])
	}
}

// grow returns (*buf)[:n], allocating when it is shorter.
func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}
