package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/mcpsag/router/internal/match"
)

// TrainConfig holds the training hyperparameters. The defaults are the ones
// the shipped model was built with; they were chosen on the held-out Debian
// validation split, never on an eval set.
type TrainConfig struct {
	Dim       int
	Epochs    int
	Batch     int
	LR        float64
	Temp      float64
	PieceProb float64 // chance a whole word is fed as its pieces
	AskProb   float64 // chance an anchor is wrapped in a request phrase
	Seed      uint64
	PMI       bool // start from PMI-SVD vectors (else random directions)
}

var defaultTrain = TrainConfig{Dim: 256, Epochs: 8, Batch: 256, LR: 2e-3, Temp: 0.1, PieceProb: 0.15, AskProb: 0.3, Seed: 20260101, PMI: true}

func runTrain(args []string) error {
	fs := flag.NewFlagSet("train", flag.ExitOnError)
	work := fs.String("work", defaultWork, "work directory")
	cfg := defaultTrain
	fs.IntVar(&cfg.Dim, "dim", cfg.Dim, "embedding dimension")
	fs.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "contrastive epochs (0: PMI vectors with idf weights only)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "pairs per batch")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "Adam learning rate")
	fs.Float64Var(&cfg.Temp, "temp", cfg.Temp, "InfoNCE temperature")
	fs.Float64Var(&cfg.PieceProb, "piece-prob", cfg.PieceProb, "probability of feeding a word as its pieces")
	fs.Float64Var(&cfg.AskProb, "ask-prob", cfg.AskProb, "probability of wrapping an anchor in a request phrase")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed")
	fs.BoolVar(&cfg.PMI, "pmi", cfg.PMI, "initialise from PMI-SVD vectors")
	out := fs.String("o", "", "table file (default WORK/table.bin)")
	fs.Parse(args)
	if *out == "" {
		*out = workPath(*work, "table.bin")
	}
	c, err := loadCorpus(*work)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "train: %d texts, %d pairs, vocab %d, config %+v\n", len(c.Texts), len(c.Pairs), len(c.Vocab), cfg)
	table := trainTable(c, cfg)
	return writeTable(*out, len(c.Vocab), cfg.Dim, table)
}

// trainTable returns the token table (vocab x dim, row-major).
func trainTable(c *Corpus, cfg TrainConfig) []float32 {
	v, d := len(c.Vocab), cfg.Dim
	var dirs []float64
	if cfg.PMI {
		dirs = cachedPMI(c, cfg)
	} else {
		rng := rand.New(rand.NewPCG(cfg.Seed, 1))
		dirs = make([]float64, v*d)
		for i := range dirs {
			dirs[i] = rng.NormFloat64()
		}
		normalizeRows(dirs, v, d)
	}
	// Start each row at its direction times an idf weight, ln((N+1)/(df+1))/5,
	// so that typical rows have a length near 1.
	df, n := c.docFreq()
	table := make([]float32, v*d)
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	for id := range v {
		if id < len(specialTokens) {
			continue
		}
		w := math.Log(float64(n+1) / float64(df[id]+1))
		row := dirs[id*d : (id+1)*d]
		zero := true
		for _, x := range row {
			if x != 0 {
				zero = false
				break
			}
		}
		for j := range d {
			x := row[j]
			if zero { // never seen in training text: a small random row
				x = rng.NormFloat64() / math.Sqrt(float64(d)) * 0.1
			}
			table[id*d+j] = float32(w / 5 * x)
		}
	}
	if cfg.Epochs > 0 {
		contrastive(c, table, cfg)
	}
	for id := range len(specialTokens) { // [PAD] [UNK] [CLS] [SEP] [MASK] stay zero
		clear(table[id*d : (id+1)*d])
	}
	return table
}

// cachedPMI returns the PMI-SVD vectors rounded to float32 (so a cached
// copy and a fresh computation give the same model), from the corpus's
// work directory when a previous run left them there.
func cachedPMI(c *Corpus, cfg TrainConfig) []float64 {
	v, d := len(c.Vocab), cfg.Dim
	path := ""
	if c.work != "" {
		path = fmt.Sprintf("%s/pmi-%d-%d.bin", c.work, d, cfg.Seed)
		if rows, dim, t, err := readTable(path); err == nil && rows == v && dim == d {
			out := make([]float64, len(t))
			for i, x := range t {
				out[i] = float64(x)
			}
			return out
		}
	}
	t0 := time.Now()
	x := pmiVectors(c, d, cfg.Seed)
	fmt.Fprintf(os.Stderr, "train: PMI-SVD vectors in %s\n", time.Since(t0).Round(time.Millisecond))
	t := make([]float32, len(x))
	for i, a := range x {
		t[i] = float32(a)
		x[i] = float64(t[i])
	}
	if path != "" {
		if err := writeTable(path, v, d, t); err != nil {
			fmt.Fprintf(os.Stderr, "train: cache PMI vectors: %v\n", err)
		}
	}
	return x
}

