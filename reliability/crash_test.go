package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// phaseWatcher polls a router's Status and remembers the last reindex phase
// it saw, to report where kills landed.
type phaseWatcher struct {
	mu    sync.Mutex
	phase string
	stop  chan struct{}
	done  chan struct{}
}

func watchPhase(r *routerProc) *phaseWatcher {
	w := &phaseWatcher{phase: "starting", stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if err := r.Listening(); err != nil {
			return
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			st, err := r.RPC.Status(ctx, &pb.StatusRequest{})
			cancel()
			if err == nil {
				p := "serving"
				switch {
				case st.GetReindexProgress().GetRunning():
					p = st.GetReindexProgress().GetPhase()
				case !st.GetServing():
					p = "loading"
				}
				w.mu.Lock()
				w.phase = p
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return w
}

// Stop ends the polling and returns the last phase seen.
func (w *phaseWatcher) Stop() string {
	close(w.stop)
	select { // a router still starting may not listen yet; do not wait for it
	case <-w.done:
	case <-time.After(300 * time.Millisecond):
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.phase
}

// workSignature identifies the work a router has finished: its index
// generation, the embeddings it computed and when it last loaded its config.
func workSignature(ctx context.Context, rpc pb.SkillRouterClient) (string, bool) {
	st, err := rpc.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return "", false
	}
	busy := st.GetReindexProgress().GetRunning() || !st.GetServing()
	return fmt.Sprintf("%d/%d/%v", st.GetIndexGeneration(), st.GetModel().GetEmbeddingsComputed(), st.GetConfig().GetLoadedAt().AsTime()), busy
}

// settleTime waits until the router's work signature differs from before and
// has stayed put, idle, for quiet; it returns when the last change was seen,
// measured from t0 (0 when nothing changed within limit).
func settleTime(r *routerProc, before string, t0 time.Time, quiet, limit time.Duration) time.Duration {
	last, lastChange := before, time.Time{}
	for time.Since(t0) < limit {
		sig, busy := workSignature(context.Background(), r.RPC)
		if sig != last || busy {
			if sig != "" {
				last = sig
			}
			lastChange = time.Now()
		} else if last != before && time.Since(lastChange) > quiet {
			return lastChange.Sub(t0)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if lastChange.IsZero() {
		return 0
	}
	return lastChange.Sub(t0)
}

// TestCrashConsistency kills a router with SIGKILL at random moments of its
// start, of a reindex (Reindex RPC after skills were edited, added and
// removed), of a full re-embedding (a config edit that changes what is
// embedded), of a hot reload (file and config edits picked up by the
// watcher), and of a full reindex (Reindex with full, what routerctl
// reindex --full asks, after edits), while that call is still in flight:
// kills land within 0.9 of its measured duration, only those made before
// the call returned count, and cycles are added until enough did. After
// each kill a router restarts on the same state directory; it must come
// up, and everything it serves (every agent's catalog, each skill's detail
// and body, shadowing, counts and Match answers) must equal what a router
// with an empty state directory serves on the same files.
// MCPSAG_CRASH_POINTS limits the kills to some points (crashPoints).
func TestCrashConsistency(t *testing.T) {
	cycles := scale(5, 250)
	fullInFlightWanted := scale(1, 50)
	n := scale(300, 600)
	if testing.Short() {
		cycles, fullInFlightWanted = 5, 1
	}
	ws := newWorkspace(t, n, 42)
	tasks := ws.Queries(12)
	state := t.TempDir()
	rng := rand.New(rand.NewPCG(2026, 16))
	points := []string{"start", "reindex", "embed", "reload", "full"}
	chosen := crashPoints(t, points)
	cycles = max(1, cycles*len(chosen)/len(points))
	if !slices.Contains(chosen, "full") {
		fullInFlightWanted = 0
	}
	// fullDone is closed when the full reindex last asked for returns.
	var fullDone chan struct{}
	weights := []string{"0.4", "0.5", "0.6"}
	bodyChars := 0

	type outcome struct{ point, phase string }
	var (
		outcomes []outcome
		failures []string
		lost     int
		stale    int
		restarts int
		// quarantines counts restarts that found the cache damaged.
		quarantines int
	)
	// trigger sets off the work of a kill point on a serving router.
	trigger := func(point string, r *routerProc) {
		switch point {
		case "reindex":
			ws.Mutate(20, 10, 5)
			go func(rpc pb.SkillRouterClient, full bool) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, _ = rpc.Reindex(ctx, &pb.ReindexRequest{Full: full})
			}(r.RPC, rng.IntN(3) == 0)
		case "embed":
			bodyChars = 300 - bodyChars
			ws.SetConfig("model", fmt.Sprintf("model:\n  body_chars: %d\n", bodyChars))
		case "reload":
			ws.Mutate(15, 5, 5)
			ws.SetConfig("match", fmt.Sprintf("match:\n  fusion: {rule: adaptive, adaptive_weight: %s}\n", weights[rng.IntN(len(weights))]))
		case "full":
			ws.Mutate(20, 10, 5)
			done := make(chan struct{})
			fullDone = done
			go func(rpc pb.SkillRouterClient) {
				defer close(done)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				_, _ = rpc.Reindex(ctx, &pb.ReindexRequest{Full: true})
			}(r.RPC)
		}
	}
	// Calibrate: how long each kind of work takes here, so kills are drawn
	// from [0, 1.2 x that) and land inside the work, not after it.
	window := map[string]time.Duration{}
	{
		start(t, routerOpts{Workspace: ws.Dir, StateDir: state}).Stop() // a cold cache
		ws.Mutate(10, 5, 3)
		t0 := time.Now()
		r := start(t, routerOpts{Workspace: ws.Dir, StateDir: state})
		window["start"] = time.Since(t0)
		for _, point := range points[1:] {
			before, _ := workSignature(context.Background(), r.RPC)
			t0 := time.Now()
			trigger(point, r)
			if point == "full" { // the call itself
				<-fullDone
				window[point] = time.Since(t0)
				continue
			}
			window[point] = max(settleTime(r, before, t0, 500*time.Millisecond, 20*time.Second), 50*time.Millisecond)
		}
		r.Stop()
		for p, d := range window {
			window[p] = d * 12 / 10
		}
		// A full reindex is killed while its call is in flight: within
		// 0.9 of the call's measured time, not 1.2.
		window["full"] = window["full"] * 9 / 12
		t.Logf("kill windows (1.2 x the measured work; 0.9 x for the full reindex): start %v, reindex %v, embed %v, reload %v, full %v",
			window["start"].Round(time.Millisecond), window["reindex"].Round(time.Millisecond),
			window["embed"].Round(time.Millisecond), window["reload"].Round(time.Millisecond), window["full"].Round(time.Millisecond))
	}

	fullInFlight, fullReturned := 0, 0
	for i := 0; i < cycles || fullInFlight < fullInFlightWanted && i < cycles+4*fullInFlightWanted; i++ {
		point := chosen[i%len(chosen)]
		if i >= cycles {
			point = "full" // more cycles until enough kills caught the call in flight
		}
		var r *routerProc
		var err error
		var phase string
		if point == "start" {
			ws.Mutate(10, 5, 3)
			if r, err = spawn(t, routerOpts{Workspace: ws.Dir, StateDir: state}); err != nil {
				t.Fatal(err)
			}
		} else {
			r = start(t, routerOpts{Workspace: ws.Dir, StateDir: state})
		}
		pw := watchPhase(r)
		if point != "start" {
			trigger(point, r)
		}
		delay := randDur(rng, window[point])
		time.Sleep(delay)
		phase = pw.Stop()
		if point == "full" { // before the kill, which ends the call
			select {
			case <-fullDone:
				fullReturned++
				phase = "call-returned"
			default:
				fullInFlight++
				phase = "call-in-flight/" + phase
			}
		}
		r.Kill()
		// Status shows the indexer's phases (scan, parse, store, index);
		// embedding and the index swap run after them, so a kill while
		// Status says "serving" is placed by its delay instead.
		if phase == "serving" && point != "full" {
			phase = "after-work"
			if delay < window[point]*10/12 {
				phase = "in-work"
			}
		}
		if r.Crashed() {
			t.Fatalf("cycle %d: the router crashed before the kill:\n%s", i, r.logs.tail(30))
		}
		outcomes = append(outcomes, outcome{point, phase})

		t0 := time.Now()
		again, err := launch(t, routerOpts{Workspace: ws.Dir, StateDir: state})
		if err == nil {
			err = again.WaitCaughtUp(2 * time.Minute)
		}
		if err != nil {
			t.Fatalf("cycle %d (%s, killed in %s): restart failed: %v", i, point, phase, err)
		}
		restarts++
		// bbolt commits are atomic and a kill -9 tears no page that a
		// committed meta page reaches: the restarted router must find its
		// cache intact. A quarantine here would be the verifier rejecting a
		// healthy file.
		for _, sign := range []string{"cache file unusable", "cache records unreadable", "cache file damaged"} {
			if again.logs.contains(sign) {
				quarantines++
				t.Errorf("cycle %d (%s, killed in %s): restart reports %q:\n%s", i, point, phase, sign, firstLine(again.logs.matching(sign)))
			}
		}
		t1 := time.Now()
		got, err := takeSnapshot(ctxT(t, 5*time.Minute), again.RPC, tasks)
		if err != nil {
			t.Fatalf("cycle %d: snapshot after restart: %v", i, err)
		}
		t2 := time.Now()
		if err := again.Stop(); err != nil {
			t.Errorf("cycle %d: restarted router did not stop cleanly: %v", i, err)
		}
		t3 := time.Now()
		want := referenceSnapshot(t, ws, tasks)
		if testing.Verbose() {
			t.Logf("cycle %d %s/%s: restart %v, snapshot %v, stop %v, reference %v", i, point, phase,
				t1.Sub(t0).Round(time.Millisecond), t2.Sub(t1).Round(time.Millisecond),
				t3.Sub(t2).Round(time.Millisecond), time.Since(t3).Round(time.Millisecond))
		}
		if d := compare(got, want); !d.empty() {
			lost += len(d.Lost)
			stale += len(d.Stale)
			failures = append(failures, fmt.Sprintf("cycle %d (%s, killed in %s):\n%s", i, point, phase, d))
		}
	}

	hist := map[string]int{}
	for _, o := range outcomes {
		hist[o.point+"/"+o.phase]++
	}
	keys := make([]string, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var where []string
	for _, k := range keys {
		where = append(where, fmt.Sprintf("%s=%d", k, hist[k]))
	}
	t.Logf("crash consistency: %d kill -9 cycles on %d skills (%s); %d restarts served; %d lost, %d stale skills; %d cycles with differences; %d restarts found the cache damaged",
		len(outcomes), n, corpusSize(), restarts, lost, stale, len(failures), quarantines)
	t.Logf("kills by point/phase seen just before: %s", strings.Join(where, " "))
	t.Logf("kills during a full reindex: %d with the call in flight, %d after it returned", fullInFlight, fullReturned)
	if fullInFlight < fullInFlightWanted {
		t.Errorf("only %d kills caught a full reindex in flight, want %d", fullInFlight, fullInFlightWanted)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// crashPoints returns the kill points of MCPSAG_CRASH_POINTS (a comma
// list, e.g. "full" to run only kills during a full reindex, with the
// cycles scaled to the points chosen), or all of them when it is unset.
func crashPoints(t *testing.T, all []string) []string {
	env := os.Getenv("MCPSAG_CRASH_POINTS")
	if env == "" {
		return all
	}
	var out []string
	for _, p := range strings.Split(env, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(all, p) {
			t.Fatalf("MCPSAG_CRASH_POINTS: unknown kill point %q; the points are %s", p, strings.Join(all, ", "))
		}
		out = append(out, p)
	}
	return out
}

// randDur returns a uniformly random duration in [0, max).
func randDur(r *rand.Rand, max time.Duration) time.Duration {
	return time.Duration(r.Int64N(int64(max)))
}
