package match

import (
	"math"
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
	info  float64 // sum of the rarity of its terms
}

// boost returns what the phrase adds under cfg, and whether it counts as
// an explicit request for the skill.
func (ph *phrase) boost(cfg TriggerConfig) (boost float64, explicit bool) {
	if len(ph.terms) == 1 {
		// One word: scaled by rarity, never explicit.
		return cfg.WordBoost * ph.info, false
	}
	base := cfg.PhraseBoost
	if ph.kind == phraseName {
		base = cfg.NameBoost
	}
	strength := math.Min(1, ph.info/cfg.PhraseInfo)
	return base * strength, strength >= 1 && base > 0
}

// phrases finds the triggers and skill names that occur in a task. Phrases
// and tasks go through the same stemming analyzer, and stop words are dropped
// from both, so "fill in the PDF forms" fires the trigger "fill pdf form".
type phrases struct {
	list    []phrase
	byFirst map[string][]int32
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

// newPhrases analyzes every skill's triggers and name. df holds, per term,
// how many skills use it in their name, description, tags or triggers.
func newPhrases(docs []*skill.Skill, an analysis.Analyzer, df map[string]int) *phrases {
	p := &phrases{byFirst: map[string][]int32{}}
	n := len(docs)
	add := func(doc int, kind phraseKind, text string) {
		ts := terms(an, normalizeText(text))
		if len(ts) == 0 || len(ts) > maxPhraseTerms {
			return
		}
		ph := phrase{doc: int32(doc), kind: kind, text: text, terms: ts}
		for _, t := range ts {
			ph.info += rarity(df[t], n)
		}
		p.byFirst[ts[0]] = append(p.byFirst[ts[0]], int32(len(p.list)))
		p.list = append(p.list, ph)
	}
	for i, s := range docs {
		add(i, phraseName, s.SpokenName())
		seen := map[string]bool{}
		for j, t := range s.Frontmatter.Triggers {
			key := strings.ToLower(strings.TrimSpace(t))
			if j >= maxTriggersPerSkill || key == "" || seen[key] {
				continue
			}
			seen[key] = true
			add(i, phraseTrigger, t)
		}
	}
	return p
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
	if len(p.list) == 0 || len(task) == 0 {
		return nil
	}
	if len(task) > maxTaskTerms {
		task = task[:maxTaskTerms]
	}
	fired := map[int32]bool{}
	out := map[int32]*firing{}
	checks := 0
	for i, t := range task {
		for _, id := range p.byFirst[t] {
			if fired[id] {
				continue
			}
			checks++
			if checks > maxPhraseChecks {
				return out
			}
			ph := &p.list[id]
			if !hasPrefix(task[i:], ph.terms) {
				continue
			}
			fired[id] = true
			f := out[ph.doc]
			if f == nil {
				f = &firing{}
				out[ph.doc] = f
			}
			b, explicit := ph.boost(cfg)
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
