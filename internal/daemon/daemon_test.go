package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/store"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func listNames(t *testing.T, c routerv1.SkillRouterClient, req *routerv1.ListSkillsRequest) []string {
	t.Helper()
	res, err := c.ListSkills(ctx(t), req)
	if err != nil {
		t.Fatalf("ListSkills: %v", err)
	}
	var out []string
	for _, s := range res.Skills {
		out = append(out, s.Name)
	}
	return out
}

func TestExamplesOverGRPC(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	c := r.Client

	t.Run("health and reflection", func(t *testing.T) {
		h := healthpb.NewHealthClient(r.Conn)
		for _, svc := range []string{"", "mcpsag.router.v1.SkillRouter"} {
			res, err := h.Check(ctx(t), &healthpb.HealthCheckRequest{Service: svc})
			if err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health %q = %v, %v; want SERVING", svc, res, err)
			}
		}
		stream, err := reflectionpb.NewServerReflectionClient(r.Conn).ServerReflectionInfo(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var services []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			services = append(services, s.Name)
		}
		if !slices.Contains(services, "mcpsag.router.v1.SkillRouter") || !slices.Contains(services, "grpc.health.v1.Health") {
			t.Errorf("reflection lists %v", services)
		}
	})

	t.Run("list", func(t *testing.T) {
		got := strings.Join(listNames(t, c, &routerv1.ListSkillsRequest{}), ",")
		want := "csv-data-cleaning,incident-postmortem,kubernetes-debugging,openapi-docs,pdf-form-filling,release-notes,sql-query-review"
		if got != want {
			t.Errorf("global list = %s\nwant %s", got, want)
		}
		reviewer := listNames(t, c, &routerv1.ListSkillsRequest{Agent: "reviewer"})
		if !slices.Contains(reviewer, "code-review-checklist") || len(reviewer) != 8 {
			t.Errorf("reviewer sees %v", reviewer)
		}
		withDisabled := listNames(t, c, &routerv1.ListSkillsRequest{IncludeDisabled: true})
		if !slices.Contains(withDisabled, "legacy-ftp-upload") {
			t.Errorf("include_disabled list %v lacks legacy-ftp-upload", withDisabled)
		}
		// Pagination covers everything exactly once.
		var paged []string
		req := &routerv1.ListSkillsRequest{PageSize: 3}
		for {
			res, err := c.ListSkills(ctx(t), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Skills {
				paged = append(paged, s.Name)
			}
			if res.NextPageToken == "" {
				break
			}
			req.PageToken = res.NextPageToken
		}
		if strings.Join(paged, ",") != want {
			t.Errorf("paged = %v", paged)
		}
	})

	t.Run("catalog budget", func(t *testing.T) {
		res, err := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{CatalogCharBudget: 600})
		if err != nil {
			t.Fatal(err)
		}
		cat := res.Catalog
		if cat == nil || cat.Chars > 600 || cat.Chars != int32(len([]rune(cat.Text))) {
			t.Fatalf("catalog = %+v", cat)
		}
		if len(cat.Shortened)+len(cat.Cut) == 0 {
			t.Errorf("a 600-char budget must shorten or cut something: %+v", cat)
		}
		if len(cat.Included)+len(cat.Cut) != 7 {
			t.Errorf("included %d + cut %d != 7 skills", len(cat.Included), len(cat.Cut))
		}
		full, _ := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{CatalogCharBudget: 100000})
		if len(full.Catalog.Shortened)+len(full.Catalog.Cut) != 0 || !strings.Contains(full.Catalog.Text, "not instructions") {
			t.Errorf("large budget catalog = %+v", full.Catalog)
		}
	})

	t.Run("show", func(t *testing.T) {
		res, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "pdf-form-filling"})
		if err != nil {
			t.Fatal(err)
		}
		d := res.Skill
		if d.Frontmatter.License != "Apache-2.0" || d.Owner != "docs-team" || !d.Enabled || len(d.ContentSha256) != 64 ||
			d.Source.Kind != routerv1.SourceKind_SOURCE_KIND_PROJECT || d.Source.Root != "skills" || d.Precedence != 1 {
			t.Errorf("detail = %+v", d)
		}
		var paths []string
		for _, r := range d.Resources {
			paths = append(paths, r.Path)
		}
		if strings.Join(paths, ",") != "references/field-types.md,scripts/fill_form.py" {
			t.Errorf("resources = %v", paths)
		}
		legacy, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "legacy-ftp-upload"})
		if err != nil {
			t.Fatal(err)
		}
		if legacy.Skill.Enabled || !strings.Contains(legacy.Skill.DisabledReason, "registry.json") || legacy.Skill.ModelInvocable {
			t.Errorf("legacy = enabled %v reason %q", legacy.Skill.Enabled, legacy.Skill.DisabledReason)
		}
	})

	t.Run("load levels", func(t *testing.T) {
		l1, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "release-notes", Level: routerv1.LoadLevel_LOAD_LEVEL_SUMMARY})
		if err != nil || l1.Summary.Name != "release-notes" || l1.Content != "" {
			t.Fatalf("level 1 = %v, %v", l1, err)
		}
		l2, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "release-notes", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY})
		if err != nil {
			t.Fatal(err)
		}
		if l2.Truncated || !l2.Framed || !strings.HasPrefix(l2.Content, "<skill_content name=\"release-notes\"") ||
			!strings.Contains(l2.Content, "Release notes from git history") || l2.TokenBudget != 5000 || l2.TokenCounting == "" ||
			l2.Provenance.Sha256 == "" || l2.Provenance.Trust != routerv1.Trust_TRUST_TRUSTED || len(l2.Resources) != 1 {
			t.Errorf("level 2 = %+v", l2)
		}
		cut, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "kubernetes-debugging", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: 50, Raw: true})
		if err != nil {
			t.Fatal(err)
		}
		if !cut.Truncated || cut.Tokens > 50 || cut.TotalTokens <= 50 || cut.Framed {
			t.Errorf("budget 50: truncated %v tokens %d total %d framed %v", cut.Truncated, cut.Tokens, cut.TotalTokens, cut.Framed)
		}
		l3, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "kubernetes-debugging", Level: routerv1.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: "references/kubectl-cheatsheet.md", Raw: true})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(l3.Content, "# kubectl for debugging") || l3.ResourcePath != "references/kubectl-cheatsheet.md" || l3.SizeBytes == 0 {
			t.Errorf("level 3 = %+v", l3)
		}
		agentOnly, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "code-review-checklist", Agent: "reviewer", Level: routerv1.LoadLevel_LOAD_LEVEL_SUMMARY})
		if err != nil || agentOnly.Summary.Source.Agent != "reviewer" {
			t.Errorf("agent skill for its agent = %v, %v", agentOnly, err)
		}
	})

	t.Run("status", func(t *testing.T) {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !st.Serving || st.Skills != 7 || st.SkillsDisabled != 1 || st.SkillsAgentScoped != 1 || st.IndexGeneration == 0 ||
			!st.Flags.SkillsV1 || st.Flags.SkillsExec || !slices.Equal(st.Agents, []string{"reviewer"}) || st.LastReindex.Scanned != 9 {
			t.Errorf("status = %+v", st)
		}
	})
}

