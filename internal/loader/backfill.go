package loader

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/embed"
)

// backfill embeds in the background the skill texts a pass left to it: the
// texts of the primary model (Config.Embedder) that a pass could not embed
// within its bound (Config.SyncDocuments), while the generation it published
// serves the fast model's vectors (Config.Fast) or keywords. It writes
// through the store's vector cache, a batch at a time, and when every text
// of the last request is cached it tells the loop (ready), whose next pass
// then finds them all and serves the primary model's vectors.
//
// Its lock guards the request and the progress only: the worker embeds
// outside it, and a pass that asks for other texts meanwhile replaces the
// request, which the worker takes up at its next batch.
type backfill struct {
	embedder *embed.Manager
	cache    embed.VectorCache
	log      *slog.Logger
	every    time.Duration // how often progress is logged

	mu       sync.Mutex
	req      backfillRequest
	seq      uint64 // bumped by every new request
	done     int    // texts of req cached so far
	started  time.Time
	finished bool // every text of req is cached; ready was signalled

	wake  chan struct{} // a new request; cap 1
	ready chan struct{} // the request is complete; cap 1
}

// backfillRequest is what a pass asks the worker to embed.
type backfillRequest struct {
	model   embed.Identity
	texts   []string // distinct, none cached when asked
	serving string   // what the published generation serves meanwhile, for the log
}

// BackfillStatus is the progress of background embedding.
type BackfillStatus struct {
	// Model is the model whose vectors are being computed, or were and
	// are not served yet; empty when none are.
	Model string
	// Done and Total count the texts embedded so far and wanted.
	Done, Total int
	// Started is when the current request began.
	Started time.Time
}

func newBackfill(m *embed.Manager, cache embed.VectorCache, log *slog.Logger) *backfill {
	return &backfill{embedder: m, cache: cache, log: log, every: 10 * time.Second,
		wake: make(chan struct{}, 1), ready: make(chan struct{}, 1)}
}

// want makes texts, distinct and not cached under model, the work to do;
// serving says what the generation published meanwhile serves.
func (b *backfill) want(model embed.Identity, texts []string, serving string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.req.model == model && slices.Equal(b.req.texts, texts) && !b.finished {
		return // the same work is under way
	}
	b.req = backfillRequest{model: model, texts: texts, serving: serving}
	b.seq++
	b.done, b.finished, b.started = 0, false, time.Now()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// clear drops the request: the primary model's vectors are served.
func (b *backfill) clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.req.texts != nil {
		b.req = backfillRequest{}
		b.seq++
	}
}

// status returns the progress of the current request. A complete request
// is still reported (Done equal to Total) until a pass publishes the
// generation that serves its vectors and clears it, so that a status without
// background work means the primary model's vectors are served.
func (b *backfill) status() BackfillStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.req.texts == nil {
		return BackfillStatus{}
	}
	return BackfillStatus{Model: b.req.model.Name, Done: b.done, Total: len(b.req.texts), Started: b.started}
}

// run works through requests until ctx ends.
func (b *backfill) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
		b.work(ctx)
	}
}

// work embeds the current request a batch at a time, starting over when a
// new request replaces it, and signals ready when it is complete.
func (b *backfill) work(ctx context.Context) {
	b.mu.Lock()
	req, seq := b.req, b.seq
	b.mu.Unlock()
	if req.texts == nil {
		return
	}
	b.log.Info("embedding skills in the background; serving "+req.serving+" meanwhile",
		"model", req.model.Name, "texts", len(req.texts))
	batch := b.embedder.Config().BatchSize
	if batch <= 0 {
		batch = embed.DefaultBatchSize
	}
	lastLog := time.Now()
	for start := 0; start < len(req.texts); {
		if ctx.Err() != nil || b.replaced(seq) {
			return
		}
		end := min(start+batch, len(req.texts))
		_, _, err := embed.EmbedDocuments(ctx, b.embedder, b.cache, req.texts[start:end], batch)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, embed.ErrModelChanged) {
				b.log.Warn("background embedding stopped; serving "+req.serving+" until the next reindex", "model", req.model.Name, "err", err)
			}
			return
		}
		start = end
		b.mu.Lock()
		if b.seq == seq {
			b.done = start
		}
		b.mu.Unlock()
		if time.Since(lastLog) >= b.every && start < len(req.texts) {
			lastLog = time.Now()
			b.log.Info("embedding skills in the background", "model", req.model.Name, "done", start, "texts", len(req.texts))
		}
	}
	b.mu.Lock()
	current := b.seq == seq
	if current {
		b.finished = true
	}
	b.mu.Unlock()
	if !current {
		return
	}
	b.log.Info("background embedding done; the next generation serves its vectors", "model", req.model.Name,
		"texts", len(req.texts), "duration", time.Since(b.startedAt()).Round(time.Millisecond).String())
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// replaced reports whether a request other than seq is current.
func (b *backfill) replaced(seq uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq != seq
}

func (b *backfill) startedAt() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.started
}