// contrastive trains the table with a symmetric InfoNCE loss over in-batch
// negatives: the pooled, L2-normalised bag of rows of one side of a pair
// must be closer to its partner than to every other text in the batch.
func contrastive(c *Corpus, table []float32, cfg TrainConfig) {
	v, d := len(c.Vocab), cfg.Dim
	var train []TPair
	for _, p := range c.Pairs {
		if !p.Val {
			train = append(train, p)
		}
	}
	dec := decompositions(c.Vocab)
	asks := requestPhrases(c.Vocab)
	rng := rand.New(rand.NewPCG(cfg.Seed, 3))
	adam := newAdam(v, d)
	grad := make([]float32, v*d)
	touched := make([]bool, v)
	b := cfg.Batch
	steps := 0
	for ep := range cfg.Epochs {
		order := rng.Perm(len(train))
		lossSum, nb := 0.0, 0
		t0 := time.Now()
		for s := 0; s+b <= len(order); s += b {
			// Assemble the batch: token lists for both sides, with some
			// words replaced by their pieces.
			texts := make([][]int32, 2*b)
			for i := range b {
				p := train[order[s+i]]
				texts[i] = augment(c.IDs[p.A], dec, cfg.PieceProb, rng)
				if p.Source == "debian" || p.Source == "appstream" {
					if rng.Float64() < cfg.AskProb {
						a := asks[rng.IntN(len(asks))]
						texts[i] = append(append(append([]int32(nil), a[0]...), texts[i]...), a[1]...)
					}
				}
				texts[b+i] = augment(c.IDs[p.B], dec, cfg.PieceProb, rng)
			}
			loss := step(table, grad, touched, texts, b, d, cfg.Temp)
			steps++
			adam.update(table, grad, touched, cfg.LR, steps)
			lossSum += loss
			nb++
		}
		fmt.Fprintf(os.Stderr, "train: epoch %d loss %.4f (%s)\n", ep+1, lossSum/float64(nb), time.Since(t0).Round(time.Millisecond))
	}
}

// requestPhrases are generic ways of asking for a tool. Wrapping some
// anchors in them teaches the model that these words say nothing about
// which tool is wanted, so they lose weight: tasks sent to the router are
// requests, while the training anchors are noun phrases. Each entry is the
// token ids before and after the anchor.
func requestPhrases(vocab []string) [][2][]int32 {
	sg, wp := newSegmenter(), newWordPiece(vocab)
	var out [][2][]int32
	for _, p := range []string{
		"I need {}", "can you help me with {}?", "is there a tool for {}", "how do I get {}",
		"find me {} please", "I want to use {}", "what is the best way to get {}?",
		"could you recommend {}", "help me find {} for my project", "I am looking for {}",
		"please suggest {}", "which app gives me {}?",
	} {
		before, after, _ := strings.Cut(p, "{}")
		out = append(out, [2][]int32{encodeText(sg, wp, before), encodeText(sg, wp, after)})
	}
	return out
}

// augment returns ids with each splittable word replaced by its pieces with
// probability p, so that pieces learn what the words they make up mean.
func augment(ids []int32, dec [][]int32, p float64, rng *rand.Rand) []int32 {
	if p == 0 {
		return ids
	}
	var out []int32
	for i, t := range ids {
		if dec[t] != nil && rng.Float64() < p {
			if out == nil {
				out = append(make([]int32, 0, len(ids)+4), ids[:i]...)
			}
			out = append(out, dec[t]...)
		} else if out != nil {
			out = append(out, t)
		}
	}
	if out == nil {
		return ids
	}
	return out
}

// step computes the loss and accumulates the gradient of the table rows
// into grad (setting touched). texts holds b anchors then b positives.
func step(table, grad []float32, touched []bool, texts [][]int32, b, d int, temp float64) float64 {
	z, norms := poolNormalised(table, texts, d)
	sim := similarities(z, b, d, temp)
	g, loss := contrastiveGrad(sim, b)
	dz := backprop(z, norms, g, b, d, 1/(float64(b)*temp))
	// Scatter into the token rows, serially, in a fixed order.
	for r, ids := range texts {
		dr := dz[r*d : (r+1)*d]
		for _, t := range ids {
			touched[t] = true
			axpy(1, dr, grad[int(t)*d:int(t)*d+d])
		}
	}
	return loss / float64(b)
}

// poolNormalised returns each text's summed token rows, normalised (n rows
// of d in z), and the norm each sum had.
func poolNormalised(table []float32, texts [][]int32, d int) (z, norms []float32) {
	n := len(texts)
	z = make([]float32, n*d)
	norms = make([]float32, n)
	parallelRows(n, func(lo, hi int) {
		u := make([]float32, d)
		for i := lo; i < hi; i++ {
			clear(u)
			for _, t := range texts[i] {
				axpy(1, table[int(t)*d:int(t)*d+d], u)
			}
			norms[i] = float32(math.Sqrt(float64(match.Dot(u, u)))) + 1e-6
			zi := z[i*d : (i+1)*d]
			for j, x := range u {
				zi[j] = x / norms[i]
			}
		}
	})
	return z, norms
}