// TestBadInput sends every malformed request the API must reject and checks
// the code, and that invalid arguments name the field.
func TestBadInput(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	dir := filepath.Join(ws, "skills", "pdf-form-filling")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(outside, filepath.Join(dir, "references", "escape.md")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "references", "pipe"), 0o644))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "references", "zero")))
	must(t, os.WriteFile(filepath.Join(dir, "references", "huge.bin"), nil, 0o644))
	must(t, os.Truncate(filepath.Join(dir, "references", "huge.bin"), 2<<20))

	r := daemontest.Start(t, ws, daemontest.Options{})
	c := r.Client
	res := func(path string) *routerv1.LoadRequest {
		return &routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: path}
	}
	body := func(budget int32) *routerv1.LoadRequest {
		return &routerv1.LoadRequest{Name: "pdf-form-filling", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: budget}
	}
	tests := []struct {
		name  string
		call  func() error
		code  codes.Code
		field string
	}{
		{"load empty name", func() error { _, err := c.Load(ctx(t), &routerv1.LoadRequest{Level: 1}); return err }, codes.InvalidArgument, "name"},
		{"load unknown skill", func() error {
			_, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "no-such-skill", Level: 1})
			return err
		}, codes.NotFound, ""},
		{"load level 0", func() error { _, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "pdf-form-filling"}); return err }, codes.InvalidArgument, "level"},
		{"load level 9", func() error {
			_, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "pdf-form-filling", Level: 9})
			return err
		}, codes.InvalidArgument, "level"},
		{"negative budget", func() error { _, err := c.Load(ctx(t), body(-1)); return err }, codes.InvalidArgument, "token_budget"},
		{"huge budget", func() error { _, err := c.Load(ctx(t), body(1<<30)); return err }, codes.InvalidArgument, "token_budget"},
		{"resource at level 2", func() error {
			req := body(0)
			req.ResourcePath = "scripts/fill_form.py"
			_, err := c.Load(ctx(t), req)
			return err
		}, codes.InvalidArgument, "resource_path"},
		{"resource missing path", func() error { _, err := c.Load(ctx(t), res("")); return err }, codes.InvalidArgument, "resource_path"},
		{"resource dotdot", func() error { _, err := c.Load(ctx(t), res("../release-notes/SKILL.md")); return err }, codes.PermissionDenied, ""},
		{"resource absolute", func() error { _, err := c.Load(ctx(t), res("/etc/passwd")); return err }, codes.PermissionDenied, ""},
		{"resource symlink out", func() error { _, err := c.Load(ctx(t), res("references/escape.md")); return err }, codes.PermissionDenied, ""},
		{"resource device link", func() error { _, err := c.Load(ctx(t), res("references/zero")); return err }, codes.PermissionDenied, ""},
		{"resource fifo", func() error { _, err := c.Load(ctx(t), res("references/pipe")); return err }, codes.FailedPrecondition, ""},
		{"resource directory", func() error { _, err := c.Load(ctx(t), res("references")); return err }, codes.FailedPrecondition, ""},
		{"resource too large", func() error { _, err := c.Load(ctx(t), res("references/huge.bin")); return err }, codes.FailedPrecondition, ""},
		{"resource missing", func() error { _, err := c.Load(ctx(t), res("references/nope.md")); return err }, codes.NotFound, ""},
		{"resource NUL", func() error { _, err := c.Load(ctx(t), res("a\x00b")); return err }, codes.InvalidArgument, "resource_path"},
		{"load disabled skill", func() error {
			_, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "legacy-ftp-upload", Level: 2})
			return err
		}, codes.FailedPrecondition, ""},
		{"agent skill for another agent", func() error {
			_, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "code-review-checklist", Agent: "someone-else", Level: 1})
			return err
		}, codes.NotFound, ""},
		{"get bad agent", func() error {
			_, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "pdf-form-filling", Agent: "../x"})
			return err
		}, codes.InvalidArgument, "agent"},
		{"get oversized name", func() error {
			_, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: strings.Repeat("a", 1000)})
			return err
		}, codes.InvalidArgument, "name"},
		{"list page size", func() error { _, err := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{PageSize: -1}); return err }, codes.InvalidArgument, "page_size"},
		{"list page token", func() error {
			_, err := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{PageToken: "garbage!"})
			return err
		}, codes.InvalidArgument, "page_token"},
		{"list catalog budget", func() error {
			_, err := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{CatalogCharBudget: -5})
			return err
		}, codes.InvalidArgument, "catalog_char_budget"},
		{"oversized message", func() error {
			_, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: strings.Repeat("a", 5<<20)})
			return err
		}, codes.ResourceExhausted, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.call()
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			st := status.Convert(err)
			if st.Code() != tc.code {
				t.Fatalf("code = %v (%s), want %v", st.Code(), st.Message(), tc.code)
			}
			if st.Message() == "" {
				t.Error("empty message")
			}
			if strings.Contains(st.Message(), ws) {
				t.Errorf("message %q reveals the host path", st.Message())
			}
			if tc.field != "" {
				var found bool
				for _, d := range st.Details() {
					if br, ok := d.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 && br.FieldViolations[0].Field == tc.field {
						found = true
					}
				}
				if !found {
					t.Errorf("no BadRequest detail for field %q in %v", tc.field, st.Details())
				}
			}
		})
	}
	// The router is still healthy after all that.
	if _, err := c.Status(ctx(t), &routerv1.StatusRequest{}); err != nil {
		t.Errorf("router unhealthy after bad input: %v", err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRestartParsesNothingAndLockIsExclusive(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	state := t.TempDir()
	r := daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	st, err := r.Client.Status(ctx(t), &routerv1.StatusRequest{})
	if err != nil || st.LastReindex.Parsed != 9 {
		t.Fatalf("first start parsed %d, want 9 (%v)", st.GetLastReindex().GetParsed(), err)
	}

	// A second router on the same state directory fails fast, naming the holder.
	cfg, err := config.Resolve(config.Overrides{Workspace: ws, Addr: "127.0.0.1:0", StateDir: state}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	second := &daemon.Main{Config: cfg, Stderr: io.Discard}
	start := time.Now()
	err = second.Run(context.Background())
	if !errors.Is(err, store.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(err.Error(), r.Addr) {
		t.Errorf("second router: %v; want ErrLocked naming pid and address", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second router took %v to fail", d)
	}

	r.Stop(t)
	r = daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	st, err = r.Client.Status(ctx(t), &routerv1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st.LastReindex.Parsed != 0 || st.LastReindex.Unchanged != 9 || st.Skills != 7 {
		t.Errorf("warm restart: parsed %d unchanged %d skills %d; want 0, 9, 7", st.LastReindex.Parsed, st.LastReindex.Unchanged, st.Skills)
	}
}

func TestReindexAndHotReload(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.Watch.Debounce = 100 * time.Millisecond
		c.Watch.RescanInterval = 0 // events only: the test must see the watcher work
	}})
	c := r.Client
	skills := filepath.Join(ws, "skills")

	desc := func(name string) string {
		res, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: name})
		if err != nil {
			return "<" + status.Code(err).String() + ">"
		}
		return res.Skill.Frontmatter.Description
	}

	t.Run("explicit reindex", func(t *testing.T) {
		p := filepath.Join(skills, "openapi-docs", "SKILL.md")
		writeSkillFile(t, p, "openapi-docs", "Write OpenAPI specs (edited).")
		res, err := c.Reindex(ctx(t), &routerv1.ReindexRequest{})
		if err != nil {
			t.Fatal(err)
		}
		// The watcher may have picked the edit up first; either way the
		// index now reflects it.
		if got := desc("openapi-docs"); got != "Write OpenAPI specs (edited)." {
			t.Errorf("after reindex: %q (stats %+v)", got, res.Stats)
		}
		full, err := c.Reindex(ctx(t), &routerv1.ReindexRequest{Full: true})
		if err != nil || full.Stats.Parsed != 9 || full.Stats.Scanned != 9 {
			t.Errorf("full reindex = %+v, %v", full.GetStats(), err)
		}
	})

	t.Run("new skill appears", func(t *testing.T) {
		writeSkillFile(t, filepath.Join(skills, "terraform-plan", "SKILL.md"), "terraform-plan", "Review terraform plans.")
		daemontest.Eventually(t, 15*time.Second, "terraform-plan", func() bool { return desc("terraform-plan") == "Review terraform plans." })
	})

	t.Run("editor rename-save", func(t *testing.T) {
		p := filepath.Join(skills, "csv-data-cleaning", "SKILL.md")
		tmp := filepath.Join(skills, "csv-data-cleaning", ".SKILL.md.swp")
		writeSkillFile(t, tmp, "csv-data-cleaning", "Clean CSV files (saved by an editor).")
		must(t, os.Rename(tmp, p))
		daemontest.Eventually(t, 15*time.Second, "rename-save", func() bool { return desc("csv-data-cleaning") == "Clean CSV files (saved by an editor)." })
	})

	t.Run("bad edit keeps last good", func(t *testing.T) {
		p := filepath.Join(skills, "sql-query-review", "SKILL.md")
		must(t, os.WriteFile(p, []byte("---\nname: sql-query-review\ndescription: [oops\n---\n"), 0o644))
		daemontest.Eventually(t, 15*time.Second, "error reported", func() bool {
			res, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "sql-query-review"})
			return err == nil && slices.ContainsFunc(res.Skill.Problems, func(p *routerv1.Problem) bool { return p.Code == "serving-last-good" })
		})
		if !strings.HasPrefix(desc("sql-query-review"), "Review SQL queries") {
			t.Errorf("bad edit replaced the skill: %q", desc("sql-query-review"))
		}
	})

	t.Run("folder deleted", func(t *testing.T) {
		must(t, os.RemoveAll(filepath.Join(skills, "incident-postmortem")))
		daemontest.Eventually(t, 15*time.Second, "deletion", func() bool { return desc("incident-postmortem") == "<NotFound>" })
	})

	t.Run("checkout of hundreds of files", func(t *testing.T) {
		// Like a branch switch: many folders appear at once, some files are
		// rewritten by rename.
		for i := range 300 {
			name := fmt.Sprintf("bulk-%03d", i)
			writeSkillFile(t, filepath.Join(skills, "bulk", name, "SKILL.md"), name, fmt.Sprintf("Bulk skill %d.", i))
		}
		daemontest.Eventually(t, 15*time.Second, "300 bulk skills", func() bool {
			st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
			return err == nil && st.Skills == 7+300
		})
		must(t, os.RemoveAll(filepath.Join(skills, "bulk")))
		daemontest.Eventually(t, 15*time.Second, "bulk removal", func() bool {
			st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
			return err == nil && st.Skills == 7
		})
	})

	t.Run("agent folder appears", func(t *testing.T) {
		writeSkillFile(t, filepath.Join(ws, "agents", "writer", "skills", "style-guide", "SKILL.md"), "style-guide", "House style.")
		daemontest.Eventually(t, 15*time.Second, "agent skill", func() bool {
			res, err := c.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "style-guide", Agent: "writer"})
			return err == nil && res.Skill.Source.Agent == "writer"
		})
	})
}

