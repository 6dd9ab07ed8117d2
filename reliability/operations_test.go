package reliability

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/metadata"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/statedir"
)

// operationsDoc is where the backup and restore commands are written.
var operationsDoc = filepath.Join(repoRoot, "docs", "operations.md")

// docCommands returns the commands of the sh block that follows the marker
// <!-- name --> in docs/operations.md.
func docCommands(t *testing.T, name string) []string {
	t.Helper()
	doc, err := os.ReadFile(operationsDoc)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)<!-- " + name + " -->\n```sh\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatalf("docs/operations.md has no sh block after <!-- %s -->", name)
	}
	var cmds []string
	for _, l := range strings.Split(strings.TrimSpace(string(m[1])), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// TestBackupAndRestore follows docs/operations.md's backup and restore
// with the systemd layout under a temporary folder (/etc/mcpsag,
// /srv/mcpsag) and the router binary in place of systemctl: a router with a
// config file, tokens, an allowlist and a registry answers; the documented
// backup is taken; everything is deleted; the documented restore brings it
// back, and a router on an empty state folder serves the same catalog and
// matches, takes the same token and allows the same script. The archive
// holds no state folder.
func TestBackupAndRestore(t *testing.T) {
	backup, restore := docCommands(t, "backup"), docCommands(t, "restore")
	root, tmp := t.TempDir(), t.TempDir()
	etc, srv := filepath.Join(root, "etc", "mcpsag"), filepath.Join(root, "srv", "mcpsag")
	copyTree(t, filepath.Join(repoRoot, "examples"), srv)
	writeBytes(t, filepath.Join(srv, "skills", "ALLOWLIST.txt"), []byte("csv-data-cleaning scripts/profile_csv.py\n"))
	if err := os.MkdirAll(etc, 0o750); err != nil {
		t.Fatal(err)
	}
	writeBytes(t, filepath.Join(etc, "tokens.yaml"), []byte("tokens:\n  - {id: ops, sha256: "+auth.HashToken("ops-secret")+", groups: [\"*\"]}\n"))
	cfg := filepath.Join(etc, "config.yaml")
	writeBytes(t, cfg, []byte("flags: {skills_v1: true, skills_exec: true}\nauth: {enabled: true, tokens_file: "+filepath.Join(etc, "tokens.yaml")+"}\n"))
	opts := routerOpts{Workspace: srv, Env: []string{"MCPSAG_CONFIG=" + cfg}} // the state folder: <workspace>/.mcp/state
	tasks := []string{"fill in a PDF form from a JSON file", "my pod is stuck in CrashLoopBackOff", "clean a messy CSV export", "what is the capital of France"}
	ctx := metadata.AppendToOutgoingContext(ctxT(t, 5*time.Minute), "authorization", "Bearer ops-secret")
	answers := func(r *routerProc) (*snapshot, string) {
		t.Helper()
		snap, err := takeSnapshot(ctx, r.RPC, tasks)
		if err != nil {
			t.Fatal(err)
		}
		// tar keeps a file's modification time to the second only: the
		// one field of a skill's details that a restore changes.
		for _, v := range snap.Views {
			for name, detail := range v.Skills {
				v.Skills[name] = modifiedNanos.ReplaceAllString(detail, "$1")
			}
		}
		d, err := r.RPC.AuthorizeExec(ctx, &pb.AuthorizeExecRequest{Skill: "csv-data-cleaning", Script: "scripts/profile_csv.py", Caller: "backup-test"})
		if err != nil {
			t.Fatal(err)
		}
		return snap, d.GetDecision().String()
	}

	r := start(t, opts)
	want, wantExec := answers(r)
	if wantExec != "EXEC_DECISION_ALLOW" || !strings.Contains(want.Status, "disabled=1") {
		t.Fatalf("the router before the backup: exec %s, %s; want the allowlisted script allowed and the registry's disabled skill", wantExec, want.Status)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(srv, ".mcp", "state", cacheFile)); err != nil {
		t.Fatalf("the router left no state folder in the workspace to leave out: %v", err)
	}

	shell := func(cmd string) {
		t.Helper()
		cmd = strings.ReplaceAll(cmd, "/tmp/", tmp+"/")
		cmd = strings.ReplaceAll(cmd, "-C /", "-C "+root+"/")
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	for _, c := range backup {
		shell(c)
	}
	list, err := exec.Command("tar", "-tzf", filepath.Join(tmp, "mcpsag-backup.tar.gz")).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"etc/mcpsag/config.yaml", "etc/mcpsag/tokens.yaml", "srv/mcpsag/skills/ALLOWLIST.txt", "srv/mcpsag/skills/registry.json"} {
		if !strings.Contains(string(list), want) {
			t.Errorf("the backup lacks %s", want)
		}
	}
	if strings.Contains(string(list), ".mcp/state") {
		t.Errorf("the backup holds the state folder:\n%s", list)
	}

	for _, d := range []string{"etc", "srv"} {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range restore {
		switch {
		case strings.HasPrefix(c, "systemctl stop"):
		case strings.HasPrefix(c, "systemctl start"):
			r = start(t, opts)
			defer r.Stop()
		case strings.HasPrefix(c, "routerctl "):
			out, err := exec.Command(builtBinary(t, "routerctl"), append([]string{"--addr", r.Addr}, strings.Fields(c)[1:]...)...).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "serving") {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
		default:
			shell(c)
		}
	}
	got, gotExec := answers(r)
	if d := compare(got, want); !d.empty() || gotExec != wantExec {
		t.Errorf("after the restore (exec %s, want %s), the router answers otherwise:\n%s", gotExec, wantExec, d)
	}
}

// modifiedNanos is the sub-second part of a skill's modification time in
// its details' prototext.
var modifiedNanos = regexp.MustCompile(`(modified:\{seconds:\d+)\s+nanos:\d+`)

// TestOlderRouterMeetsNewerStateFolder plays a rollback: a router's state
// folder is left as a newer release would leave it, every format mark
// raised by one (the cache's schema, or only its records' version; the
// index snapshot's, the last scan's and the folder listings' magics) and
// the cache naming its writer v9.9.9, and a router of this release starts
// on it. It must say of each file that a newer release wrote it (the cache:
// v9.9.9), move the cache aside (or parse every skill
// again), rebuild, and serve what it served before; a second start finds
// nothing of another release.
func TestOlderRouterMeetsNewerStateFolder(t *testing.T) {
	tasks := []string{"fill in a PDF form from a JSON file", "my pod is stuck in CrashLoopBackOff", "clean a messy CSV export", "what is the capital of France"}
	raise := func(mark string) string { // MCPSAGG2 -> MCPSAGG3, 1 -> 2
		return mark[:len(mark)-1] + string(mark[len(mark)-1]+1)
	}
	for _, tc := range []struct {
		name  string
		key   string // the cache's meta key raised
		value string
		says  map[string]string // a log message and the file it names
	}{
		{"every file", "schema_version", raise(strconv.Itoa(statedir.CacheSchema)), map[string]string{
			"cache file unusable; moving it aside and rebuilding from the skill folders": "cache",
			"index snapshot unusable; analyzing every skill":                             "index snapshot",
			"last scan of another format or other roots; scanning the roots":             "last scan",
			"folder listings of another format (another release wrote them)":             "folder listings",
		}},
		{"records", "records_version", "", map[string]string{
			"cached skill records are from another parser or format; every skill will be parsed again": "cache's records",
			"index snapshot unusable; analyzing every skill":                                           "index snapshot",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, state := t.TempDir(), t.TempDir()
			copyTree(t, filepath.Join(repoRoot, "examples"), ws)
			opts := routerOpts{Workspace: ws, StateDir: state}
			ctx := ctxT(t, 5*time.Minute)
			r := start(t, opts)
			want, err := takeSnapshot(ctx, r.RPC, tasks)
			if err != nil {
				t.Fatal(err)
			}
			// The snapshot, the last scan and the folder listings are
			// written after the router serves: wait for them.
			for _, name := range []string{snapshotFile, "scan.last", "scan.listings"} {
				p := filepath.Join(state, name)
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
					if _, err := os.Stat(p); err == nil {
						break
					} else if time.Now().After(deadline) {
						t.Fatalf("the router wrote no %s within a minute: %v", name, err)
					}
				}
			}
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}

			// What a newer release leaves.
			db, err := bolt.Open(filepath.Join(state, cacheFile), 0o640, &bolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				meta := tx.Bucket([]byte("meta"))
				v := tc.value
				if v == "" { // records_version is "<record format>.<parser version>"
					format, parser, _ := strings.Cut(string(meta.Get([]byte(tc.key))), ".")
					v = raise(format) + "." + parser
				}
				if err := meta.Put([]byte("written_by"), []byte("v9.9.9")); err != nil {
					return err
				}
				return meta.Put([]byte(tc.key), []byte(v))
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{snapshotFile: statedir.SnapshotMagic}
			if tc.name == "every file" {
				files["scan.last"], files["scan.listings"] = statedir.ScanMagic, statedir.ListingsMagic
			}
			for name, magic := range files {
				p := filepath.Join(state, name)
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(string(b), magic) {
					t.Fatalf("%s starts with %q, want %q", name, b[:min(len(b), len(magic))], magic)
				}
				writeBytes(t, p, append([]byte(raise(magic)), b[len(magic):]...))
			}

			r = start(t, opts)
			if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := takeSnapshot(ctx, r.RPC, tasks)
			if err != nil {
				t.Fatal(err)
			}
			if d := compare(got, want); !d.empty() {
				t.Errorf("on the newer release's state folder, answers differ:\n%s", d)
			}
			for msg, file := range tc.says {
				want := "written by a newer release"
				if strings.HasPrefix(file, "cache") { // the cache names the release that wrote it
					want += " (v9.9.9)"
				}
				lines := r.logs.matching(msg)
				if len(lines) == 0 || !strings.Contains(lines[0], want) {
					t.Errorf("of the %s: log lines %q, want one saying %q", file, lines, want)
				}
			}
			aside, _ := filepath.Glob(filepath.Join(state, cacheFile+".incompatible-*"))
			if wantAside := tc.name == "every file"; (len(aside) == 1) != wantAside {
				t.Errorf("caches moved aside as incompatible: %q; want one: %v", aside, wantAside)
			}
			if err := r.Stop(); err != nil || r.Crashed() {
				t.Fatalf("stop: %v", err)
			}

			r = start(t, opts)
			defer r.Stop()
			if err := r.WaitCaughtUp(2 * time.Minute); err != nil {
				t.Fatal(err)
			}
			if l := r.logs.matching("written by a"); len(l) > 0 {
				t.Errorf("the start after the rebuild still found files of another release:\n%s", strings.Join(l, "\n"))
			}
			if l := r.logs.matching("index snapshot unusable"); len(l) > 0 {
				t.Errorf("the start after the rebuild did not read the snapshot it wrote:\n%s", strings.Join(l, "\n"))
			}
		})
	}
}
