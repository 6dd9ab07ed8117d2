package reliability

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// TestStatusShowsNoHostPaths runs a router whose Status has every field that
// names a file: the model missing (degraded_reason, its folder under the
// test's temporary folder), a reindex failed on a full state folder
// (last_reindex_error names the cache), a config file rejected on reload
// (config.error) and the config's own path. No field may name the
// workspace, the state folder, the model folder or the temporary folder as
// a host path; each says what it says with <workspace>, <state>, <model>.
// Then the model is put in place: model.path names <model>.
func TestStatusShowsNoHostPaths(t *testing.T) {
	ws := newWorkspace(t, 20, 47)
	disk := newLimitedDisk(t)
	model := filepath.Join(t.TempDir(), "model")
	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: disk.Dir, ModelDir: model})
	defer r.Stop()
	ctx := ctxT(t, 5*time.Minute)

	disk.Fill(t, r)
	for i := range 100 {
		s, _ := skillAt(20000 + i)
		s.Body += strings.Repeat("\nA long appendix line that makes the body several pages long.", 650)
		ws.writeSkill("skills", s, false)
		ws.live[s.Name] = true
	}
	if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{Full: true}); err == nil {
		t.Fatalf("Reindex succeeded on a full state folder (%s); the test did not fill it", disk.kind)
	}
	// The error stays in Status while the state folder is full: every
	// pass has the 100 skills to write. A pass after Free succeeds and
	// clears it, so it is read now.
	full := waitStatus(ctx, t, r, "last_reindex_error set", func(st *pb.StatusResponse) bool { return st.GetLastReindexError() != "" })
	disk.Free(t, r)
	cfg := filepath.Join(ws.Dir, ".mcp", ".mcp-config.yaml")
	if err := os.WriteFile(cfg, []byte("match: [not, a, mapping\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := waitStatus(ctx, t, r, "config.error set", func(st *pb.StatusResponse) bool { return st.GetConfig().GetError() != "" })
	t.Logf("degraded_reason: %q\nlast_reindex_error: %q\nconfig: %q, error %q", st.GetDegradedReason(),
		full.GetLastReindexError(), st.GetConfig().GetPath(), clip(st.GetConfig().GetError(), 200))
	for _, want := range []struct{ field, got, placeholder string }{
		{"degraded_reason", st.GetDegradedReason(), "<model>"},
		{"last_reindex_error", full.GetLastReindexError(), "<state>"},
		{"config.path", st.GetConfig().GetPath(), "<workspace>"},
		{"config.error", st.GetConfig().GetError(), "<workspace>"},
	} {
		if !strings.Contains(want.got, want.placeholder) {
			t.Errorf("Status %s = %q, want it to name its folder %s", want.field, want.got, want.placeholder)
		}
	}
	noHostPaths := func(text string) {
		t.Helper()
		for _, dir := range []string{ws.Dir, disk.Dir, model, os.TempDir() + "/"} {
			if strings.Contains(text, dir) {
				t.Errorf("Status names the host path %s:\n%s", dir, text)
			}
		}
	}
	noHostPaths(protojson.Format(full))
	noHostPaths(protojson.Format(st))

	// The model put in place: the next reindex loads it, and Status
	// names its folder.
	copyDir(t, bundledModel, model)
	ws.Mutate(1, 0, 0)
	if _, err := r.RPC.Reindex(ctx, &pb.ReindexRequest{}); err != nil {
		t.Fatalf("Reindex with the model in place: %v", err)
	}
	st = waitStatus(ctx, t, r, "model.path under <model>", func(st *pb.StatusResponse) bool {
		return strings.HasPrefix(st.GetModel().GetPath(), "<model>")
	})
	noHostPaths(protojson.Format(st))
}

// waitStatus asks r for its Status until ok holds, and fails the test when
// it does not within a minute.
func waitStatus(ctx context.Context, t *testing.T, r *routerProc, what string, ok func(*pb.StatusResponse) bool) *pb.StatusResponse {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := r.RPC.Status(ctx, &pb.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("Status never had %s within a minute:\n%s", what, protojson.Format(st))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStatusPathUnderTheTemporaryFolder runs a router whose config file
// lies in a folder of the system's temporary folder that is none of the
// router's: Status names it <temp>/…/router.yaml, with none of the host's
// path between (it showed <temp>/ and the rest of the path).
func TestStatusPathUnderTheTemporaryFolder(t *testing.T) {
	ws := newWorkspace(t, 10, 73)
	cfg := filepath.Join(t.TempDir(), "router.yaml")
	if err := os.WriteFile(cfg, []byte("watch:\n  debounce: 100ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cfg, os.TempDir()+"/") {
		t.Skipf("the test's folder %s is not in the temporary folder", cfg)
	}
	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir(), Args: []string{"--config", cfg}})
	defer r.Stop()
	st, err := r.RPC.Status(ctxT(t, time.Minute), &pb.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.GetConfig().GetPath(); got != "<temp>/…/router.yaml" {
		t.Errorf("Status config.path = %q, want <temp>/…/router.yaml", got)
	}
	text := protojson.Format(st)
	for i := strings.Index(text, "<temp>/"); i >= 0; i = strings.Index(text, "<temp>/") {
		rest := text[i+len("<temp>/"):]
		if !strings.HasPrefix(rest, "…") && !strings.HasPrefix(rest, "mcpsag-") {
			t.Errorf("Status names a host path after <temp>: %q", clip(text[i:], 80))
		}
		text = rest
	}
}
