package eval

import (
	"math"
	"sort"
	"time"
)

// Ranking holds ranking-quality figures in percent, averaged over the
// queries that need a skill. Recall@k is the share of a query's relevant
// skills found in the top k; Hit@1 whether the first candidate is relevant.
type Ranking struct {
	Hit1   float64 `json:"hit_at_1"`
	R3     float64 `json:"recall_at_3"`
	R5     float64 `json:"recall_at_5"`
	MRR10  float64 `json:"mrr_at_10"`
	NDCG10 float64 `json:"ndcg_at_10"`
}

// queryRanking scores one ranked list of names against the relevant ones
// (binary relevance).
func queryRanking(ranked, relevant []string) Ranking {
	rel := make(map[string]bool, len(relevant))
	for _, r := range relevant {
		rel[r] = true
	}
	var m Ranking
	found := 0
	dcg := 0.0
	for i, name := range ranked {
		if i == 10 {
			break
		}
		if !rel[name] {
			continue
		}
		if i == 0 {
			m.Hit1 = 1
		}
		if m.MRR10 == 0 {
			m.MRR10 = 1 / float64(i+1)
		}
		if i < 3 {
			m.R3++
		}
		if i < 5 {
			m.R5++
		}
		dcg += 1 / math.Log2(float64(i+2))
		found++
	}
	idcg := 0.0
	for i := 0; i < min(len(rel), 10); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if len(rel) > 0 {
		m.R3 /= float64(len(rel))
		m.R5 /= float64(len(rel))
		m.NDCG10 = dcg / idcg
	}
	return m
}

func (m *Ranking) add(o Ranking) {
	m.Hit1 += o.Hit1
	m.R3 += o.R3
	m.R5 += o.R5
	m.MRR10 += o.MRR10
	m.NDCG10 += o.NDCG10
}

func (m *Ranking) percent(n int) {
	if n == 0 {
		return
	}
	f := 100 / float64(n)
	m.Hit1 *= f
	m.R3 *= f
	m.R5 *= f
	m.MRR10 *= f
	m.NDCG10 *= f
}

// Abstention describes abstention decisions over all queries. The positive
// class is "needs no skill": precision is the share of abstentions that
// were right, recall the share of no-skill queries abstained on.
type Abstention struct {
	Abstained int `json:"abstained"`
	// Correct abstentions (the query needs no skill).
	Correct int `json:"correct"`
	// NoSkill is the number of queries that need no skill.
	NoSkill int `json:"no_skill"`
	// Precision and Recall in percent; -1 when undefined (nothing
	// abstained, or no query needs no skill).
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	// WrongOnAnswerable is the number of queries that need a skill but
	// were abstained on.
	WrongOnAnswerable int `json:"abstained_on_answerable"`
}

func abstention(pred, truth []bool) Abstention {
	var a Abstention
	for i := range pred {
		if truth[i] {
			a.NoSkill++
		}
		if pred[i] {
			a.Abstained++
			if truth[i] {
				a.Correct++
			} else {
				a.WrongOnAnswerable++
			}
		}
	}
	a.Precision, a.Recall = -1, -1
	if a.Abstained > 0 {
		a.Precision = 100 * float64(a.Correct) / float64(a.Abstained)
	}
	if a.NoSkill > 0 {
		a.Recall = 100 * float64(a.Correct) / float64(a.NoSkill)
	}
	return a
}

// fBeta is the F-beta score of abstention (precision and recall in
// percent); 0 when either is undefined or zero.
func (a Abstention) fBeta(beta float64) float64 {
	p, r := a.Precision/100, a.Recall/100
	if p <= 0 || r <= 0 {
		return 0
	}
	b2 := beta * beta
	return (1 + b2) * p * r / (b2*p + r)
}

// Latency summarises per-query Match times.
type Latency struct {
	P50  time.Duration `json:"p50_ns"`
	P99  time.Duration `json:"p99_ns"`
	Mean time.Duration `json:"mean_ns"`
}

func latency(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Latency{
		P50:  s[(len(s)-1)/2],
		P99:  s[min(len(s)-1, int(math.Ceil(0.99*float64(len(s))))-1)],
		Mean: sum / time.Duration(len(s)),
	}
}

// auroc returns the probability that a random positive scores above a
// random negative (ties count half), or -1 without both classes.
func auroc(scores []float64, positive []bool) float64 {
	type sv struct {
		s float64
		p bool
	}
	all := make([]sv, len(scores))
	npos := 0
	for i, s := range scores {
		all[i] = sv{s, positive[i]}
		if positive[i] {
			npos++
		}
	}
	nneg := len(all) - npos
	if npos == 0 || nneg == 0 {
		return -1
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s < all[j].s })
	rankSum := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].s == all[i].s {
			j++
		}
		avg := float64(i+j+1) / 2
		for k := i; k < j; k++ {
			if all[k].p {
				rankSum += avg
			}
		}
		i = j
	}
	return (rankSum - float64(npos)*float64(npos+1)/2) / (float64(npos) * float64(nneg))
}
