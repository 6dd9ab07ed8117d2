package match

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// dense holds the skill vectors as unit rows, one per document slot, in
// blocks of blockRows rows, and scores a task against all of them exactly.
// An exact scan is simple and fast enough up to about 100k skills
// (BenchmarkMatch); an approximate index would add recall loss and build
// time for no gain at catalog sizes.
//
// Each block also keeps its rows quantised to int8 with one scale per row,
// and a bound on what the quantisation can change in a cosine. On CPUs with
// AVX2 and FMA, large matrices are first scanned at a quarter of the memory
// traffic in int8; only the rows whose bound reaches the best k are then
// scored exactly. The result is the exact top k, the same as a full scan
// (the float scores are those of the full scan, bit for bit). A new
// generation shares the blocks it did not change.
type dense struct {
	dim    int
	stride int // int8 row length: dim rounded up to a multiple of 64
	blocks []*denseBlock
	// count is the number of slots with a vector.
	count int
}

const blockRows = 1024

type denseBlock struct {
	vecs  []float32 // blockRows rows of dim; zero rows without a vector
	has   []bool
	q     []int8    // blockRows rows of stride
	scale []float32 // per row: q times scale approximates the row
	bound []float32 // per row: the approximate cosine is within bound of the exact one
	sum   []int32   // per row: the sum of q, for scans that read the task as unsigned bytes
}

// newDense copies the usable vectors into a matrix of n slots. A vector is
// usable when it has the dimension of the first usable one and a finite,
// nonzero norm; it is normalised to unit length unless unit says it is
// (see set). bad counts the unusable ones.
func newDense(vectors [][]float32, n int, unit bool) (d *dense, bad int) {
	dim := 0
	for _, v := range vectors {
		if len(v) > 0 {
			if _, ok := unitNorm(v); ok {
				dim = len(v)
				break
			}
		}
	}
	if dim == 0 {
		for _, v := range vectors {
			if v != nil {
				bad++
			}
		}
		return nil, bad
	}
	d = &dense{dim: dim, stride: (dim + 63) &^ 63}
	d.grow(n)
	for i := 0; i < n && i < len(vectors); i++ {
		if vectors[i] == nil {
			continue
		}
		if !d.set(i, vectors[i], unit) {
			bad++
		}
	}
	return d, bad
}

// usable reports whether v can be a row of d.
func (d *dense) usable(v []float32) bool {
	_, ok := unitNorm(v)
	return len(v) == d.dim && ok
}

// grow adds blocks until n slots fit.
func (d *dense) grow(n int) {
	for len(d.blocks)*blockRows < n {
		d.blocks = append(d.blocks, d.newBlock())
	}
}

func (d *dense) newBlock() *denseBlock {
	return &denseBlock{
		vecs: make([]float32, blockRows*d.dim), has: make([]bool, blockRows),
		q: make([]int8, blockRows*d.stride), scale: make([]float32, blockRows), bound: make([]float32, blockRows),
		sum: make([]int32, blockRows),
	}
}

// set stores v in slot i of a block d owns: as it is when unit says v is a
// unit vector already (UnitVector made it, or it is a row of an index) and
// its norm is within unitSlack of 1, else normalised. It returns false (and
// clears the slot) when v is not usable.
func (d *dense) set(i int, v []float32, unit bool) bool {
	b := d.blocks[i/blockRows]
	r := i % blockRows
	if b.has[r] {
		d.count--
	}
	row := b.vecs[r*d.dim : (r+1)*d.dim]
	norm, ok := unitNorm(v)
	if len(v) != d.dim || !ok {
		clear(row)
		b.has[r] = false
		b.quantize(r, d.dim, d.stride)
		return false
	}
	unitRow(row, v, norm, unit)
	b.has[r] = true
	d.count++
	b.quantize(r, d.dim, d.stride)
	return true
}

// unitSlack is how far from 1 the norm of a vector said to be a unit
// vector may be: far more than float32 rounding leaves, far less than any
// vector that was never normalised.
const unitSlack = 1e-4

