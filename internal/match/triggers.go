package match

import (
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/blevesearch/bleve/v2/analysis"

	"github.com/mcpsag/router/internal/skill"
)

// Bounds on what one skill contributes to the phrase table, and on the work
// one task may cause.
const (
	maxTriggersPerSkill = 32
	maxPhraseTerms      = 16
	maxTaskTerms        = 4096
	maxPhraseChecks     = 200000
)

type phraseKind uint8

const (
	phraseTrigger phraseKind = iota
	phraseName
)

// phrase is one trigger or skill name, analyzed.
type phrase struct {
	doc   int32
	kind  phraseKind
	text  string // the trigger as written, or the skill name
	terms []string
}

// phraseRef names one phrase: its document and its place among the
// document's phrases.
type phraseRef struct {
	doc int32
	i   int32
}

// boost returns what the phrase adds under cfg, and whether it counts as
// an explicit request for the skill. info is the sum of the rarity of its
// terms.
func (ph *phrase) boost(info float64, cfg TriggerConfig) (boost float64, explicit bool) {
	if len(ph.terms) == 1 {
		// One word: scaled by rarity, never explicit.
		return cfg.WordBoost * info, false
	}
	base := cfg.PhraseBoost
	if ph.kind == phraseName {
		base = cfg.NameBoost
	}
	strength := math.Min(1, info/cfg.PhraseInfo)
	return base * strength, strength >= 1 && base > 0
}

// phrases finds the triggers and skill names that occur in a task. Phrases
// and tasks go through the same stemming analyzer, and stop words are dropped
// from both, so "fill in the PDF forms" fires the trigger "fill pdf form".
// The rarity of a phrase's words is read when it fires, from the document
// frequencies of the index it belongs to, so an update changes only the
// phrases of the skills it changes.
type phrases struct {
	perDoc  [][]phrase // by document slot
	byFirst map[string][]phraseRef
	// df holds, per term, how many skills use it in their name,
	// description, tags or triggers; n is the number of skills.
	df map[string]int32
	n  int
}

// rarity maps document frequency to [0, 1]: 1 for a word one skill uses,
// near 0 for a word every skill uses (idf over the idf of df=1).
func rarity(df, n int) float64 {
	if n <= 1 {
		return 1
	}
	idf := func(df int) float64 {
		return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
	}
	r := idf(df) / idf(1)
	return math.Max(0, math.Min(1, r))
}

// info is the sum of the rarity of the phrase's terms.
func (p *phrases) info(ph *phrase) float64 {
	var info float64
	for _, t := range ph.terms {
		info += rarity(int(p.df[t]), p.n)
	}
	return info
}

