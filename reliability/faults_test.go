package reliability

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/slowtest"
)

// limitedDisk is a state directory whose writes can be made to fail: a small
// tmpfs that fills up (a real ENOSPC) where mounting is permitted, else a
// file size limit on the router process (EFBIG), set after it started.
type limitedDisk struct {
	Dir  string
	kind string
	mnt  string
}

func newLimitedDisk(t *testing.T) *limitedDisk {
	d := &limitedDisk{Dir: t.TempDir()}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", d.Dir).CombinedOutput(); err == nil {
			d.kind, d.mnt = "tmpfs", d.Dir
			t.Cleanup(func() { _ = exec.Command("umount", "-l", d.mnt).Run() })
			return d
		} else {
			t.Logf("cannot mount a tmpfs (%v: %s); injecting write errors with a file size limit instead", err, strings.TrimSpace(string(out)))
		}
	}
	d.kind = "rlimit"
	return d
}

// Fill makes further writes to the state directory fail.
func (d *limitedDisk) Fill(t *testing.T, r *routerProc) {
	switch d.kind {
	case "tmpfs":
		f, err := os.Create(filepath.Join(d.Dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		// Smaller writes fill the last partial pages.
		for {
			if _, err := f.Write(buf[:512]); err != nil {
				break
			}
		}
	default:
		fi, err := os.Stat(filepath.Join(d.Dir, cacheFile))
		if err != nil {
			t.Fatal(err)
		}
		lim := &unix.Rlimit{Cur: uint64(fi.Size()), Max: math.MaxUint64}
		if err := unix.Prlimit(r.Pid(), unix.RLIMIT_FSIZE, lim, nil); err != nil {
			t.Skipf("cannot limit the router's file size either (%v): no way to inject write errors here", err)
		}
	}
}

// Free makes room again.
func (d *limitedDisk) Free(t *testing.T, r *routerProc) {
	switch d.kind {
	case "tmpfs":
		if err := os.Remove(filepath.Join(d.Dir, "filler")); err != nil {
			t.Fatal(err)
		}
	default:
		lim := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
		if err := unix.Prlimit(r.Pid(), unix.RLIMIT_FSIZE, lim, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// waitSettled waits until the router has no reindex running and its work
// signature has not changed for quiet.
func waitSettled(t *testing.T, r *routerProc, quiet time.Duration) {
	t.Helper()
	before, _ := workSignature(context.Background(), r.RPC)
	deadline := time.Now().Add(2 * time.Minute)
	last, since := before, time.Now()
	for time.Now().Before(deadline) {
		sig, busy := workSignature(context.Background(), r.RPC)
		if sig != last || busy {
			last, since = sig, time.Now()
		} else if time.Since(since) > quiet {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("router did not settle within 2 minutes:\n%s", r.logs.tail(20))
}

// TestDiskFullDuringReindex fills the state directory's file system, then
// changes many skills and reindexes. The router must not crash, must keep
// serving the last good generation unchanged, and must say why the reindex
// failed; once there is room again, it must catch up to the files by itself.
func TestDiskFullDuringReindex(t *testing.T) {
	ws := newWorkspace(t, scale(200, 400), 11)
	tasks := ws.Queries(8)
	disk := newLimitedDisk(t)
	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: disk.Dir})
	ctx := ctxT(t, 10*time.Minute)
	before, err := takeSnapshot(ctx, r.RPC, tasks)
	if err != nil {
		t.Fatal(err)
	}

	disk.Fill(t, r)
	// Big new bodies (12 MB in all) and many edits: more pages than the
	// cache's free list can hold, whatever its history.
	for i := range 300 {
		s, _ := skillAt(10000 + i)
		s.Body += strings.Repeat("\nA long appendix line that makes the body several pages long.", 650)
		ws.writeSkill("skills", s, false)
		ws.live[s.Name] = true
	}
	ws.Mutate(40, 0, 10)
	_, rerr := r.RPC.Reindex(ctx, &pb.ReindexRequest{Full: true})
	if rerr == nil {
		t.Fatalf("Reindex succeeded on a full disk (%s); the test did not fill it", disk.kind)
	}
	time.Sleep(time.Second) // let watcher-triggered passes fail too
	if !r.Alive() || r.Crashed() {
		t.Fatalf("router died on a full disk:\n%s", r.logs.tail(30))
	}
	st, err := r.RPC.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	reason := st.GetLastReindexError()
	t.Logf("disk full (%s): Reindex answered %s: %s; Status last_reindex_error: %q", disk.kind, status.Code(rerr), clip(status.Convert(rerr).Message(), 200), clip(reason, 200))
	if !strings.Contains(reason, "no space left") && !strings.Contains(reason, "file too large") {
		t.Errorf("Status does not say why the reindex failed: last_reindex_error = %q", reason)
	}
	during, err := takeSnapshot(ctx, r.RPC, tasks)
	if err != nil {
		t.Fatalf("serving stopped on a full disk: %v", err)
	}
	if d := compare(during, before); !d.empty() {
		t.Errorf("on a full disk the router does not serve the last good generation:\n%s", d)
	}

	disk.Free(t, r)
	if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{}); err != nil {
		t.Fatalf("Reindex after freeing space: %v", err)
	}
	waitSettled(t, r, time.Second)
	after, err := takeSnapshot(ctx, r.RPC, tasks)
	if err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if d := compare(after, referenceSnapshot(t, ws, tasks)); !d.empty() {
		t.Errorf("after space came back, the router does not serve the files:\n%s", d)
	}
}

// copyDir copies a folder of regular files.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		in, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// matchWorks checks a Match answers, and whether it says it is degraded.
func matchWorks(t *testing.T, r *routerProc, task string, wantDegraded bool) {
	t.Helper()
	m, err := r.RPC.Match(ctxT(t, 30*time.Second), &pb.MatchRequest{Task: task, TopK: 3})
	if err != nil {
		t.Fatalf("Match: %v", err)
	}
	if m.GetDegraded() != wantDegraded {
		t.Errorf("Match degraded = %v, want %v (%s)", m.GetDegraded(), wantDegraded, renderMatch(m))
	}
	if len(m.GetCandidates()) == 0 && !m.GetAbstained() {
		t.Errorf("Match returned neither candidates nor an abstention")
	}
}

// TestModelRemovedOrCorrupted takes the embedding model away from a running
// router, then restarts it without one, with a truncated one, and puts it
// back. The router must keep serving throughout: with the model it loaded
// while the folder is gone, degraded (with the reason in Status) when it
// starts without a usable model, matching by keywords or with the bundled
// fast model's vectors, and with embeddings again,
// by itself, once the folder is fixed. (Damage inside the weights of a
// well-formed model file cannot be told from a different model; the bundled
// model's copy in the state directory is checked byte for byte instead, see
// TestCorruptCacheIsRecovered.)
func TestModelRemovedOrCorrupted(t *testing.T) {
	ws := newWorkspace(t, scale(150, 300), 13)
	tasks := ws.Queries(8)
	model := filepath.Join(t.TempDir(), "model")
	copyDir(t, bundledModel, model)
	state := t.TempDir()
	o := routerOpts{Workspace: ws.Dir, StateDir: state, ModelDir: model}
	r := start(t, o)
	ctx := ctxT(t, 10*time.Minute)

	// Removed while serving: the loaded model keeps working.
	if err := os.RemoveAll(model); err != nil {
		t.Fatal(err)
	}
	ws.Mutate(10, 5, 2)
	if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{}); err != nil {
		t.Fatalf("Reindex with the model folder gone: %v", err)
	}
	matchWorks(t, r, tasks[0], false)
	r.Stop()

	for _, broken := range []struct {
		name    string
		breakIt func()
	}{
		{"missing", func() {}},
		{"corrupt", func() {
			// Cut short, as an interrupted copy leaves it.
			copyDir(t, bundledModel, model)
			p := filepath.Join(model, "model.onnx")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(broken.name, func(t *testing.T) {
			broken.breakIt()
			r := start(t, o)
			st, err := r.RPC.Status(ctx, &pb.StatusRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if !st.GetDegraded() || !strings.Contains(st.GetDegradedReason(), "model") {
				t.Errorf("Status with a %s model: degraded=%v reason=%q", broken.name, st.GetDegraded(), st.GetDegradedReason())
			}
			t.Logf("%s model: Status says %q", broken.name, clip(st.GetDegradedReason(), 200))
			// Keyword-only, unless the bundled fast model serves in its
			// place (a missing folder is not known to hold that very model).
			matchWorks(t, r, tasks[0], !st.GetFastModel().GetServing())
			if _, err := takeSnapshot(ctx, r.RPC, tasks); err != nil {
				t.Errorf("serving with a %s model: %v", broken.name, err)
			}

			// Fixed on disk: the next reindex picks it up.
			_ = os.RemoveAll(model)
			copyDir(t, bundledModel, model)
			ws.Mutate(3, 1, 0)
			if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{}); err != nil {
				t.Fatalf("Reindex after fixing the model: %v", err)
			}
			st, err = r.RPC.Status(ctx, &pb.StatusRequest{})
			if err != nil || st.GetDegraded() {
				t.Errorf("after fixing the model: degraded=%v reason=%q err=%v", st.GetDegraded(), st.GetDegradedReason(), err)
			}
			matchWorks(t, r, tasks[0], false)
			got, err := takeSnapshot(ctx, r.RPC, tasks)
			if err != nil {
				t.Fatal(err)
			}
			r.Stop()
			want := referenceSnapshot(t, ws, tasks)
			if d := compare(got, want); !d.empty() {
				t.Errorf("after recovering the model:\n%s", d)
			}
			if broken.name == "missing" {
				_ = os.RemoveAll(model)
			}
		})
	}
}

// loadClients runs n clients against r, each mixing Match, Load (levels 1
// to 3), ListSkills and GetSkill, until stop is closed. Names come from
// ListSkills, so a skill removed in between may be NotFound: those are
// counted apart, as expected races.
type loadStats struct {
	mu        sync.Mutex
	calls     map[string]int
	latencies map[string][]time.Duration
	errs      map[string]int // "method code: message" -> count
	notFound  atomic.Int64
}

func newLoadStats() *loadStats {
	return &loadStats{calls: map[string]int{}, latencies: map[string][]time.Duration{}, errs: map[string]int{}}
}

func (s *loadStats) record(method string, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	s.latencies[method] = append(s.latencies[method], d)
	if err != nil {
		st := status.Convert(err)
		s.errs[fmt.Sprintf("%s %s: %s", method, st.Code(), clip(st.Message(), 120))]++
	}
}

// unexpected returns the errors other than NotFound on a vanished name.
func (s *loadStats) unexpected() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	var out []string
	for k, c := range s.errs {
		n += c
		out = append(out, fmt.Sprintf("%dx %s", c, k))
	}
	return n, out
}

// ended reports whether ctx is done or past its deadline: a call made in
// the moment between the deadline and ctx's timer firing fails at once
// with DeadlineExceeded while ctx.Err() is still nil.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

func runClients(ctx context.Context, t *testing.T, rpc []pb.SkillRouterClient, tasks []string, stats *loadStats, wg *sync.WaitGroup) {
	for i, c := range rpc {
		wg.Add(1)
		go func(id int, c pb.SkillRouterClient) {
			defer wg.Done()
			var names []string
			token := ""
			n := id
			call := func(method string, f func(context.Context) error) {
				// Generous: on a loaded machine a call may queue behind a
				// reindex; latency is reported, a timeout is an error.
				cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				t0 := time.Now()
				err := f(cctx)
				if err != nil && ended(ctx) {
					return // the run ended mid-call
				}
				if status.Code(err) == codes.NotFound && method != "ListSkills" && method != "Match" {
					stats.notFound.Add(1)
					stats.record(method, time.Since(t0), nil)
					return
				}
				stats.record(method, time.Since(t0), err)
			}
			for !ended(ctx) {
				n++
				if len(names) == 0 || n%10 == 0 {
					call("ListSkills", func(ctx context.Context) error {
						// Walk the pages in turn, so names come from the
						// whole catalog.
						resp, err := c.ListSkills(ctx, &pb.ListSkillsRequest{PageSize: 1000, PageToken: token})
						if status.Code(err) == codes.InvalidArgument && token != "" {
							token = "" // a token from an older generation
							return nil
						}
						if err == nil {
							token = resp.GetNextPageToken()
							if len(resp.GetSkills()) > 0 {
								names = names[:0]
								for _, s := range resp.GetSkills() {
									names = append(names, s.GetName())
								}
							}
						}
						return err
					})
					continue
				}
				name := names[(n*7919)%len(names)]
				switch n % 10 {
				case 0, 1, 2, 3, 4:
					call("Match", func(ctx context.Context) error {
						_, err := c.Match(ctx, &pb.MatchRequest{Task: tasks[n%len(tasks)], TopK: 5})
						return err
					})
				case 5, 6:
					call("GetSkill", func(ctx context.Context) error {
						_, err := c.GetSkill(ctx, &pb.GetSkillRequest{Name: name})
						return err
					})
				case 7:
					call("Load", func(ctx context.Context) error {
						_, err := c.Load(ctx, &pb.LoadRequest{Name: name, Level: pb.LoadLevel_LOAD_LEVEL_SUMMARY})
						return err
					})
				case 8:
					call("Load", func(ctx context.Context) error {
						_, err := c.Load(ctx, &pb.LoadRequest{Name: name, Level: pb.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: 800})
						if status.Code(err) == codes.FailedPrecondition { // a disabled skill
							return nil
						}
						return err
					})
				case 9:
					call("Load", func(ctx context.Context) error {
						_, err := c.Load(ctx, &pb.LoadRequest{Name: name, Level: pb.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: "references/notes.md"})
						switch status.Code(err) {
						case codes.NotFound, codes.FailedPrecondition: // most skills have no notes; disabled ones refuse
							return nil
						}
						return err
					})
				}
			}
		}(i, c)
	}
}

// TestTreeSwapUnderLoad checks out another branch of a workspace kept in git
// (500 files changed: edits, additions and removals) three times while four
// clients keep calling. No call may fail (other than NotFound for a skill
// that disappeared between listing and asking), and once the tree is still
// the router must serve exactly what a fresh router serves.
func TestTreeSwapUnderLoad(t *testing.T) {
	if !full {
		slowtest.Skip(t, "swaps a 600-skill tree under load")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ws := newWorkspace(t, 600, 17)
	tasks := ws.Queries(10)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = ws.Dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "a")
	git("add", "-A")
	git("commit", "-q", "-m", "a")
	git("checkout", "-q", "-b", "b")
	c := ws.Mutate(300, 100, 100)
	git("add", "-A")
	git("commit", "-q", "-m", "b")
	git("checkout", "-q", "a")
	t.Logf("branch b differs from a in %d edited, %d added and %d removed skills", c.Edited, c.Added, c.Removed)

	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir()})
	var clients []pb.SkillRouterClient
	for range 4 {
		clients = append(clients, pb.NewSkillRouterClient(dialFrom(t, r.Addr, "127.0.0.1")))
	}
	stats := newLoadStats()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	runClients(ctx, t, clients, tasks, stats, &wg)
	for _, branch := range []string{"b", "a", "b"} {
		time.Sleep(2 * time.Second)
		git("checkout", "-q", branch)
	}
	time.Sleep(3 * time.Second)
	cancel()
	wg.Wait()
	waitSettled(t, r, 2*time.Second)
	got, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
	if err != nil {
		t.Fatal(err)
	}
	r.Stop()

	n, errs := stats.unexpected()
	total := 0
	for _, c := range stats.calls {
		total += c
	}
	t.Logf("tree swap under load: %d calls, %d NotFound on vanished names, %d unexpected errors", total, stats.notFound.Load(), n)
	for _, e := range errs {
		t.Errorf("unexpected error during the swaps: %s", e)
	}
	ws.live = map[string]bool{}
	entries, _ := os.ReadDir(filepath.Join(ws.Dir, "skills"))
	for _, e := range entries {
		if e.IsDir() {
			ws.live[e.Name()] = true
		}
	}
	if d := compare(got, referenceSnapshot(t, ws, tasks)); !d.empty() {
		t.Errorf("after the swaps the router does not serve the checked-out tree:\n%s", d)
	}
}

// TestTimestampJumps edits skills whose modification times jump far into
// the future and back into the past, as when the clock is stepped, and
// checks the router serves what is on disk each time. A change that keeps
// both the size and the modification time is invisible to the incremental
// scan (which compares them, as make and git do); a full reindex must see it.
// Wall-clock steps of the router's own clock are not tested: that would mean
// changing the clock of a shared machine, and the router's timers
// (debounce, rescan) use Go's monotonic clock, which steps do not move.
func TestTimestampJumps(t *testing.T) {
	ws := newWorkspace(t, 120, 19)
	tasks := ws.Queries(6)
	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir()})
	ctx := ctxT(t, 10*time.Minute)
	names := ws.Names()
	edit := func(name, extra string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(ws.Dir, "skills", name, "SKILL.md")
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(data, extra...), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, full bool) {
		t.Helper()
		if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{Full: full}); err != nil {
			t.Fatalf("%s: Reindex: %v", step, err)
		}
		waitSettled(t, r, 500*time.Millisecond)
		got, err := takeSnapshot(ctx, r.RPC, tasks)
		if err != nil {
			t.Fatal(err)
		}
		if d := compare(got, referenceSnapshot(t, ws, tasks)); !d.empty() {
			t.Errorf("%s:\n%s", step, d)
		}
	}
	future := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	past := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range names[:10] {
		edit(n, "\nEdited with a clock in 2099.\n", future)
	}
	check("mtimes in the future", false)
	for _, n := range names[:10] {
		edit(n, "\nEdited after the clock went back to 1999.\n", past)
	}
	check("mtimes stepped back", false)

	// Same size, same modification time, other content.
	p := filepath.Join(ws.Dir, "skills", names[20], "SKILL.md")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	swapped := []byte(strings.Replace(string(data), "a", "b", 1))
	if len(swapped) != len(data) || string(swapped) == string(data) {
		t.Fatal("could not make a same-size edit")
	}
	if err := os.WriteFile(p, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	check("same size and time, after a full reindex", true)
	r.Stop()
}
