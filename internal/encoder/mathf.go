package encoder

import "math"

// This file holds the float32 approximations of exp and erf that softmax
// and GELU use, in portable Go. The assembly kernels evaluate the same
// formulas with the same constants, so every path gives the same values up
// to the rounding of fused multiply-adds.

// exp: x = n·ln2 + r with |r| ≤ ln2/2, exp(r) by the Cephes expf
// polynomial (relative error below 1e-7), times 2^n. Arguments below
// expMin give 0, which keeps softmax away from subnormal numbers: a
// probability e^-80 times the largest one adds nothing to a float32 sum.
const (
	expMin  = -80
	expMax  = 88.3762626647949
	log2e   = 1.44269504088896341
	ln2Hi   = 0.693359375
	ln2Lo   = -2.12194440e-4
	expP0   = 1.9875691500e-4
	expP1   = 1.3981999507e-3
	expP2   = 8.3334519073e-3
	expP3   = 4.1665795894e-2
	expP4   = 1.6666665459e-1
	expP5   = 5.0000001201e-1
	expOne  = 1
	expBias = 127
)

// expf returns e^x for x ≤ expMax, and 0 for x < expMin.
func expf(x float32) float32 {
	if x < expMin {
		return 0
	}
	x = min(x, expMax)
	n := float32(math.RoundToEven(float64(x * log2e)))
	r := x - n*ln2Hi
	r -= n * ln2Lo
	p := float32(expP0)
	p = p*r + expP1
	p = p*r + expP2
	p = p*r + expP3
	p = p*r + expP4
	p = p*r + expP5
	y := p*(r*r) + r + expOne
	return y * math.Float32frombits(uint32(int32(n)+expBias)<<23)
}

// erf: for |x| < erfSplit the rational approximation x·P(x²)/Q(x²) that
// Eigen and XLA use; above it 1 - t·exp(-x² + R(t)) with t = 1/(1+|x|/2)
// (Numerical Recipes' erfc, relative error below 1.2e-7), which avoids the
// rational form's larger error for |x| between 1 and 4. Together they are
// within 2e-7 of erf everywhere (TestErf).
const (
	erfSplit = 0.5
	erfClamp = 4
	erfA1    = -1.60960333262415e-02
	erfA3    = -2.95459980854025e-03
	erfA5    = -7.34990630326855e-04
	erfA7    = -5.69250639462346e-05
	erfA9    = -2.10102402082508e-06
	erfA11   = 2.77068142495902e-08
	erfA13   = -2.72614225801306e-10
	erfB0    = -1.42647390514189e-02
	erfB2    = -7.37332916720468e-03
	erfB4    = -1.68282697438203e-03
	erfB6    = -2.13374055278905e-04
	erfB8    = -1.45660718464996e-05
	erfcC0   = -1.26551223
	erfcC1   = 1.00002368
	erfcC2   = 0.37409196
	erfcC3   = 0.09678418
	erfcC4   = -0.18628806
	erfcC5   = 0.27886807
	erfcC6   = -1.13520398
	erfcC7   = 1.48851587
	erfcC8   = -0.82215223
	erfcC9   = 0.17087277
)

// erff returns an approximation of erf(x).
func erff(x float32) float32 {
	z := min(max(x, -erfClamp), erfClamp)
	a := float32(math.Abs(float64(z)))
	if a < erfSplit {
		z2 := z * z
		p := float32(erfA13)
		p = p*z2 + erfA11
		p = p*z2 + erfA9
		p = p*z2 + erfA7
		p = p*z2 + erfA5
		p = p*z2 + erfA3
		p = p*z2 + erfA1
		p *= z
		q := float32(erfB8)
		q = q*z2 + erfB6
		q = q*z2 + erfB4
		q = q*z2 + erfB2
		q = q*z2 + erfB0
		return p / q
	}
	t := 1 / (1 + 0.5*a)
	r := float32(erfcC9)
	r = r*t + erfcC8
	r = r*t + erfcC7
	r = r*t + erfcC6
	r = r*t + erfcC5
	r = r*t + erfcC4
	r = r*t + erfcC3
	r = r*t + erfcC2
	r = r*t + erfcC1
	r = r*t + erfcC0
	e := 1 - t*expf(r-a*a)
	if z < 0 {
		return -e
	}
	return e
}

// gelu returns x·Φ(x) = x·(1 + erf(x/√2))/2.
func gelu(x float32) float32 {
	return x * (0.5*erff(x*math.Sqrt2/2) + 0.5)
}

// geluGo applies gelu to every value of x.
func geluGo(x []float32) {
	for i, v := range x {
		x[i] = gelu(v)
	}
}

// maxGo returns the largest value of x, -Inf for none.
func maxGo(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// expSumGo replaces every value v of x with e^(v-sub) and returns their
// sum.
func expSumGo(x []float32, sub float32) float32 {
	var s float32
	for i, v := range x {
		e := expf(v - sub)
		x[i] = e
		s += e
	}
	return s
}

// scaleGo multiplies every value of x by s.
func scaleGo(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

// layerNormGo normalises x in place: mean and variance in float64, the
// rest in float32.
func layerNormGo(x, scale, bias []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(len(x)))
	var sq float64
	for _, v := range x {
		d := float64(v - mean)
		sq += d * d
	}
	inv := float32(1 / math.Sqrt(sq/float64(len(x))+float64(eps)))
	scale, bias = scale[:len(x)], bias[:len(x)]
	for j, v := range x {
		x[j] = (v-mean)*inv*scale[j] + bias[j]
	}
}
