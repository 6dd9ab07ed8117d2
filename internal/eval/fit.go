package eval

import (
	"errors"
	"fmt"
	"math"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// sample is one labelled task for fitting a classifier.
type sample struct {
	Features match.Features
	// Positive is the class the classifier's probability is of: the task
	// needs a skill (routerctl calibrate), or the top candidates hold one
	// (the shipped calibration).
	Positive bool
	// Weight is the sample's weight in the fit; 0 means 1.
	Weight float64
}

// fitSettings configure fitClassifier.
type fitSettings struct {
	// L2 is the penalty on the (standardised) weights.
	L2 float64
	// Signs constrain weights by feature name: +1 keeps a weight at or
	// above zero, -1 at or below; a feature not named is free. A
	// constraint says which way a feature may push ("more keyword
	// evidence never makes a skill less likely"), so the model cannot
	// learn a quirk of its training catalogs that turns around elsewhere.
	Signs map[string]int
}

// fitClassifier fits a logistic model of the positive class over the named
// features (standardised with the samples' weighted mean and standard
// deviation), by Newton's method with an L2 penalty on the weights, under
// the sign constraints of set (an active-set method: a feature whose weight
// would take the forbidden sign is held at zero while the penalised
// likelihood's gradient says so). The returned classifier's Cutoff is 0.5;
// choose another with the trade-off curve. It fails when the samples hold
// only one class or a feature name is unknown.
func fitClassifier(mode skill.MatchMode, model string, features []string, samples []sample, set fitSettings) (*match.Classifier, error) {
	c := &match.Classifier{Mode: mode, Model: model, Features: append([]string(nil), features...), Cutoff: 0.5}
	d := len(features)
	c.Mean, c.Scale, c.Weights = make([]float64, d), make([]float64, d), make([]float64, d)
	for j := range c.Scale {
		c.Scale[j] = 1
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	total, err := totalWeight(samples)
	if err != nil {
		return nil, err
	}
	x, y, w := design(samples, features)
	standardise(x, w, total, c.Mean, c.Scale)
	sign := make([]int, d)
	for j, name := range features {
		sign[j] = set.Signs[name]
	}
	beta, err := fitSigned(x, y, w, sign, set.L2)
	if err != nil {
		return nil, fmt.Errorf("fit classifier: %w", err)
	}
	copy(c.Weights, beta[:d])
	c.Bias = beta[d]
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("fit classifier: %w", err)
	}
	return c, nil
}

// totalWeight returns the samples' total weight, positive plus negative. It
// fails when a weight is negative or not finite, or a class has no weight.
func totalWeight(samples []sample) (float64, error) {
	pos, neg := 0.0, 0.0
	for _, s := range samples {
		if s.Weight < 0 || math.IsNaN(s.Weight) || math.IsInf(s.Weight, 0) {
			return 0, errors.New("fit classifier: a sample weight is negative or not finite")
		}
		if s.Positive {
			pos += weightOf(s)
		} else {
			neg += weightOf(s)
		}
	}
	if pos == 0 || neg == 0 {
		return 0, errors.New("fit classifier: the samples need both tasks that need a skill and tasks that need none")
	}
	return pos + neg, nil
}

// design returns the samples as rows of the named features' values with a
// last column of 1 (the bias), their classes (1 positive, 0 negative) and
// their weights.
func design(samples []sample, features []string) (x [][]float64, y, w []float64) {
	d := len(features)
	n := len(samples)
	x = make([][]float64, n)
	y = make([]float64, n)
	w = make([]float64, n)
	for i, s := range samples {
		row := make([]float64, d+1)
		for j, name := range features {
			row[j], _ = s.Features.Value(name)
		}
		row[d] = 1
		x[i] = row
		if s.Positive {
			y[i] = 1
		}
		w[i] = weightOf(s)
	}
	return x, y, w
}

// standardise rescales each feature column of x (all but the last) to
// weighted mean 0 and standard deviation 1, with total the weights' sum,
// and writes each column's mean and scale (1 for a constant column) to
// mean and scale.
func standardise(x [][]float64, w []float64, total float64, mean, scale []float64) {
	for j := range mean {
		var sum, sq float64
		for i := range x {
			sum += w[i] * x[i][j]
		}
		m := sum / total
		for i := range x {
			sq += w[i] * (x[i][j] - m) * (x[i][j] - m)
		}
		s := math.Sqrt(sq / total)
		if s < 1e-12 {
			s = 1
		}
		mean[j], scale[j] = m, s
		for i := range x {
			x[i][j] = (x[i][j] - m) / s
		}
	}
}

// fitSigned returns the coefficients (the features', then the bias) of the
// penalised fit under the sign constraints (sign[j] is +1, -1 or 0 for
// free), by an active set: after each fit the most violated constraint's
// feature is held at 0, and when none is violated the held feature whose
// gradient points the allowed way most comes back, until neither happens
// or 4·d rounds have passed.
func fitSigned(x [][]float64, y, w []float64, sign []int, l2 float64) ([]float64, error) {
	d := len(sign)
	// Active set: free[j] is false for a constrained feature held at 0.
	free := make([]bool, d+1)
	for j := range free {
		free[j] = true
	}
	var beta []float64
	for round := 0; ; round++ {
		var err error
		if beta, err = newton(x, y, w, free, l2); err != nil {
			return nil, err
		}
		if round == 4*d {
			break
		}
		if at := mostViolated(beta, free, sign); at >= 0 {
			free[at] = false
			continue
		}
		back := mostAllowed(gradient(x, y, w, beta), free, sign)
		if back < 0 {
			break
		}
		free[back] = true
	}
	return beta, nil
}

// mostViolated returns the free constrained feature whose coefficient has
// the forbidden sign by the most, or -1 when none has.
func mostViolated(beta []float64, free []bool, sign []int) int {
	worst, at := 0.0, -1
	for j := range sign {
		if free[j] && sign[j] != 0 && float64(sign[j])*beta[j] < worst {
			worst, at = float64(sign[j])*beta[j], j
		}
	}
	return at
}

// mostAllowed returns the held feature whose gradient g points the allowed
// way by the most (above 1e-6), or -1 when none does.
func mostAllowed(g []float64, free []bool, sign []int) int {
	best, back := 1e-6, -1
	for j := range sign {
		if !free[j] && float64(sign[j])*g[j] > best {
			best, back = float64(sign[j])*g[j], j
		}
	}
	return back
}

func weightOf(s sample) float64 {
	if s.Weight == 0 {
		return 1
	}
	return s.Weight
}

// newton maximises the weighted, L2-penalised log likelihood over the
// coordinates free selects (the others stay 0; the last, the bias, is
// never penalised) and returns the coefficients.
func newton(x [][]float64, y, w []float64, free []bool, l2 float64) ([]float64, error) {
	d := len(free) - 1
	var idx []int
	for j, f := range free {
		if f {
			idx = append(idx, j)
		}
	}
	m := len(idx)
	beta := make([]float64, d+1)
	for iter := 0; iter < 100; iter++ {
		g := make([]float64, m)
		h := make([][]float64, m)
		for a := range h {
			h[a] = make([]float64, m)
		}
		for i, row := range x {
			z := 0.0
			for _, j := range idx {
				z += beta[j] * row[j]
			}
			p := match.Sigmoid(z)
			pw := w[i] * p * (1 - p)
			r := w[i] * (y[i] - p)
			for a, j := range idx {
				v := row[j]
				g[a] += r * v
				for b := a; b < m; b++ {
					h[a][b] += pw * v * row[idx[b]]
				}
			}
		}
		for a, j := range idx {
			for b := 0; b < a; b++ {
				h[a][b] = h[b][a]
			}
			if j < d {
				g[a] -= l2 * beta[j]
				h[a][a] += l2
			}
			h[a][a] += 1e-9
		}
		step, err := solve(h, g)
		if err != nil {
			return nil, err
		}
		change := 0.0
		for a, j := range idx {
			beta[j] += step[a]
			change = math.Max(change, math.Abs(step[a]))
		}
		if change < 1e-9 {
			break
		}
	}
	return beta, nil
}

// gradient returns the gradient of the weighted log likelihood at beta
// (without the penalty, which is 0 for a coordinate held at 0).
func gradient(x [][]float64, y, w []float64, beta []float64) []float64 {
	g := make([]float64, len(beta))
	for i, row := range x {
		z := 0.0
		for j, v := range row {
			z += beta[j] * v
		}
		r := w[i] * (y[i] - match.Sigmoid(z))
		for j, v := range row {
			g[j] += r * v
		}
	}
	return g
}

// solve solves a·x = b by Gaussian elimination with partial pivoting; a and
// b are overwritten.
func solve(a [][]float64, b []float64) ([]float64, error) {
	n := len(b)
	for col := 0; col < n; col++ {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		if math.Abs(a[p][col]) < 1e-15 {
			return nil, errors.New("singular system")
		}
		a[col], a[p] = a[p], a[col]
		b[col], b[p] = b[p], b[col]
		for r := col + 1; r < n; r++ {
			f := a[r][col] / a[col][col]
			for k := col; k < n; k++ {
				a[r][k] -= f * a[col][k]
			}
			b[r] -= f * b[col]
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := b[r]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x, nil
}
