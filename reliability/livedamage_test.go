package reliability

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// TestCacheDamagedUnderARunningRouter damages the cache file of a serving
// router while clients load skill bodies, then asks for a full reindex
// with routerctl, as an operator would: cut to nothing, cut short, and
// rewritten in place with garbage. The router must not crash; loads may
// answer Unavailable (retry) meanwhile, nothing else; the reindex must
// succeed; once Status no longer reports the damage, the router must serve
// exactly what a fresh router serves, and so after a restart.
func TestCacheDamagedUnderARunningRouter(t *testing.T) {
	ws := newWorkspace(t, scale(150, 300), 43)
	tasks := ws.Queries(10)
	want := referenceSnapshot(t, ws, tasks)
	names := ws.Names()
	damages := []struct {
		name string
		do   func(t *testing.T, path string, r *rand.Rand)
	}{
		{"cut to nothing", func(t *testing.T, path string, _ *rand.Rand) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"cut short", func(t *testing.T, path string, r *rand.Rand) {
			if err := os.Truncate(path, r.Int64N(sizeOf(t, path))); err != nil {
				t.Fatal(err)
			}
		}},
		{"rewritten in place", func(t *testing.T, path string, r *rand.Rand) {
			b := make([]byte, sizeOf(t, path))
			fillRandom(r, b)
			writeBytes(t, path, b)
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			for seed := range scale(1, 4) {
				o := routerOpts{Workspace: ws.Dir, StateDir: t.TempDir()}
				r := start(t, o)
				if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
					t.Fatal(err)
				}
				loadable := loadableNames(t, r, names)
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				var mu sync.Mutex
				byCode := map[codes.Code]int{}
				for w := range 4 {
					wg.Go(func() {
						rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
						for ctx.Err() == nil {
							cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
							_, err := r.RPC.Load(cctx, &pb.LoadRequest{Name: loadable[rng.IntN(len(loadable))], Level: pb.LoadLevel_LOAD_LEVEL_BODY, Raw: true})
							ccancel()
							if ctx.Err() != nil {
								return
							}
							mu.Lock()
							byCode[status.Code(err)]++
							mu.Unlock()
						}
					})
				}
				time.Sleep(300 * time.Millisecond)
				d.do(t, filepath.Join(o.StateDir, cacheFile), rand.New(rand.NewPCG(uint64(seed), 47)))
				time.Sleep(300 * time.Millisecond)
				ctl := exec.Command(builtBinary(t, "routerctl"), "--addr", r.Addr, "reindex", "--full")
				out, err := ctl.CombinedOutput()
				if err != nil {
					t.Errorf("seed %d: routerctl reindex --full after the damage: %v\n%s", seed, err, out)
				}
				waitUndamaged(t, r)
				time.Sleep(300 * time.Millisecond)
				cancel()
				wg.Wait()
				t.Logf("seed %d: loads during the damage and the rebuild: %v", seed, byCode)
				for code, n := range byCode {
					if code != codes.OK && code != codes.Unavailable {
						t.Errorf("seed %d: %d loads answered %v; want OK or Unavailable", seed, n, code)
					}
				}
				if r.Crashed() || !r.Alive() {
					t.Fatalf("seed %d: the router crashed:\n%s", seed, r.logs.tail(40))
				}
				got, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
				if err != nil {
					t.Fatalf("seed %d: snapshot: %v", seed, err)
				}
				if diff := compare(got, want); !diff.empty() {
					t.Errorf("seed %d: answers after the rebuild differ from a fresh router's:\n%s", seed, diff)
				}
				if err := r.Stop(); err != nil {
					t.Errorf("seed %d: stop: %v", seed, err)
				}
				restartServesTheSame(t, seed, o, tasks, want)
			}
		})
	}
}

// waitUndamaged waits until Status no longer reports damage to the cache.
func waitUndamaged(t *testing.T, r *routerProc) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := r.RPC.Status(ctxT(t, 10*time.Second), &pb.StatusRequest{})
		if err == nil && st.GetServing() && !strings.Contains(st.GetDegradedReason(), "cache") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cache still reported damaged after 2 minutes: %q (%v)\n%s", st.GetDegradedReason(), err, r.logs.tail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loadableNames returns those of names whose bodies r loads now (not the
// disabled ones).
func loadableNames(t *testing.T, r *routerProc, names []string) []string {
	t.Helper()
	var out []string
	for _, n := range names {
		_, err := r.RPC.Load(ctxT(t, 10*time.Second), &pb.LoadRequest{Name: n, Level: pb.LoadLevel_LOAD_LEVEL_BODY, Raw: true})
		if err == nil {
			out = append(out, n)
		}
	}
	if len(out) < len(names)/2 {
		t.Fatalf("only %d of %d skills load before any damage", len(out), len(names))
	}
	return out
}