// similarities returns the b×b similarities, anchor × positive, over temp.
func similarities(z []float32, b, d int, temp float64) []float64 {
	sim := make([]float64, b*b)
	parallelRows(b, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			zi := z[i*d : (i+1)*d]
			for k := range b {
				sim[i*b+k] = float64(match.Dot(zi, z[(b+k)*d:(b+k+1)*d])) / temp
			}
		}
	})
	return sim
}

// contrastiveGrad returns g = dLoss/dsim for the mean of row-wise and
// column-wise cross-entropy, and the loss summed over the b pairs.
func contrastiveGrad(sim []float64, b int) (g []float64, loss float64) {
	g = make([]float64, b*b)
	for i := range b { // rows: anchor -> positives
		row := sim[i*b : (i+1)*b]
		m := math.Inf(-1)
		for _, x := range row {
			m = max(m, x)
		}
		sum := 0.0
		for _, x := range row {
			sum += math.Exp(x - m)
		}
		loss += (m + math.Log(sum) - row[i]) / 2
		for k, x := range row {
			g[i*b+k] += math.Exp(x-m) / sum / 2
		}
		g[i*b+i] -= 0.5
	}
	for k := range b { // columns: positive -> anchors
		m := math.Inf(-1)
		for i := range b {
			m = max(m, sim[i*b+k])
		}
		sum := 0.0
		for i := range b {
			sum += math.Exp(sim[i*b+k] - m)
		}
		loss += (m + math.Log(sum) - sim[k*b+k]) / 2
		for i := range b {
			g[i*b+k] += math.Exp(sim[i*b+k]-m) / sum / 2
		}
		g[k*b+k] -= 0.5
	}
	return g, loss
}

// backprop returns dLoss/du for each text's sum u, from g = dLoss/dsim
// times scale (the similarities' 1/temp and the mean's 1/b).
func backprop(z, norms []float32, g []float64, b, d int, scale float64) []float32 {
	n := len(norms)
	// dz for anchors: sum_k g[i,k] z_pos[k]; for positives: sum_i g[i,k] z_anchor[i].
	dz := make([]float32, n*d)
	parallelRows(n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			out := dz[r*d : (r+1)*d]
			for k := range b {
				var gg float64
				var other []float32
				if r < b {
					gg = g[r*b+k]
					other = z[(b+k)*d : (b+k+1)*d]
				} else {
					gg = g[k*b+(r-b)]
					other = z[k*d : (k+1)*d]
				}
				axpy(float32(gg*scale), other, out)
			}
			// Through the normalisation: du = (dz - z (z.dz)) / |u|.
			zr := z[r*d : (r+1)*d]
			p := match.Dot(zr, out)
			for j := range d {
				out[j] = (out[j] - zr[j]*p) / norms[r]
			}
		}
	})
	return dz
}

// axpy adds alpha*x to y.
func axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		y[i] += alpha * x[i]
		y[i+1] += alpha * x[i+1]
		y[i+2] += alpha * x[i+2]
		y[i+3] += alpha * x[i+3]
	}
	for ; i < len(x); i++ {
		y[i] += alpha * x[i]
	}
}

// adam is a lazy Adam optimiser: only rows with a gradient this step move.
type adam struct {
	m, v []float32
	d    int
}

func newAdam(rows, d int) *adam {
	return &adam{m: make([]float32, rows*d), v: make([]float32, rows*d), d: d}
}

func (a *adam) update(table, grad []float32, touched []bool, lr float64, t int) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	c1 := 1 - math.Pow(b1, float64(t))
	c2 := 1 - math.Pow(b2, float64(t))
	step := float32(lr * math.Sqrt(c2) / c1)
	d := a.d
	parallelRows(len(touched), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if !touched[r] {
				continue
			}
			for j := r * d; j < (r+1)*d; j++ {
				g := grad[j]
				a.m[j] = b1*a.m[j] + (1-b1)*g
				a.v[j] = b2*a.v[j] + (1-b2)*g*g
				table[j] -= step * a.m[j] / (float32(math.Sqrt(float64(a.v[j]))) + eps)
				grad[j] = 0
			}
			touched[r] = false
		}
	})
}

// writeTable stores the table as a small header (rows, dim) and
// little-endian float32 values.
func writeTable(path string, rows, dim int, table []float32) error {
	b := make([]byte, 8+4*len(table))
	binary.LittleEndian.PutUint32(b[0:], uint32(rows))
	binary.LittleEndian.PutUint32(b[4:], uint32(dim))
	for i, x := range table {
		binary.LittleEndian.PutUint32(b[8+4*i:], math.Float32bits(x))
	}
	return os.WriteFile(path, b, 0o644)
}

func readTable(path string) (rows, dim int, table []float32, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(b) < 8 {
		return 0, 0, nil, fmt.Errorf("%s: too short", path)
	}
	rows = int(binary.LittleEndian.Uint32(b[0:]))
	dim = int(binary.LittleEndian.Uint32(b[4:]))
	if len(b) != 8+4*rows*dim {
		return 0, 0, nil, fmt.Errorf("%s: size %d does not match %dx%d", path, len(b), rows, dim)
	}
	table = make([]float32, rows*dim)
	for i := range table {
		table[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[8+4*i:]))
	}
	return rows, dim, table, nil
}