// unitRow writes to dst the row set stores for v, whose norm is norm.
func unitRow(dst, v []float32, norm float64, unit bool) {
	if unit && math.Abs(norm-1) <= unitSlack {
		copy(dst, v)
		return
	}
	normalize(dst, v, norm)
}

// normalize writes v divided by its norm to dst. Every unit vector the
// index holds or hands out is made here, so the same vector always gives
// the same bits.
func normalize(dst, v []float32, norm float64) {
	for j, x := range v {
		dst[j] = float32(float64(x) / norm)
	}
}

// UnitVector returns v normalised to unit length in a new slice, exactly as
// an Index normalises the vectors it is given: an index given the result
// with BuildInput.UnitVectors holds the same bits as one given v. A vector
// that cannot be normalised (zero, not finite) is returned as it is.
func UnitVector(v []float32) []float32 {
	norm, ok := unitNorm(v)
	if !ok {
		return v
	}
	out := make([]float32, len(v))
	normalize(out, v, norm)
	return out
}

// holds reports whether slot i holds what set(i, v, unit) would store,
// without storing it: an update keeps the slot's row when it does.
func (d *dense) holds(i int32, v []float32, unit bool) bool {
	if !d.has(i) {
		return !d.usable(v)
	}
	if len(v) != d.dim {
		return false
	}
	row := d.row(i)
	if unsafe.SliceData(row) == unsafe.SliceData(v) {
		return true
	}
	norm, ok := unitNorm(v)
	if !ok {
		return false
	}
	want := make([]float32, d.dim)
	unitRow(want, v, norm, unit)
	return slices.Equal(row, want)
}

// clearSlot removes slot i's vector (the block must be d's own).
func (d *dense) clearSlot(i int) {
	b := d.blocks[i/blockRows]
	r := i % blockRows
	if !b.has[r] {
		return
	}
	d.count--
	b.has[r] = false
	clear(b.vecs[r*d.dim : (r+1)*d.dim])
	b.quantize(r, d.dim, d.stride)
}

// quantize makes row r's int8 form, its scale and its error bound.
func (b *denseBlock) quantize(r, dim, stride int) {
	row := b.vecs[r*dim : (r+1)*dim]
	q := b.q[r*stride : (r+1)*stride]
	var maxAbs float64
	for _, x := range row {
		maxAbs = max(maxAbs, math.Abs(float64(x)))
	}
	scale := float32(1)
	if maxAbs > 0 {
		scale = float32(maxAbs / 127)
	}
	var res float64
	var sum int32
	for j, x := range row {
		v := max(-127, min(127, math.Round(float64(x)/float64(scale))))
		q[j] = int8(v)
		sum += int32(v)
		e := float64(x) - v*float64(scale)
		res += e * e
	}
	b.scale[r] = scale
	b.sum[r] = sum
	// |q·v − q·v'| ≤ |q|·|v − v'| for a unit task vector q, plus the
	// rounding of the approximate cosine to float32 and of the exact dot
	// product (at most dim·2⁻²⁴ for unit vectors), with room to spare.
	b.bound[r] = float32(math.Sqrt(res) + 4*float64(dim)*0x1p-24 + 1e-6)
}

// own returns a copy of d whose blocks listed in touched are copies, so
// they can be changed without changing d.
func (d *dense) own(touched map[int]bool) *dense {
	nd := *d
	nd.blocks = append([]*denseBlock(nil), d.blocks...)
	for bi := range touched {
		if bi >= len(nd.blocks) {
			continue
		}
		o := nd.blocks[bi]
		nd.blocks[bi] = &denseBlock{
			vecs: append([]float32(nil), o.vecs...), has: append([]bool(nil), o.has...),
			q: append([]int8(nil), o.q...), scale: append([]float32(nil), o.scale...), bound: append([]float32(nil), o.bound...),
			sum: append([]int32(nil), o.sum...),
		}
	}
	return &nd
}

// has reports whether slot i has a vector.
func (d *dense) has(i int32) bool {
	bi := int(i) / blockRows
	return bi < len(d.blocks) && d.blocks[bi].has[int(i)%blockRows]
}

// row returns slot i's unit vector.
func (d *dense) row(i int32) []float32 {
	b := d.blocks[int(i)/blockRows]
	r := int(i) % blockRows
	return b.vecs[r*d.dim : (r+1)*d.dim : (r+1)*d.dim]
}

