package encoder

import "sync"

// parallel runs fn(w, lo, hi) over [0, n) cut into at most workers
// contiguous parts, part w on its own goroutine (the first on the
// caller's), and returns when all are done.
func parallel(workers, n int, fn func(w, lo, hi int)) {
	workers = max(1, min(workers, n))
	if workers == 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { fn(w, w*n/workers, (w+1)*n/workers) })
	}
	fn(0, 0, n/workers)
	wg.Wait()
}
