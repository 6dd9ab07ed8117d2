package reliability

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// cacheFile is the cache's name in a state directory.
const cacheFile = "cache.db"

// corruption is one way to damage a state directory's cache.
type corruption struct {
	name string
	// damage breaks dir/cache.db (a copy of a good cache).
	damage func(t *testing.T, dir string, r *rand.Rand)
	// environment marks damage to where the cache lives rather than to its
	// bytes: the router is expected to serve from a temporary cache and say
	// so (store.OpenOrFallback).
	environment bool
	// asUser runs the router as another user (uid, gid).
	asUser *syscall.Credential
	// bundledModel runs the router on its bundled model, which it unpacks
	// into the state directory.
	bundledModel bool
	// belowFS is damage the file system does not see (bit rot, a bad
	// block): the whole state directory of a cleanly stopped router is
	// copied, the cache damaged, and the note its Close left beside the
	// cache made to name the damaged file as it is now, as if its bytes
	// had changed under an unchanged inode, size and times.
	belowFS bool
}

func corruptions() []corruption {
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	page := 4096
	return []corruption{
		{name: "truncated", damage: func(t *testing.T, dir string, r *rand.Rand) {
			p := filepath.Join(dir, cacheFile)
			if err := os.Truncate(p, r.Int64N(sizeOf(t, p))); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "bit flips", damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				for range 1 + r.IntN(32) {
					i := r.IntN(len(b))
					b[i] ^= 1 << r.IntN(8)
				}
				return b
			})
		}},
		{name: "zeroed page", damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				p := r.IntN(len(b) / page)
				clear(b[p*page : (p+1)*page])
				return b
			})
		}},
		{name: "garbage page", damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				p := r.IntN(len(b) / page)
				fillRandom(r, b[p*page:(p+1)*page])
				return b
			})
		}},
		{name: "meta damage", damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				which := r.IntN(3) // meta page 0, 1 or both
				for p := range 2 {
					if which == 2 || which == p {
						off := p*page + 16 + r.IntN(56)
						fillRandom(r, b[off:off+1+r.IntN(8)])
					}
				}
				return b
			})
		}},
		{name: "forged meta", damage: func(t *testing.T, dir string, r *rand.Rand) {
			// Wrong fields under a valid checksum: the high-water mark
			// past the file's end, or the root or free list on another page.
			editBytes(t, dir, func(b []byte) []byte {
				p := 0
				if binary.NativeEndian.Uint64(b[page+16+48:]) > binary.NativeEndian.Uint64(b[16+48:]) {
					p = 1
				}
				m := b[p*page+16 : p*page+16+64]
				field := []int{16, 32, 40}[r.IntN(3)]
				binary.NativeEndian.PutUint64(m[field:], binary.NativeEndian.Uint64(m[field:])+uint64(1+r.IntN(1000)))
				h := fnv.New64a()
				h.Write(m[:56])
				binary.NativeEndian.PutUint64(m[56:], h.Sum64())
				return b
			})
		}},
		{name: "random bytes", damage: func(t *testing.T, dir string, r *rand.Rand) {
			b := make([]byte, 1+r.IntN(256<<10))
			fillRandom(r, b)
			writeBytes(t, filepath.Join(dir, cacheFile), b)
		}},
		{name: "empty file", damage: func(t *testing.T, dir string, r *rand.Rand) {
			writeBytes(t, filepath.Join(dir, cacheFile), nil)
		}},
		{name: "garbage values", damage: func(t *testing.T, dir string, r *rand.Rand) {
			// A structurally valid file whose every value, in every bucket,
			// is random bytes.
			rewriteValues(t, filepath.Join(dir, cacheFile), func(bucket string, k, v []byte) []byte {
				if bucket == "meta" && string(k) == "schema_version" {
					return v
				}
				out := make([]byte, r.IntN(2*len(v)+16))
				fillRandom(r, out)
				return out
			})
		}},
		{name: "older format", damage: func(t *testing.T, dir string, r *rand.Rand) {
			// Records, bodies and vectors as the previous release stored
			// them, without the checksum header this release adds.
			rewriteValues(t, filepath.Join(dir, cacheFile), func(bucket string, k, v []byte) []byte {
				if bucket == "meta" || len(v) < 5 {
					return v
				}
				return v[5:]
			})
		}},
		{name: "older schema", damage: func(t *testing.T, dir string, r *rand.Rand) {
			rewriteValues(t, filepath.Join(dir, cacheFile), func(bucket string, k, v []byte) []byte {
				if bucket == "meta" && string(k) == "schema_version" {
					return []byte("0")
				}
				return v
			})
		}},
		{name: "bundled model copy damaged", bundledModel: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			// Bit rot in the model the router unpacked into its state
			// directory: weights that still load, but wrong.
			// Every bundled model (the default and the fast one) is
			// unpacked there.
			onnx, _ := filepath.Glob(filepath.Join(dir, "models", "*", "model.onnx"))
			if len(onnx) == 0 {
				t.Fatalf("unpacked models not found in %s", dir)
			}
			for _, f := range onnx {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				for range 64 {
					b[4096+r.IntN(len(b)-4096)] ^= 0x10
				}
				writeBytes(t, f, b)
			}
		}},
		{name: "bit flips below the file system", belowFS: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				for range 1 + r.IntN(32) {
					i := 2*page + r.IntN(len(b)-2*page)
					b[i] ^= 1 << r.IntN(8)
				}
				return b
			})
		}},
		{name: "zeroed page below the file system", belowFS: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				p := 2 + r.IntN(len(b)/page-2)
				clear(b[p*page : (p+1)*page])
				return b
			})
		}},
		{name: "garbage page below the file system", belowFS: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			editBytes(t, dir, func(b []byte) []byte {
				p := 2 + r.IntN(len(b)/page-2)
				fillRandom(r, b[p*page:(p+1)*page])
				return b
			})
		}},
		{name: "swapped pages below the file system", belowFS: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			// A misdirected write: two pages change places.
			editBytes(t, dir, func(b []byte) []byte {
				n := len(b) / page
				p, q := 2+r.IntN(n-2), 2+r.IntN(n-2)
				tmp := bytes.Clone(b[p*page : (p+1)*page])
				copy(b[p*page:(p+1)*page], b[q*page:(q+1)*page])
				copy(b[q*page:(q+1)*page], tmp)
				return b
			})
		}},
		{name: "truncated below the file system", belowFS: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			p := filepath.Join(dir, cacheFile)
			if err := os.Truncate(p, r.Int64N(sizeOf(t, p))); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "folder in place of the file", environment: true, damage: func(t *testing.T, dir string, r *rand.Rand) {
			p := filepath.Join(dir, cacheFile)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(p, "nested"), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no permission", environment: true, asUser: nobody, damage: func(t *testing.T, dir string, r *rand.Rand) {
			if os.Geteuid() != 0 {
				// Not root: the mode bits are enough.
				if err := os.Chmod(filepath.Join(dir, cacheFile), 0); err != nil {
					t.Fatal(err)
				}
				return
			}
			// Root ignores mode bits, so the router runs as nobody and the
			// state directory stays root's, mode 0700.
			if err := os.Chmod(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
}

// TestCorruptCacheIsRecovered damages a good cache in every way above, with
// several seeds, and starts a router on it. The router must never crash,
// must come up, and must serve exactly what a router with an empty state
// directory serves on the same files. Every damage must be reported: moved
// aside (quarantined), unreadable records dropped and parsed again, or a
// temporary cache in use; damage the router cannot see must not change an
// answer.
func TestCorruptCacheIsRecovered(t *testing.T) {
	seeds := scale(1, 6)
	ws := newWorkspace(t, scale(150, 200), 7)
	tasks := ws.Queries(10)
	prepareForOtherUsers(t, ws.Dir)

	good := t.TempDir()
	start(t, routerOpts{Workspace: ws.Dir, StateDir: good, ModelDir: "-"}).Stop()
	pristine, err := os.ReadFile(filepath.Join(good, cacheFile))
	if err != nil {
		t.Fatal(err)
	}
	want := referenceSnapshot(t, ws, tasks)

	type result struct{ class, outcome string }
	var results []result
	fatal, wrong := 0, 0
	for _, c := range corruptions() {
		t.Run(c.name, func(t *testing.T) {
			for seed := range seeds {
				state := t.TempDir()
				if c.belowFS {
					copyTree(t, good, state)
				} else {
					writeBytes(t, filepath.Join(state, cacheFile), pristine)
				}
				o := routerOpts{Workspace: ws.Dir, StateDir: state}
				if c.bundledModel {
					copyTree(t, filepath.Join(good, "models"), filepath.Join(state, "models"))
					o.ModelDir = "-"
				}
				c.damage(t, state, rand.New(rand.NewPCG(uint64(seed), 31)))
				if c.belowFS {
					forgeCleanNote(t, state)
				}
				if c.asUser != nil && os.Geteuid() == 0 {
					o.Credential = c.asUser
				}
				r, err := launch(t, o)
				if err == nil {
					err = r.WaitCaughtUp(2 * time.Minute)
				}
				if r != nil && r.Crashed() {
					fatal++
					t.Errorf("seed %d: the router crashed:\n%s", seed, r.logs.tail(40))
					continue
				}
				if err != nil {
					fatal++
					t.Errorf("seed %d: the router did not come up: %v", seed, err)
					continue
				}
				got, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
				if err != nil {
					t.Fatalf("seed %d: snapshot: %v", seed, err)
				}
				if d := compare(got, want); !d.empty() {
					wrong++
					t.Errorf("seed %d: answers differ from a fresh router's:\n%s", seed, d)
				}
				outcome := "no effect (damage in unused space)"
				switch {
				case r.logs.contains("cache file unusable"):
					outcome = "quarantined and rebuilt: " + reasonOf(r.logs.matching("cache file unusable"))
				case r.logs.contains("cache records unreadable"):
					outcome = "records dropped and parsed again"
				case r.logs.contains("temporary cache"):
					outcome = "served from a temporary cache"
				case r.logs.contains("cache file damaged"):
					outcome = "worked around by bbolt, reported: " + damageOf(r.logs.matching("cache file damaged"))
				case c.bundledModel:
					onnx, _ := filepath.Glob(filepath.Join(state, "models", "*", "model.onnx"))
					for _, f := range onnx {
						// models/<name>-<digest>/: the copy of models/<name>/.
						folder := filepath.Base(filepath.Dir(f))
						name := folder[:max(strings.LastIndexByte(folder, '-'), 0)]
						got, _ := os.ReadFile(f)
						want, err := os.ReadFile(filepath.Join(repoRoot, "models", name, "model.onnx"))
						if err != nil || !bytes.Equal(got, want) {
							t.Errorf("seed %d: the damaged copy %s is still in use (%v)", seed, folder, err)
						}
					}
					outcome = "damaged model copy rewritten"
				}
				if c.environment {
					st, err := r.RPC.Status(ctxT(t, 10*time.Second), &pb.StatusRequest{})
					if err != nil || !st.GetDegraded() || !strings.Contains(st.GetDegradedReason(), "cache") {
						t.Errorf("seed %d: Status does not report the temporary cache: degraded=%v reason=%q err=%v",
							seed, st.GetDegraded(), st.GetDegradedReason(), err)
					}
				}
				if err := r.Stop(); err != nil {
					t.Errorf("seed %d: stop: %v", seed, err)
				}
				if c.belowFS {
					// What the stop vouched for (its clean-close note) must
					// hold at the next start.
					restartServesTheSame(t, seed, o, tasks, want)
				}
				results = append(results, result{c.name, outcome})
			}
		})
	}

	byClass := map[string]map[string]int{}
	for _, r := range results {
		if byClass[r.class] == nil {
			byClass[r.class] = map[string]int{}
		}
		byClass[r.class][r.outcome]++
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	t.Logf("corruption: %d damaged caches (%d classes x %d seeds), %d fatal, %d with wrong answers", len(results), len(classes), seeds, fatal, wrong)
	for _, c := range classes {
		var parts []string
		for o, n := range byClass[c] {
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
		sort.Strings(parts)
		t.Logf("  %s: %s", c, strings.Join(parts, "; "))
	}
}

// restartServesTheSame starts a router again on o after a stop and checks
// it serves what a fresh router serves, with no damage left to find.
func restartServesTheSame(t *testing.T, seed int, o routerOpts, tasks []string, want *snapshot) {
	t.Helper()
	r := start(t, o)
	if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
		t.Fatalf("seed %d: restart: %v", seed, err)
	}
	got, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
	if err != nil {
		t.Fatalf("seed %d: snapshot after a restart: %v", seed, err)
	}
	if d := compare(got, want); !d.empty() {
		t.Errorf("seed %d: after a restart, answers differ from a fresh router's:\n%s", seed, d)
	}
	if r.logs.contains("cache file unusable") || r.logs.contains("cache file damaged") {
		t.Errorf("seed %d: the restart found damage the stop had vouched for:\n%s", seed, r.logs.tail(20))
	}
	if err := r.Stop(); err != nil || r.Crashed() {
		t.Errorf("seed %d: stop after the restart: %v", seed, err)
	}
}

// forgeCleanNote makes the clean-close note in dir name the cache file as it
// is now (device, inode, size, modification and change times: the first
// five fields of its first line), keeping the rest of the note as the
// router wrote it.
func forgeCleanNote(t *testing.T, dir string) {
	p := filepath.Join(dir, cacheFile+".clean")
	note, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("no clean-close note to forge: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, cacheFile), &st); err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(note), "\n")
	fields := strings.Fields(first)
	if len(fields) < 5 {
		t.Fatalf("clean-close note %q: want at least 5 fields on its first line", first)
	}
	stamp := []string{fmt.Sprint(st.Dev), fmt.Sprint(st.Ino), fmt.Sprint(st.Size),
		fmt.Sprint(st.Mtim.Nano()), fmt.Sprint(st.Ctim.Nano())}
	fields = append(stamp, fields[5:]...)
	writeBytes(t, p, []byte(strings.Join(fields, " ")+"\n"+rest))
}

// prepareForOtherUsers opens the workspace (and the temporary folders above
// it) to other users, for tests that run the router as nobody.
func prepareForOtherUsers(t *testing.T, dir string) {
	for d := dir; d != "/" && d != os.TempDir() && d != "."; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
}

func reasonOf(lines []string) string {
	for _, l := range lines {
		if i := strings.Index(l, `"reason":"`); i >= 0 {
			rest := l[i+len(`"reason":"`):]
			if j := strings.IndexByte(rest, '"'); j >= 0 {
				return rest[:j]
			}
		}
	}
	return "?"
}

// damageOf returns the gist of a "cache file damaged" log line.
func damageOf(lines []string) string {
	for _, l := range lines {
		switch {
		case strings.Contains(l, "is empty"):
			return "empty file"
		case strings.Contains(l, "meta page"):
			return "one meta page damaged, previous transaction used"
		}
	}
	return "?"
}

func firstLine(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return clip(lines[0], 300)
}

// copyTree copies a folder tree of regular files.
func copyTree(t *testing.T, from, to string) {
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o750)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o640)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sizeOf(t *testing.T, p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func writeBytes(t *testing.T, p string, b []byte) {
	if err := os.WriteFile(p, b, 0o640); err != nil {
		t.Fatal(err)
	}
}

func editBytes(t *testing.T, dir string, f func([]byte) []byte) {
	p := filepath.Join(dir, cacheFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	writeBytes(t, p, f(b))
}

func fillRandom(r *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
}

// rewriteValues replaces every value of every bucket, nested ones included,
// through bbolt, leaving a structurally valid file. bucket is the top-level
// bucket's name.
func rewriteValues(t *testing.T, path string, f func(bucket string, k, v []byte) []byte) {
	db, err := bolt.Open(path, 0o640, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		var walk func(top string, b *bolt.Bucket) error
		walk = func(top string, b *bolt.Bucket) error {
			type kv struct{ k, v []byte }
			var puts []kv
			err := b.ForEach(func(k, v []byte) error {
				if v == nil {
					return walk(top, b.Bucket(k))
				}
				puts = append(puts, kv{bytes.Clone(k), f(top, k, bytes.Clone(v))})
				return nil
			})
			if err != nil {
				return err
			}
			for _, p := range puts {
				if err := b.Put(p.k, p.v); err != nil {
					return err
				}
			}
			return nil
		}
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name), b) })
	})
	if err != nil {
		t.Fatal(err)
	}
}