// shortTerms returns the distinct stemmed terms of a skill's name,
// description, tags and triggers: what phrase rarity counts.
func shortTerms(stem analysis.Analyzer, s *skill.Skill) []string {
	short := normalizeText(strings.Join([]string{s.MatchName(), s.SearchDescription(), s.SearchTags(),
		strings.Join(s.Frontmatter.Triggers, " ")}, " "))
	seen := map[string]bool{}
	var out []string
	for _, t := range terms(stem, short) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// docPhrases analyzes a skill's name and triggers into its phrases.
func docPhrases(an analysis.Analyzer, doc int32, s *skill.Skill) []phrase {
	var out []phrase
	add := func(kind phraseKind, text string) {
		ts := terms(an, normalizeText(text))
		if len(ts) == 0 || len(ts) > maxPhraseTerms {
			return
		}
		out = append(out, phrase{doc: doc, kind: kind, text: text, terms: ts})
	}
	add(phraseName, s.SpokenName())
	seen := map[string]bool{}
	for j, t := range s.Frontmatter.Triggers {
		key := strings.ToLower(strings.TrimSpace(t))
		if j >= maxTriggersPerSkill || key == "" || seen[key] {
			continue
		}
		seen[key] = true
		add(phraseTrigger, t)
	}
	return out
}

// newPhrases analyzes every skill's triggers and name; docs[i] is slot i.
func newPhrases(docs []*skill.Skill, an analysis.Analyzer) *phrases {
	p := &phrases{perDoc: make([][]phrase, len(docs)), byFirst: map[string][]phraseRef{}, df: map[string]int32{}, n: len(docs)}
	for i, s := range docs {
		for _, t := range shortTerms(an, s) {
			p.df[t]++
		}
		p.perDoc[i] = docPhrases(an, int32(i), s)
		for j, ph := range p.perDoc[i] {
			p.byFirst[ph.terms[0]] = append(p.byFirst[ph.terms[0]], phraseRef{doc: int32(i), i: int32(j)})
		}
	}
	return p
}

// update returns the phrases of the next generation: the documents of slots
// drop (oldDocs) removed, those of slots fill (newDocs) added, live
// documents in all. ord is the new catalog order by slot; oldOrder lists the
// old generation's slots in its catalog order.
func (p *phrases) update(an analysis.Analyzer, oldDocs, newDocs []*skill.Skill, ord, oldOrder []int32, drop, fill []int32, live int) *phrases {
	np := &phrases{perDoc: make([][]phrase, len(newDocs)), byFirst: p.byFirst, df: p.df, n: live}
	copy(np.perDoc, p.perDoc)
	firsts := map[string]bool{}
	dropped := map[int32]bool{}
	if len(drop) > 0 || len(fill) > 0 {
		np.df = maps.Clone(p.df)
	}
	for _, d := range drop {
		dropped[d] = true
		for _, t := range shortTerms(an, oldDocs[d]) {
			if np.df[t]--; np.df[t] <= 0 {
				delete(np.df, t)
			}
		}
		for _, ph := range p.perDoc[d] {
			firsts[ph.terms[0]] = true
		}
		np.perDoc[d] = nil
	}
	for _, d := range fill {
		for _, t := range shortTerms(an, newDocs[d]) {
			np.df[t]++
		}
		np.perDoc[d] = docPhrases(an, d, newDocs[d])
		for _, ph := range np.perDoc[d] {
			firsts[ph.terms[0]] = true
		}
	}
	// The lists hold phrases in catalog order. Skills that stayed keep
	// their relative order unless the roots were reordered; then every
	// list is sorted again.
	monotone := keepsOrder(oldOrder, ord, newDocs, dropped)
	if len(firsts) == 0 && monotone {
		return np
	}
	np.byFirst = maps.Clone(p.byFirst)
	if !monotone {
		for t, list := range np.byFirst {
			list = slices.Clone(list)
			sortRefs(list, ord)
			np.byFirst[t] = list
		}
	}
	for t := range firsts {
		if list := np.refs(t, dropped, fill); len(list) > 0 {
			sortRefs(list, ord)
			np.byFirst[t] = list
		} else {
			delete(np.byFirst, t)
		}
	}
	return np
}

// keepsOrder reports whether the slots of oldOrder that stay (not dropped,
// still holding a document of newDocs) keep their relative order in ord.
func keepsOrder(oldOrder, ord []int32, newDocs []*skill.Skill, dropped map[int32]bool) bool {
	last := int32(-1)
	for _, d := range oldOrder {
		if dropped[d] || int(d) >= len(newDocs) || newDocs[d] == nil {
			continue
		}
		if ord[d] < last {
			return false
		}
		last = ord[d]
	}
	return true
}

// refs returns the phrases that start with t: those of the current list
// whose document was not dropped, then those of the slots fill.
func (p *phrases) refs(t string, dropped map[int32]bool, fill []int32) []phraseRef {
	var list []phraseRef
	for _, ref := range p.byFirst[t] {
		if !dropped[ref.doc] {
			list = append(list, ref)
		}
	}
	for _, d := range fill {
		for i, ph := range p.perDoc[d] {
			if ph.terms[0] == t {
				list = append(list, phraseRef{doc: d, i: int32(i)})
			}
		}
	}
	return list
}

// sortRefs sorts phrase references in catalog order (ord, by slot), a
// document's phrases in their own order.
func sortRefs(list []phraseRef, ord []int32) {
	slices.SortFunc(list, func(a, b phraseRef) int {
		if a.doc != b.doc {
			return int(ord[a.doc] - ord[b.doc])
		}
		return int(a.i - b.i)
	})
}

// firing is what the phrases found in a task add to one skill.
type firing struct {
	boost    float64
	triggers []string
	name     bool
	explicit bool
}

// fire returns the skills whose triggers or names occur in the task terms,
// with their boosts under cfg, capped at cfg.MaxBoost.
func (p *phrases) fire(task []string, cfg TriggerConfig) map[int32]*firing {
	if len(p.byFirst) == 0 || len(task) == 0 {
		return nil
	}
	if len(task) > maxTaskTerms {
		task = task[:maxTaskTerms]
	}
	var fired map[phraseRef]bool
	var out map[int32]*firing
	checks := 0
	for i, t := range task {
		for _, ref := range p.byFirst[t] {
			if fired[ref] {
				continue
			}
			checks++
			if checks > maxPhraseChecks {
				return out
			}
			ph := &p.perDoc[ref.doc][ref.i]
			if !hasPrefix(task[i:], ph.terms) {
				continue
			}
			if fired == nil {
				fired, out = map[phraseRef]bool{}, map[int32]*firing{}
			}
			fired[ref] = true
			f := out[ph.doc]
			if f == nil {
				f = &firing{}
				out[ph.doc] = f
			}
			b, explicit := ph.boost(p.info(ph), cfg)
			f.boost = math.Min(cfg.MaxBoost, f.boost+b)
			f.explicit = f.explicit || explicit
			if ph.kind == phraseName {
				f.name = true
			} else {
				f.triggers = append(f.triggers, ph.text)
			}
		}
	}
	for _, f := range out {
		sort.Strings(f.triggers)
	}
	return out
}

func hasPrefix(s, prefix []string) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i, t := range prefix {
		if s[i] != t {
			return false
		}
	}
	return true
}