func writeSkillFile(t *testing.T, p, name, desc string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n# %s\n", name, desc, name)), 0o644))
}

func TestHealthDuringDrain(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		c.Shutdown.Drain = 500 * time.Millisecond
	}})
	h := healthpb.NewHealthClient(r.Conn)
	done := make(chan error, 1)
	m := r.Main
	go func() { done <- m.Close(context.Background()) }()
	deadline := time.Now().Add(400 * time.Millisecond)
	var last healthpb.HealthCheckResponse_ServingStatus
	for time.Now().Before(deadline) {
		res, err := h.Check(ctx(t), &healthpb.HealthCheckRequest{})
		if err == nil {
			last = res.Status
			if last == healthpb.HealthCheckResponse_NOT_SERVING {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health during drain = %v, want NOT_SERVING", last)
	}
	if err := <-done; err != nil {
		t.Errorf("Close: %v", err)
	}
	r.Main = nil
}

// TestUnknownMethod: a method the router does not serve gets Unimplemented,
// also when tokens are on and the caller is authenticated.
func TestUnknownMethod(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	err := r.Conn.Invoke(ctx(t), "/mcpsag.router.v1.SkillRouter/Frobnicate", &routerv1.StatusRequest{}, &routerv1.StatusResponse{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), "Frobnicate") {
		t.Errorf("unknown method: %v", err)
	}
}

// TestAdminHealthEndpoints: /healthz answers while the process runs, /readyz
// only while the router serves and is not draining.
func TestAdminHealthEndpoints(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
		c.AdminAddr = "127.0.0.1:0"
		c.Shutdown.Drain = 2 * time.Second
	}})
	base := "http://" + r.Main.AdminAddr()
	get := func(path string) (int, string) {
		res, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != http.StatusOK || body != "ready" {
		t.Errorf("/readyz while serving: %d %q", code, body)
	}
	m := r.Main
	done := make(chan error, 1)
	go func() { done <- m.Close(context.Background()) }()
	daemontest.Eventually(t, 2*time.Second, "/readyz to turn 503 while draining", func() bool {
		code, _ := get("/readyz")
		return code == http.StatusServiceUnavailable
	})
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200 (the process is alive)", code)
	}
	if err := <-done; err != nil {
		t.Errorf("Close: %v", err)
	}
	r.Main = nil
}

// TestNotFoundIsClientNeutral: an unknown skill is NotFound with a stable
// reason, in words any client can act on.
func TestNotFoundIsClientNeutral(t *testing.T) {
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{})
	_, err := r.Client.GetSkill(ctx(t), &routerv1.GetSkillRequest{Name: "no-such-skill"})
	st := status.Convert(err)
	reason := ""
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			reason = ei.Reason
		}
	}
	if st.Code() != codes.NotFound || reason != "SKILL_NOT_FOUND" || strings.Contains(st.Message(), "routerctl") {
		t.Errorf("GetSkill of an unknown skill: %v %q, reason %q", st.Code(), st.Message(), reason)
	}
}
