package match

import (
	"errors"
	"fmt"
	"math"

	"github.com/mcpsag/router/internal/skill"
)

// Sample is one labelled task for fitting a Classifier.
type Sample struct {
	Features Features
	// NeedsSkill is true when some skill is relevant to the task.
	NeedsSkill bool
}

// FitClassifier fits a logistic model of NeedsSkill over the named features
// (standardised with the samples' mean and standard deviation), by Newton's
// method with an L2 penalty l2 on the weights. The returned classifier's
// Cutoff is 0.5; choose another with the trade-off curve. It fails when
// the samples hold only one class or a feature name is unknown.
func FitClassifier(mode skill.MatchMode, model string, features []string, samples []Sample, l2 float64) (*Classifier, error) {
	c := &Classifier{Mode: mode, Model: model, Features: append([]string(nil), features...), Cutoff: 0.5}
	d := len(features)
	c.Mean, c.Scale, c.Weights = make([]float64, d), make([]float64, d), make([]float64, d)
	for j := range c.Scale {
		c.Scale[j] = 1
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	pos := 0
	for _, s := range samples {
		if s.NeedsSkill {
			pos++
		}
	}
	if pos == 0 || pos == len(samples) {
		return nil, errors.New("fit classifier: the samples need both tasks that need a skill and tasks that need none")
	}
	n := len(samples)
	x := make([][]float64, n)
	y := make([]float64, n)
	for i, s := range samples {
		row := make([]float64, d+1)
		for j, name := range features {
			row[j], _ = s.Features.Value(name)
		}
		row[d] = 1
		x[i] = row
		if s.NeedsSkill {
			y[i] = 1
		}
	}
	for j := 0; j < d; j++ {
		var sum, sq float64
		for i := range x {
			sum += x[i][j]
		}
		mean := sum / float64(n)
		for i := range x {
			sq += (x[i][j] - mean) * (x[i][j] - mean)
		}
		scale := math.Sqrt(sq / float64(n))
		if scale < 1e-12 {
			scale = 1
		}
		c.Mean[j], c.Scale[j] = mean, scale
		for i := range x {
			x[i][j] = (x[i][j] - mean) / scale
		}
	}
	beta := make([]float64, d+1)
	for iter := 0; iter < 100; iter++ {
		g := make([]float64, d+1)
		h := make([][]float64, d+1)
		for j := range h {
			h[j] = make([]float64, d+1)
		}
		for i, row := range x {
			z := 0.0
			for j, v := range row {
				z += beta[j] * v
			}
			p := sigmoid(z)
			w := p * (1 - p)
			for j, v := range row {
				g[j] += (y[i] - p) * v
				for k := j; k <= d; k++ {
					h[j][k] += w * v * row[k]
				}
			}
		}
		for j := 0; j <= d; j++ {
			for k := 0; k < j; k++ {
				h[j][k] = h[k][j]
			}
			if j < d {
				g[j] -= l2 * beta[j]
				h[j][j] += l2
			}
			h[j][j] += 1e-9
		}
		step, err := solve(h, g)
		if err != nil {
			return nil, fmt.Errorf("fit classifier: %w", err)
		}
		change := 0.0
		for j := range beta {
			beta[j] += step[j]
			change = math.Max(change, math.Abs(step[j]))
		}
		if change < 1e-9 {
			break
		}
	}
	copy(c.Weights, beta[:d])
	c.Bias = beta[d]
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("fit classifier: %w", err)
	}
	return c, nil
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