// unitNorm returns the L2 norm of v and whether it is finite and nonzero.
func unitNorm(v []float32) (float64, bool) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := math.Sqrt(s)
	return n, n > 0 && !math.IsInf(n, 0) && !math.IsNaN(n)
}

// query normalises q into a new slice; ok is false when q cannot be used
// (wrong dimension, zero or not finite).
func (d *dense) query(q []float32) ([]float32, bool) {
	if len(q) != d.dim {
		return nil, false
	}
	norm, ok := unitNorm(q)
	if !ok {
		return nil, false
	}
	out := make([]float32, d.dim)
	normalize(out, q, norm)
	return out, true
}

// parallelMACs is the work (multiply-adds) above which a scan is split
// across CPUs: below it, starting goroutines costs more than it saves.
const parallelMACs = 1 << 20

// quantizedMinRows is the size from which the int8 pre-scan pays for its
// second pass.
var quantizedMinRows = 2048

// top returns the k best visible slots with a vector by exact cosine with q
// (a unit vector), best first, ties to the lower ord; slots < n.
// visible is asked only for slots that could rank. sc provides scratch.
func (d *dense) top(q []float32, k, n int, visible func(int32) bool, ord []int32, sc *scratch) []entry {
	if k <= 0 {
		return nil
	}
	if !haveInt8Scan || n < quantizedMinRows {
		d.exactScan(q, n, sc.cos)
		return visibleTop(k, visible, func(want int) []entry {
			h := newHeap(sc.heap[:0], want)
			for i, s := range sc.cos[:n] {
				if d.has(int32(i)) {
					h.offer(entry{doc: int32(i), ord: ord[i], score: s})
				}
			}
			sc.heap = h.s
			return h.sorted()
		})
	}
	approx := sc.cos[:n]
	qerr := d.int8Scan(q, n, approx, sc)
	// lo is a lower bound of each cosine; the k-th best visible lower bound
	// L bounds the k-th best visible cosine from below, so every slot of
	// the exact top k has an upper bound of at least L.
	if cap(sc.bins) < n {
		sc.bins = make([]uint16, n)
	}
	bins := sc.bins[:n]
	var hist [boundBins]int32
	d.binBounds(approx, qerr, bins, &hist)
	floor := d.floor(approx, qerr, bins, &hist, k, visible, ord, sc)
	rescore := sc.rescore[:0]
	for bi, b := range d.below(n) {
		base := bi * blockRows
		rows := min(blockRows, n-base)
		for r := range rows {
			if !b.has[r] || approx[base+r]+b.bound[r]+qerr < floor {
				continue
			}
			if i := int32(base + r); visible(i) {
				rescore = append(rescore, i)
			}
		}
	}
	sc.rescore = rescore
	h := newHeap(sc.heap2[:0], k)
	d.exact(q, rescore, sc, func(i int32, s float32) { h.offer(entry{doc: i, ord: ord[i], score: s}) })
	sc.heap2 = h.s
	return h.sorted()
}

// binBounds puts in bins the bin of each slot's lower bound (approx less
// its row's bound and qerr; noBin for a slot without a vector), and counts
// the bins in hist. The histogram lets floor find the bin that holds the
// want-th best: rows in lower bins cannot be among the want best (the bin
// of a value never decreases as the value grows).
func (d *dense) binBounds(approx []float32, qerr float32, bins []uint16, hist *[boundBins]int32) {
	n := len(approx)
	for bi, b := range d.below(n) {
		base := bi * blockRows
		rows := min(blockRows, n-base)
		for r := range rows {
			if !b.has[r] {
				bins[base+r] = noBin
				continue
			}
			bin := boundBin(approx[base+r] - b.bound[r] - qerr)
			bins[base+r] = bin
			hist[bin]++
		}
	}
}

