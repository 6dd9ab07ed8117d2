package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/slowtest"
)

// TestReplicasAgree starts two routers, each on its own copy of one
// workspace (different folders, different state), and checks that they
// answer every query the same, down to the generation number and content id;
// that an identical edit to both copies moves both to the same new
// generation; and that a restart (from the index snapshot) serves the same
// generation again. Two replicas behind a round-robin balancer are then
// interchangeable. The routing tree always; the dev sets too when ../shared
// is there, in the full run.
func TestReplicasAgree(t *testing.T) {
	sets := map[string]string{"routing": filepath.Join("..", "..", "testdata", "routing")}
	if !testing.Short() && slowtest.Full() {
		if qs, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "eval", "*", "queries.jsonl")); len(qs) > 0 {
			for _, q := range qs {
				sets[filepath.Base(filepath.Dir(q))] = filepath.Dir(q)
			}
		}
	}
	for name, src := range sets {
		t.Run(name, func(t *testing.T) {
			qs, err := eval.LoadQueries(filepath.Join(src, "queries.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if len(qs) > 600 {
				qs = qs[:600]
			}
			copies := [2]string{copyTree(t, src), copyTree(t, src)}
			noWatch := func(c *config.Config) { c.Watch.RescanInterval = 0 }
			// The routing tree with the default model, the encoder; the
			// dev sets' thousands of skills with the fast model (the
			// daemontest default): embedding them three times with the
			// encoder under the race detector takes many minutes.
			encoder := name == "routing"
			states := [2]string{t.TempDir(), t.TempDir()}
			var rs [2]*daemontest.Router
			for i := range rs {
				rs[i] = daemontest.Start(t, copies[i], daemontest.Options{StateDir: states[i], Configure: noWatch, DefaultModel: encoder})
			}
			ctx := context.Background()
			first := sameStatus(t, rs)
			sameAnswers(t, rs, qs)

			// The same edit on both copies: both serve the same new
			// generation.
			for _, ws := range copies {
				editFirstSkill(t, ws)
			}
			for _, r := range rs {
				if _, err := r.Client.Reindex(ctx, &routerv1.ReindexRequest{}); err != nil {
					t.Fatal(err)
				}
			}
			second := sameStatus(t, rs)
			if second.GenerationId == first.GenerationId || second.IndexGeneration == first.IndexGeneration {
				t.Errorf("an edit kept generation %d %s", second.IndexGeneration, second.GenerationId)
			}
			sameAnswers(t, rs, qs)

			// A restart (warm, from the snapshot) serves the same
			// generation.
			rs[0].Stop(t)
			rs[0] = daemontest.Start(t, copies[0], daemontest.Options{StateDir: states[0], Configure: noWatch, DefaultModel: encoder})
			if third := sameStatus(t, rs); third.GenerationId != second.GenerationId {
				t.Errorf("after a restart generation %s, want %s", third.GenerationId, second.GenerationId)
			}
			sameAnswers(t, rs, qs)
		})
	}
}

// sameStatus checks that the routers serve the same generation and returns
// the first one's status. It first waits for each router to serve its
// model's vectors, with no background embedding under way: until then a
// replica serves a generation of its own progress (the fast model's vectors,
// keywords).
func sameStatus(t *testing.T, rs [2]*daemontest.Router) *routerv1.StatusResponse {
	t.Helper()
	var sts [2]*routerv1.StatusResponse
	for i, r := range rs {
		daemontest.Eventually(t, 5*time.Minute, fmt.Sprintf("replica %d to serve its model's vectors with nothing embedding in the background", i), func() bool {
			st, err := r.Client.Status(context.Background(), &routerv1.StatusRequest{})
			if err != nil {
				t.Fatal(err)
			}
			sts[i] = st
			return st.GetModel().GetServing() && st.Backfill == nil
		})
	}
	if sts[0].GenerationId == "" || sts[0].IndexGeneration == 0 {
		t.Fatalf("no generation identity: %d %q", sts[0].IndexGeneration, sts[0].GenerationId)
	}
	if sts[0].GenerationId != sts[1].GenerationId || sts[0].IndexGeneration != sts[1].IndexGeneration || sts[0].Skills != sts[1].Skills {
		t.Fatalf("replicas serve generation %d %s (%d skills) and %d %s (%d skills)", sts[0].IndexGeneration, sts[0].GenerationId,
			sts[0].Skills, sts[1].IndexGeneration, sts[1].GenerationId, sts[1].Skills)
	}
	return sts[0]
}

// sameAnswers checks that both routers give the same MatchResponse to
// every query, in two modes.
func sameAnswers(t *testing.T, rs [2]*daemontest.Router, qs []eval.Query) {
	t.Helper()
	ctx := context.Background()
	for _, q := range qs {
		for _, mode := range []routerv1.MatchMode{routerv1.MatchMode_MATCH_MODE_HYBRID, routerv1.MatchMode_MATCH_MODE_BM25} {
			req := &routerv1.MatchRequest{Task: q.Query, TopK: 5, Options: &routerv1.MatchOptions{Mode: mode}}
			a, err := rs[0].Client.Match(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			b, err := rs[1].Client.Match(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(a, b) {
				t.Fatalf("query %s (%s): replicas answer differently:\n%v\n%v", q.ID, mode, a, b)
			}
		}
	}
}

// copyTree copies a skill tree into a new temporary folder.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ws")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// editFirstSkill appends a line to the body of the first SKILL.md (in path
// order) under ws.
func editFirstSkill(t *testing.T, ws string) {
	t.Helper()
	var first string
	_ = filepath.WalkDir(ws, func(p string, d os.DirEntry, err error) error {
		if err == nil && first == "" && d.Name() == "SKILL.md" {
			first = p
		}
		return err
	})
	data, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.TrimRight(string(data), "\n") + "\n\nAlso handles replica checks.\n"
	if err := os.WriteFile(first, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	_ = os.Chtimes(first, later, later)
}
