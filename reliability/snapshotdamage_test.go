package reliability

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// snapshotFile is the index snapshot in a state folder.
const snapshotFile = "index.snapshot"

// TestSnapshotChangedUnderARunningRouter restarts a router from the index
// snapshot its last run left, then, while 4 clients match, changes the
// file as another process might: random bytes written over it in place
// past its header (dd conv=notrunc), or the file cut to between nothing and
// 40% of it. The router must answer every match (no crash, no fault), with
// finite scores, as a fresh router does; say in Status that the snapshot
// was changed; survive an edit and its revert (each a pass that updates the
// index the start read); succeed at routerctl reindex --full; stop
// reporting the change once it has written the snapshot again; and a
// restart from that snapshot must answer like a fresh router.
func TestSnapshotChangedUnderARunningRouter(t *testing.T) {
	ws := newWorkspace(t, scale(150, 300), 53)
	tasks := ws.Queries(10)
	want := referenceSnapshot(t, ws, tasks)
	damages := []struct {
		name string
		do   func(t *testing.T, path string, r *rand.Rand)
	}{
		{"written in place", func(t *testing.T, path string, r *rand.Rand) {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			junk := make([]byte, min(1<<20, sizeOf(t, path)-8192))
			fillRandom(r, junk)
			if _, err := f.WriteAt(junk, 8192); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", func(t *testing.T, path string, r *rand.Rand) {
			if err := os.Truncate(path, r.Int64N(sizeOf(t, path)*4/10+1)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			for seed := range scale(2, 5) {
				snapshotChangedOnce(t, ws, seed, tasks, want, d.do)
			}
		})
	}
}

// snapshotChangedOnce runs one cycle of TestSnapshotChangedUnderARunningRouter.
func snapshotChangedOnce(t *testing.T, ws *workspace, seed int, tasks []string, want *snapshot, damage func(*testing.T, string, *rand.Rand)) {
	t.Helper()
	o := routerOpts{Workspace: ws.Dir, StateDir: t.TempDir()}
	r := start(t, o)
	if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(o.StateDir, snapshotFile)
	r = start(t, o)
	if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if r.logs.contains("index snapshot unusable") {
		t.Fatalf("seed %d: the restart did not use the snapshot", seed)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, notFinite atomic.Int64
	var mu sync.Mutex
	byCode := map[codes.Code]int{}
	for w := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
			for ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := r.RPC.Match(cctx, &pb.MatchRequest{Task: tasks[rng.IntN(len(tasks))], TopK: 5})
				ccancel()
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					mu.Lock()
					byCode[status.Code(err)]++
					mu.Unlock()
					continue
				}
				ok.Add(1)
				for _, c := range res.GetCandidates() {
					s := c.GetScores()
					for _, v := range []float64{s.GetFused(), s.GetCosine(), s.GetBm25()} {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							notFinite.Add(1)
						}
					}
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	damage(t, path, rand.New(rand.NewPCG(uint64(seed), 59)))
	// The router writes the snapshot again 2 s after it notices the
	// change: ask at once.
	if st, err := r.RPC.Status(ctxT(t, 10*time.Second), &pb.StatusRequest{}); err != nil || !st.GetDegraded() ||
		!strings.Contains(st.GetDegradedReason(), "index snapshot") {
		t.Errorf("seed %d: Status after the change: degraded %v, %q (%v); want the change reported", seed, st.GetDegraded(), st.GetDegradedReason(), err)
	}
	got, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
	if err != nil {
		t.Fatalf("seed %d: snapshot right after the change: %v", seed, err)
	}
	if diff := compare(got, want); !diff.empty() {
		t.Errorf("seed %d: answers right after the change differ from a fresh router's:\n%s", seed, diff)
	}

	editAndRevert(t, r, ws)
	out, err := exec.Command(builtBinary(t, "routerctl"), "--addr", r.Addr, "reindex", "--full").CombinedOutput()
	if err != nil {
		t.Errorf("seed %d: routerctl reindex --full after the change: %v\n%s", seed, err, out)
	}
	waitSnapshotWritten(t, r)
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	t.Logf("seed %d: matches during the change, the passes and the rewrite: %d OK, %d scores not finite, errors %v", seed, ok.Load(), notFinite.Load(), byCode)
	if len(byCode) > 0 || notFinite.Load() > 0 {
		t.Errorf("seed %d: matches answered with errors %v and %d scores that are not finite; want every one OK and finite", seed, byCode, notFinite.Load())
	}
	if r.Crashed() || !r.Alive() {
		t.Fatalf("seed %d: the router crashed:\n%s", seed, r.logs.tail(40))
	}
	if got, err = takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks); err != nil {
		t.Fatalf("seed %d: snapshot after the full reindex: %v", seed, err)
	}
	if diff := compare(got, want); !diff.empty() {
		t.Errorf("seed %d: answers after the full reindex differ from a fresh router's:\n%s", seed, diff)
	}
	if err := r.Stop(); err != nil {
		t.Errorf("seed %d: stop: %v", seed, err)
	}
	r = start(t, o)
	if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if r.logs.contains("index snapshot unusable") {
		t.Errorf("seed %d: the snapshot written again is unusable:\n%s", seed, strings.Join(r.logs.matching("index snapshot"), "\n"))
	}
	if got, err = takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks); err != nil {
		t.Fatalf("seed %d: snapshot after a restart: %v", seed, err)
	}
	if diff := compare(got, want); !diff.empty() {
		t.Errorf("seed %d: after a restart, answers differ from a fresh router's:\n%s", seed, diff)
	}
	if err := r.Stop(); err != nil {
		t.Errorf("seed %d: stop: %v", seed, err)
	}
}

// editAndRevert edits the first skill of ws and waits until r serves a new
// generation, then restores the file and waits until r serves the first
// generation again: two passes that update the index. The file gets its
// modification time back too, which GetSkill shows.
func editAndRevert(t *testing.T, r *routerProc, ws *workspace) {
	t.Helper()
	rel := filepath.Join("skills", ws.Names()[0], "SKILL.md")
	p := filepath.Join(ws.Dir, rel)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	first := generationOf(t, r)
	ws.writeAtomic(rel, string(orig)+"\nAn edit made while the snapshot was changed.\n")
	waitGeneration(t, r, func(id string) bool { return id != first })
	ws.writeAtomic(rel, string(orig))
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	waitGeneration(t, r, func(id string) bool { return id == first })
}

func generationOf(t *testing.T, r *routerProc) string {
	t.Helper()
	st, err := r.RPC.Status(ctxT(t, 10*time.Second), &pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return st.GetGenerationId()
}

func waitGeneration(t *testing.T, r *routerProc, done func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !done(generationOf(t, r)) {
		if time.Now().After(deadline) {
			t.Fatalf("the edit was not served within a minute:\n%s", r.logs.tail(20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSnapshotWritten waits until Status no longer reports the snapshot
// changed.
func waitSnapshotWritten(t *testing.T, r *routerProc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := r.RPC.Status(ctxT(t, 10*time.Second), &pb.StatusRequest{})
		if err == nil && !strings.Contains(st.GetDegradedReason(), "index snapshot") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot still reported changed after a minute: %q (%v)\n%s", st.GetDegradedReason(), err, r.logs.tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