// floor returns the k-th best visible lower bound (-Inf when fewer than k
// slots are visible): only the rows from the bin that holds the want-th
// best up reach the heap, the same entries it would keep from every row,
// and want grows until k of them are visible.
func (d *dense) floor(approx []float32, qerr float32, bins []uint16, hist *[boundBins]int32, k int, visible func(int32) bool, ord []int32, sc *scratch) float32 {
	n := len(approx)
	want := k
	for {
		cut := cutBin(hist, want)
		h := newHeap(sc.heap[:0], want)
		for bi, b := range d.below(n) {
			base := bi * blockRows
			rows := min(blockRows, n-base)
			for r, bin := range bins[base : base+rows] {
				if bin < cut || bin == noBin {
					continue
				}
				lo := approx[base+r] - b.bound[r] - qerr
				if h.full() && lo <= h.s[0].score {
					continue
				}
				h.offer(entry{doc: int32(base + r), ord: ord[base+r], score: lo})
			}
		}
		sc.heap = h.s
		es := h.sorted()
		seen := 0
		for _, e := range es {
			if visible(e.doc) {
				seen++
				if seen == k {
					return e.score
				}
			}
		}
		if len(es) < want {
			return float32(math.Inf(-1))
		}
		want *= 4
	}
}

// below returns the blocks that hold slots below n; block bi holds slots
// from bi·blockRows on.
func (d *dense) below(n int) []*denseBlock {
	return d.blocks[:min(len(d.blocks), (n+blockRows-1)/blockRows)]
}

// boundBins is the resolution of the lower-bound histogram of dense.top,
// over [-2, 2): cosines lie in [-1, 1], their lower bounds a little below.
const boundBins = 1024

// noBin marks a slot without a vector in dense.top's bins.
const noBin = math.MaxUint16

// boundBin is the histogram bin of a lower bound; it never decreases as lo
// grows (float32 rounding is monotonic, the scaling exact), and values
// outside [-2, 2) fall in the first or last bin.
func boundBin(lo float32) uint16 {
	x := (lo + 2) * (boundBins / 4)
	switch {
	case !(x > 0): // below the range, or NaN
		return 0
	case x >= boundBins:
		return boundBins - 1
	}
	return uint16(x)
}

// cutBin returns the highest bin from which up the histogram holds at
// least want values, or 0 when it holds fewer.
func cutBin(hist *[boundBins]int32, want int) uint16 {
	total := 0
	for b := boundBins - 1; b > 0; b-- {
		total += int(hist[b])
		if total >= want {
			return uint16(b)
		}
	}
	return 0
}

// exact calls f with the exact cosine of q with each slot of slots, eight
// rows at a time.
func (d *dense) exact(q []float32, slots []int32, sc *scratch, f func(int32, float32)) {
	q2 := dup4(q, sc.q2[:0])
	sc.q2 = q2
	var rows [8][]float32
	var out [8]float32
	i := 0
	for ; i+8 <= len(slots); i += 8 {
		for r := range 8 {
			rows[r] = d.row(slots[i+r])
		}
		dots8(q, q2, &rows, &out)
		for r := range 8 {
			f(slots[i+r], out[r])
		}
	}
	for ; i < len(slots); i++ {
		f(slots[i], dot(q, d.row(slots[i])))
	}
}

// dup4 returns q with each group of four values written twice, appended to
// buf (the layout dotLanes8AVX reads).
func dup4(q, buf []float32) []float32 {
	for c := 0; c+4 <= len(q); c += 4 {
		buf = append(buf, q[c:c+4]...)
		buf = append(buf, q[c:c+4]...)
	}
	return buf
}

// exactScan writes the cosine of q with slots [0, n) into out; slots
// without a vector get -2, below any cosine. Large matrices are scanned in
// parallel, one contiguous range of blocks per CPU.
func (d *dense) exactScan(q []float32, n int, out []float32) {
	q2 := dup4(q, nil)
	d.parallel(n, func(lo, hi int) {
		var rows [8][]float32
		var res [8]float32
		i := lo
		for ; i+8 <= hi; i += 8 {
			for r := range 8 {
				rows[r] = d.row(int32(i + r))
			}
			dots8(q, q2, &rows, &res)
			for r := range 8 {
				out[i+r] = res[r]
				if !d.has(int32(i + r)) {
					out[i+r] = -2
				}
			}
		}
		for ; i < hi; i++ {
			out[i] = -2
			if d.has(int32(i)) {
				out[i] = dot(q, d.row(int32(i)))
			}
		}
	}, d.dim)
}

