package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestListingFitsInMessages serves 300 skills whose descriptions each
// nearly fill a frontmatter (60,000 characters; 18 MB in all) and lists
// them in pages of 1,000 over gRPC: every page must arrive (a page of all
// of them was 18 MB, over the 16 MiB a reply may be, and failed the
// listing with ResourceExhausted for every client), and the pages together
// must hold every skill once.
func TestListingFitsInMessages(t *testing.T) {
	ws := t.TempDir()
	for i := range 300 {
		name := fmt.Sprintf("wide-%03d", i)
		desc := fmt.Sprintf("Skill %d. ", i) + strings.Repeat(strings.Repeat("x", 59)+" ", 1000)
		p := filepath.Join(ws, "skills", name, "SKILL.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nname: "+name+"\ndescription: "+desc+"\n---\nbody\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := daemontest.Start(t, ws, daemontest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seen, token, pages := map[string]int{}, "", 0
	for {
		res, err := r.Client.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		for _, s := range res.GetSkills() {
			seen[s.GetName()]++
		}
		if token = res.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(seen) != 300 {
		t.Errorf("the pages held %d skills, want 300", len(seen))
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
	}
	if pages < 5 {
		t.Errorf("%d pages for 18 MB of descriptions; want pages of at most 4 MiB", pages)
	}
}

// FuzzFolderAndFileNames puts a skill beside the examples in a folder named
// with arbitrary bytes, with or without a name of its own, and a resource
// named with arbitrary bytes, then asks a real router over gRPC: Reindex,
// ListSkills (every page, hidden and disabled skills included), Match for
// the skill's description, GetSkill and Load of every skill listed, and
// Status. None may fail with Internal or Unknown: a reply holding a string
// that is no UTF-8 could not be sent, and failed for every client (a skill
// without a name in a folder named "bad\xff" broke ListSkills, and Match
// whenever it was a candidate).
func FuzzFolderAndFileNames(f *testing.F) {
	f.Add([]byte("bad\xff"), []byte("notes.md"), false)
	f.Add([]byte("bad\xff"), []byte("notes\xfe.md"), true)
	f.Add([]byte("\xc3\x28-folder"), []byte("\xe2\x82"), false)
	f.Add([]byte("esc\x1b[31m"), []byte("r\x1b]0;t\x07.md"), false)
	f.Add([]byte("caf\xc3\xa9"), []byte("\xef\xbb\xbf.md"), false)
	f.Add([]byte("ok-folder"), []byte("\x80\x81\x82"), true)
	ws := daemontest.CopyExamples(f)
	r := daemontest.Start(f, ws, daemontest.Options{Configure: func(c *config.Config) { c.Watch.Enabled = false; c.Watch.RescanInterval = 0 }})
	f.Fuzz(func(t *testing.T, folder, file []byte, named bool) {
		if !fileNameOK(folder) || !fileNameOK(file) {
			t.Skip()
		}
		dir := filepath.Join(ws, "skills", string(folder))
		if _, err := os.Lstat(dir); err == nil {
			t.Skip() // an example's folder
		}
		t.Cleanup(func() {
			os.RemoveAll(dir)
			callOK(t, "Reindex after", func(ctx context.Context) error {
				_, err := r.Client.Reindex(ctx, &routerv1.ReindexRequest{})
				return err
			})
		})
		frontmatter := "description: Probe skill for fuzzing folder names.\n"
		if named {
			frontmatter = "name: fuzz-probe\n" + frontmatter
		}
		if err := os.MkdirAll(filepath.Join(dir, "references"), 0o755); err != nil {
			t.Skip(err) // a name this file system refuses
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\n"+frontmatter+"---\nProbe body.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "references", string(file)), []byte("resource text"), 0o644); err != nil {
			t.Skip(err)
		}
		callOK(t, "Reindex", func(ctx context.Context) error {
			_, err := r.Client.Reindex(ctx, &routerv1.ReindexRequest{})
			return err
		})
		var names []string
		callOK(t, "ListSkills", func(ctx context.Context) error {
			token := ""
			for {
				res, err := r.Client.ListSkills(ctx, &routerv1.ListSkillsRequest{PageSize: 1000, PageToken: token, IncludeHidden: true, IncludeDisabled: true})
				if err != nil {
					return err
				}
				for _, s := range res.GetSkills() {
					names = append(names, s.GetName())
				}
				if token = res.GetNextPageToken(); token == "" {
					return nil
				}
			}
		})
		callOK(t, "Match", func(ctx context.Context) error {
			_, err := r.Client.Match(ctx, &routerv1.MatchRequest{Task: "probe skill for fuzzing folder names", TopK: 20})
			return err
		})
		for _, name := range names {
			callOK(t, "GetSkill "+name, func(ctx context.Context) error {
				_, err := r.Client.GetSkill(ctx, &routerv1.GetSkillRequest{Name: name})
				return err
			})
			callOK(t, "Load "+name, func(ctx context.Context) error {
				_, err := r.Client.Load(ctx, &routerv1.LoadRequest{Name: name, Level: routerv1.LoadLevel_LOAD_LEVEL_BODY})
				if status.Code(err) == codes.FailedPrecondition { // a disabled example
					return nil
				}
				return err
			})
		}
		callOK(t, "Status", func(ctx context.Context) error {
			_, err := r.Client.Status(ctx, &routerv1.StatusRequest{})
			return err
		})
	})
}

// fileNameOK reports whether name can name a file: 1 to 200 bytes, no
// slash or NUL, not . or ..
func fileNameOK(name []byte) bool {
	return len(name) > 0 && len(name) <= 200 && !bytes.ContainsAny(name, "/\x00") && string(name) != "." && string(name) != ".."
}

// callOK runs call with a deadline and fails t on any error.
func callOK(t *testing.T, what string, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := call(ctx); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