// int8Scan writes the approximate cosine of q with every row of slots
// [0, n) into out, and returns how far the task's own quantisation can move
// a cosine. The task vector is quantised too (to 15 bits with AVX2, to 8
// with AVX-512 VNNI, which reads it as unsigned bytes: q + 128, the excess
// taken off with each row's sum), and the dot products are exact integers.
func (d *dense) int8Scan(q []float32, n int, out []float32, sc *scratch) float32 {
	var maxAbs float64
	for _, x := range q {
		maxAbs = max(maxAbs, math.Abs(float64(x)))
	}
	levels := 16383.0
	if haveVNNI {
		levels = 127
	}
	qs := 1.0
	if maxAbs > 0 {
		qs = maxAbs / levels
	}
	q16 := sc.q16[:0]
	q8 := sc.q8[:0]
	var res float64
	for _, x := range q {
		v := math.Round(float64(x) / qs)
		q16 = append(q16, int16(v))
		q8 = append(q8, uint8(int(v)+128))
		e := float64(x) - v*qs
		res += e * e
	}
	for len(q16) < d.stride {
		q16 = append(q16, 0)
		q8 = append(q8, 128)
	}
	sc.q16, sc.q8 = q16, q8
	if cap(sc.dots) < n {
		sc.dots = make([]int32, n)
	}
	dots := sc.dots[:n]
	d.parallel(n, func(lo, hi int) {
		for lo < hi {
			b := d.blocks[lo/blockRows]
			r := lo % blockRows
			rows := min(blockRows-r, hi-lo)
			if haveVNNI {
				dotsU8(q8, b.q[r*d.stride:(r+rows)*d.stride], d.stride, dots[lo:lo+rows])
				for k := range rows {
					dots[lo+k] -= 128 * b.sum[r+k]
				}
			} else {
				dotsInt8(q16, b.q[r*d.stride:(r+rows)*d.stride], d.stride, dots[lo:lo+rows])
			}
			for k := range rows {
				out[lo+k] = float32(float64(dots[lo+k]) * qs * float64(b.scale[r+k]))
			}
			lo += rows
		}
	}, d.stride/8)
	// |(q − q')·v'| ≤ |q − q'|·|v'|, and |v'| ≤ 1 + |v − v'| ≤ 1.01.
	return float32(math.Sqrt(res)*1.01 + 1e-6)
}

// scansRunning counts the dense scans running in the process.
var scansRunning atomic.Int32

// parallel runs f over [0, n) in one call per CPU when the work (n rows of
// cost multiply-adds) is large enough and no other scan is running: under
// concurrent matches every CPU has work already, and splitting a scan only
// adds handoffs. Rows are independent, so the result is the same either way.
func (d *dense) parallel(n int, f func(lo, hi int), cost int) {
	running := scansRunning.Add(1)
	defer scansRunning.Add(-1)
	workers := min(runtime.GOMAXPROCS(0), n*cost/parallelMACs)
	if workers < 2 || running > 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}

// Dot is dot for the model recipe's training: its order of summation is
// fixed, and the bundled model's table is reproduced with it.
func Dot(a, b []float32) float32 { return dot(a, b) }

// dot returns the dot product of a and b, which have the same length. Four
// independent accumulators let the CPU overlap the multiply-adds.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dotsU8Go is the portable form of dotsU8.
func dotsU8Go(q []uint8, rows []int8, stride int, out []int32) {
	for i := range out {
		row := rows[i*stride : (i+1)*stride]
		var s int32
		for j, x := range row {
			s += int32(q[j]) * int32(x)
		}
		out[i] = s
	}
}

// dotsInt8Go is the portable form of dotsInt8: out[i] is the dot product of
// q with row i of rows (each stride long).
func dotsInt8Go(q []int16, rows []int8, stride int, out []int32) {
	for i := range out {
		row := rows[i*stride : (i+1)*stride]
		var s int32
		for j, x := range row {
			s += int32(q[j]) * int32(x)
		}
		out[i] = s
	}
}
