package daemon_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/testlog"
)

func writeFileT(t *testing.T, p, content string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), 0o644))
}

// setConfig rewrites the workspace config file and moves its mtime forward so
// the change is seen even within the file system's timestamp granularity.
func setConfig(t *testing.T, ws, content string) {
	t.Helper()
	p := filepath.Join(ws, config.DefaultFile)
	writeFileT(t, p, content)
	later := time.Now().Add(time.Second)
	must(t, os.Chtimes(p, later, later))
}

func sha(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	must(t, err)
	return auth.HashToken(string(data))
}

func TestExecGating(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	outside := filepath.Join(t.TempDir(), "evil.sh")
	writeFileT(t, outside, "#!/bin/sh\nrm -rf /\n")
	pdf := filepath.Join(ws, "skills", "pdf-form-filling")
	must(t, os.Symlink(outside, filepath.Join(pdf, "scripts", "escape.sh")))
	learned := t.TempDir()
	writeFileT(t, filepath.Join(learned, "auto-fix", "SKILL.md"), "---\nname: auto-fix\ndescription: Written by an agent.\n---\nbody\n")
	writeFileT(t, filepath.Join(learned, "auto-fix", "fix.sh"), "echo fix\n")
	writeFileT(t, filepath.Join(learned, "auto-pinned", "SKILL.md"), "---\nname: auto-pinned\ndescription: Written by an agent.\n---\nbody\n")
	writeFileT(t, filepath.Join(learned, "auto-pinned", "fix.sh"), "echo pinned\n")
	writeFileT(t, filepath.Join(ws, "skills", "ALLOWLIST.txt"), fmt.Sprintf(`# approved scripts
pdf-form-filling  scripts/fill_form.py  sha256:%s
release-notes     scripts/collect_commits.sh  sha256:%s
csv-data-cleaning scripts/profile_csv.py
legacy-ftp-upload upload.sh
auto-fix          fix.sh
auto-pinned       fix.sh  sha256:%s
`, sha(t, filepath.Join(pdf, "scripts", "fill_form.py")), strings.Repeat("0", 64), sha(t, filepath.Join(learned, "auto-pinned", "fix.sh"))))
	roots := fmt.Sprintf("roots:\n  - {path: skills, kind: project}\n  - {path: \"agents/*/skills\", kind: project, agent: \"*\"}\n  - {path: %s, kind: learned}\n", learned)
	setConfig(t, ws, roots+"flags: {skills_v1: true, skills_exec: false}\n")

	logs := &testlog.Buffer{}
	r := daemontest.Start(t, ws, daemontest.Options{Logs: logs})
	c := r.Client
	authorize := func(skill, script string) *routerv1.AuthorizeExecResponse {
		t.Helper()
		res, err := c.AuthorizeExec(ctx(t), &routerv1.AuthorizeExecRequest{Skill: skill, Script: script, Caller: "test-agent"})
		if err != nil {
			t.Fatalf("AuthorizeExec(%s, %s): %v", skill, script, err)
		}
		return res
	}

	if res := authorize("pdf-form-filling", "scripts/fill_form.py"); res.DenyReason != routerv1.ExecDenyReason_EXEC_DENY_REASON_EXEC_DISABLED {
		t.Fatalf("with skills_exec off: %v", res)
	}

	// Turning skills_exec on by editing the config applies without a restart.
	setConfig(t, ws, roots+"flags: {skills_v1: true, skills_exec: true}\n")
	daemontest.Eventually(t, 5*time.Second, "skills_exec on", func() bool {
		return authorize("pdf-form-filling", "scripts/fill_form.py").Decision == routerv1.ExecDecision_EXEC_DECISION_ALLOW
	})

	deny := map[string]struct {
		skill, script string
		want          routerv1.ExecDenyReason
	}{
		"unknown skill":          {"no-such-skill", "x.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND},
		"missing script":         {"pdf-form-filling", "scripts/nope.py", routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND},
		"directory":              {"pdf-form-filling", "scripts", routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND},
		"disabled skill":         {"legacy-ftp-upload", "upload.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_SKILL_DISABLED},
		"dot-dot":                {"pdf-form-filling", "../release-notes/scripts/collect_commits.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE},
		"absolute":               {"pdf-form-filling", "/bin/sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE},
		"symlink out":            {"pdf-form-filling", "scripts/escape.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE},
		"not allowlisted":        {"kubernetes-debugging", "references/kubectl-cheatsheet.md", routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_ALLOWLISTED},
		"hash changed":           {"release-notes", "scripts/collect_commits.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH},
		"untrusted and unpinned": {"auto-fix", "fix.sh", routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_ALLOWLISTED},
	}
	for name, tc := range deny {
		t.Run(name, func(t *testing.T) {
			res := authorize(tc.skill, tc.script)
			if res.Decision != routerv1.ExecDecision_EXEC_DECISION_DENY || res.DenyReason != tc.want || res.Message == "" || res.DecisionId == "" {
				t.Errorf("got %v / %v (%s), want deny %v", res.Decision, res.DenyReason, res.Message, tc.want)
			}
			if strings.Contains(res.Message, ws) || strings.Contains(res.Message, outside) {
				t.Errorf("message reveals a host path: %s", res.Message)
			}
		})
	}

	t.Run("allowed and reported", func(t *testing.T) {
		for _, tc := range [][2]string{{"pdf-form-filling", "scripts/fill_form.py"}, {"csv-data-cleaning", "scripts/profile_csv.py"}, {"auto-pinned", "fix.sh"}} {
			res := authorize(tc[0], tc[1])
			if res.Decision != routerv1.ExecDecision_EXEC_DECISION_ALLOW || len(res.ScriptSha256) != 64 {
				t.Fatalf("%v: %v (%s)", tc, res.Decision, res.Message)
			}
			rep, err := c.ReportExecResult(ctx(t), &routerv1.ReportExecResultRequest{DecisionId: res.DecisionId, ExitCode: 2, Duration: durationpb.New(time.Second), Caller: "test-agent"})
			if err != nil || !rep.Recorded {
				t.Errorf("ReportExecResult: %v, %v", rep, err)
			}
		}
		_, err := c.ReportExecResult(ctx(t), &routerv1.ReportExecResultRequest{DecisionId: "exec-unknown"})
		if status.Code(err) != codes.NotFound {
			t.Errorf("unknown decision: %v, want NotFound", err)
		}
		_, err = c.ReportExecResult(ctx(t), &routerv1.ReportExecResultRequest{})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("no decision id: %v, want InvalidArgument", err)
		}
	})

	t.Run("bad requests", func(t *testing.T) {
		for _, req := range []*routerv1.AuthorizeExecRequest{{Script: "x.sh"}, {Skill: "pdf-form-filling"}, {Skill: "pdf-form-filling", Script: "x", Agent: "bad agent"}} {
			if _, err := c.AuthorizeExec(ctx(t), req); status.Code(err) != codes.InvalidArgument {
				t.Errorf("%v: %v, want InvalidArgument", req, err)
			}
		}
	})

	t.Run("edited script loses its approval", func(t *testing.T) {
		p := filepath.Join(pdf, "scripts", "fill_form.py")
		must(t, os.WriteFile(p, []byte("import os; os.system('curl evil')\n"), 0o755))
		if res := authorize("pdf-form-filling", "scripts/fill_form.py"); res.DenyReason != routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH {
			t.Errorf("edited pinned script: %v (%s)", res.DenyReason, res.Message)
		}
	})

	t.Run("audit records", func(t *testing.T) {
		out := logs.String()
		if n := strings.Count(out, "skill_exec_attempt"); n < len(deny)+3 {
			t.Errorf("%d skill_exec_attempt records in the log, want one per decision (%d+)", n, len(deny)+3)
		}
		if !strings.Contains(out, "skill_exec_result") || !strings.Contains(out, "hash_mismatch") {
			t.Error("exec results and deny reasons are not in the audit log")
		}
	})

	// Turning skills_exec off denies again.
	setConfig(t, ws, roots+"flags: {skills_v1: true, skills_exec: false}\n")
	daemontest.Eventually(t, 5*time.Second, "skills_exec off", func() bool {
		return authorize("csv-data-cleaning", "scripts/profile_csv.py").DenyReason == routerv1.ExecDenyReason_EXEC_DENY_REASON_EXEC_DISABLED
	})
}

func TestConfigHotReload(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	setConfig(t, ws, "flags: {skills_v1: true}\nload: {default_token_budget: 5000, max_token_budget: 50000}\n")
	r := daemontest.Start(t, ws, daemontest.Options{})
	c := r.Client
	disabled := func() bool {
		res, err := c.Match(ctx(t), &routerv1.MatchRequest{Task: "fill a pdf form"})
		return err == nil && res.Abstained && res.AbstainReason == routerv1.AbstainReason_ABSTAIN_REASON_DISABLED
	}
	if disabled() {
		t.Fatal("Match disabled with skills_v1 on")
	}

	setConfig(t, ws, "flags: {skills_v1: false}\nload: {default_token_budget: 100, max_token_budget: 50000}\n")
	if d := daemontest.Eventually(t, 5*time.Second, "Match disabled", disabled); d > time.Second {
		t.Errorf("skills_v1 off took %v to apply, want within a second of saving", d)
	}
	res, err := c.Load(ctx(t), &routerv1.LoadRequest{Name: "kubernetes-debugging", Level: routerv1.LoadLevel_LOAD_LEVEL_BODY})
	if err != nil || res.TokenBudget != 100 || !res.Truncated {
		t.Errorf("reloaded default budget not applied: %v, %v", res.GetTokenBudget(), err)
	}

	// A broken edit does not take effect and is reported; fixing it clears
	// the report.
	setConfig(t, ws, "flags: {skills_v1: true\nload: [\n")
	daemontest.Eventually(t, 5*time.Second, "error reported", func() bool {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		return err == nil && st.Config.Error != ""
	})
	if !disabled() {
		t.Error("a broken config edit took effect")
	}
	st, _ := c.Status(ctx(t), &routerv1.StatusRequest{})
	if st.Flags.SkillsV1 || !strings.Contains(st.Config.Error, ".mcp-config.yaml") {
		t.Errorf("status after broken edit: flags %v error %q", st.Flags, st.Config.Error)
	}
	setConfig(t, ws, "flags: {skills_v1: true}\n")
	daemontest.Eventually(t, 5*time.Second, "fixed config applied", func() bool {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		return err == nil && st.Config.Error == "" && st.Flags.SkillsV1
	})

	// An edit that is valid YAML but an invalid setting is rejected too.
	setConfig(t, ws, "flags: {skills_v1: false}\nload: {default_token_budget: -4}\n")
	daemontest.Eventually(t, 5*time.Second, "invalid value reported", func() bool {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		return err == nil && strings.Contains(st.Config.Error, "default_token_budget")
	})
	if disabled() {
		t.Error("an invalid config edit took effect")
	}
}

const (
	readerToken  = "reader-token-1234567890"
	adminToken   = "admin-token-0987654321"
	limitedToken = "limited-token-55555"
)

func TestAccessControl(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	tokens := filepath.Join(ws, ".mcp", "tokens.yaml")
	writeFileT(t, tokens, fmt.Sprintf(`tokens:
  - {id: reviewer-bot, sha256: %s, groups: [read, match, load], agents: [reviewer]}
  - {id: ops, sha256: %s, groups: ["*"]}
  - {id: slow, sha256: %s, groups: [read], rate: 0.5, burst: 2}
`, auth.HashToken(readerToken), auth.HashToken(adminToken), auth.HashToken(limitedToken)))
	logs := &testlog.Buffer{}
	r := daemontest.Start(t, ws, daemontest.Options{Logs: logs, Configure: func(c *config.Config) {
		c.Auth = config.Auth{Enabled: true, TokensFile: tokens}
	}})
	c := r.Client
	with := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx(t), "authorization", "Bearer "+tok)
	}

	tests := []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"no token", func() error { _, err := c.Status(ctx(t), &routerv1.StatusRequest{}); return err }, codes.Unauthenticated},
		{"wrong token", func() error { _, err := c.Status(with("nope"), &routerv1.StatusRequest{}); return err }, codes.Unauthenticated},
		{"wrong scheme", func() error {
			_, err := c.Status(metadata.AppendToOutgoingContext(ctx(t), "authorization", "Basic "+adminToken), &routerv1.StatusRequest{})
			return err
		}, codes.Unauthenticated},
		{"reader loads for its agent", func() error {
			_, err := c.Load(with(readerToken), &routerv1.LoadRequest{Name: "code-review-checklist", Agent: "reviewer", Level: 1})
			return err
		}, codes.OK},
		{"reader for another agent", func() error {
			_, err := c.Load(with(readerToken), &routerv1.LoadRequest{Name: "pdf-form-filling", Agent: "coder", Level: 1})
			return err
		}, codes.PermissionDenied},
		{"reader without agent", func() error {
			_, err := c.ListSkills(with(readerToken), &routerv1.ListSkillsRequest{})
			return err
		}, codes.PermissionDenied},
		{"reader reindexes", func() error { _, err := c.Reindex(with(readerToken), &routerv1.ReindexRequest{}); return err }, codes.PermissionDenied},
		{"reader authorizes exec", func() error {
			_, err := c.AuthorizeExec(with(readerToken), &routerv1.AuthorizeExecRequest{Skill: "x", Script: "y", Agent: "reviewer"})
			return err
		}, codes.PermissionDenied},
		{"admin reindexes", func() error { _, err := c.Reindex(with(adminToken), &routerv1.ReindexRequest{}); return err }, codes.OK},
		{"admin lists for anyone", func() error { _, err := c.ListSkills(with(adminToken), &routerv1.ListSkillsRequest{}); return err }, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := status.Code(tc.call()); got != tc.code {
				t.Errorf("code %v, want %v", got, tc.code)
			}
		})
	}

	t.Run("health is open, reflection is not", func(t *testing.T) {
		res, err := healthpb.NewHealthClient(r.Conn).Check(ctx(t), &healthpb.HealthCheckRequest{})
		if err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health without token: %v, %v", res, err)
		}
		stream, err := reflectionpb.NewServerReflectionClient(r.Conn).ServerReflectionInfo(ctx(t))
		if err == nil {
			_ = stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("reflection without token: %v", err)
		}
	})

	t.Run("rate limit", func(t *testing.T) {
		// Reflection (grpcurl's discovery) does not spend the budget.
		for i := range 5 {
			stream, err := reflectionpb.NewServerReflectionClient(r.Conn).ServerReflectionInfo(with(limitedToken))
			if err == nil {
				err = stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
			}
			if err == nil {
				_, err = stream.Recv()
			}
			if err != nil {
				t.Fatalf("reflection call %d with a limited token: %v", i+1, err)
			}
		}
		var errs []error
		for range 3 {
			_, err := c.Status(with(limitedToken), &routerv1.StatusRequest{})
			errs = append(errs, err)
		}
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("calls within the burst of 2 failed: %v", errs[:2])
		}
		last := errs[2]
		st := status.Convert(last)
		if st.Code() != codes.ResourceExhausted {
			t.Fatalf("third call in a burst of 2: %v", st.Code())
		}
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				retry = ri
			}
		}
		if retry == nil || retry.RetryDelay.AsDuration() <= 0 || retry.RetryDelay.AsDuration() > 3*time.Second {
			t.Errorf("RetryInfo = %v", retry)
		}
		// Other tokens are not affected.
		if _, err := c.Status(with(adminToken), &routerv1.StatusRequest{}); err != nil {
			t.Errorf("another token was limited: %v", err)
		}
	})

	t.Run("audit of admin calls names the principal, never the token", func(t *testing.T) {
		out := logs.String()
		if !strings.Contains(out, "admin_call") || !strings.Contains(out, `"ops"`) || !strings.Contains(out, "reviewer-bot") {
			t.Errorf("admin calls not audited with principals:\n%s", lastLines(out, 10))
		}
		for _, tok := range []string{readerToken, adminToken, limitedToken} {
			if strings.Contains(out, tok) {
				t.Errorf("token %s appears in the log", tok)
			}
		}
	})
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func dialTLS(t *testing.T, addr string, cfg *tls.Config) routerv1.SkillRouterClient {
	t.Helper()
	var creds grpc.DialOption
	if cfg == nil {
		creds = grpc.WithTransportCredentials(insecure.NewCredentials())
	} else {
		creds = grpc.WithTransportCredentials(credentials.NewTLS(cfg))
	}
	conn, err := grpc.NewClient(addr, creds)
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	return routerv1.NewSkillRouterClient(conn)
}

func TestTLS(t *testing.T) {
	pki := daemontest.NewPKI(t)
	t.Run("server TLS", func(t *testing.T) {
		r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
			c.TLS = config.TLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey}
		}})
		ok := dialTLS(t, r.Addr, &tls.Config{RootCAs: pki.CAPool, ServerName: "localhost"})
		if _, err := ok.Status(ctx(t), &routerv1.StatusRequest{}); err != nil {
			t.Errorf("TLS client: %v", err)
		}
		plain := dialTLS(t, r.Addr, nil)
		if _, err := plain.Status(ctx(t), &routerv1.StatusRequest{}); status.Code(err) != codes.Unavailable {
			t.Errorf("plaintext client against TLS: %v", err)
		}
		untrusting := dialTLS(t, r.Addr, &tls.Config{ServerName: "localhost"})
		if _, err := untrusting.Status(ctx(t), &routerv1.StatusRequest{}); err == nil {
			t.Error("a client that does not trust the CA connected")
		}
	})
	t.Run("mutual TLS", func(t *testing.T) {
		r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) {
			c.TLS = config.TLS{CertFile: pki.ServerCert, KeyFile: pki.ServerKey, ClientCAFile: pki.CAFile}
		}})
		withCert := dialTLS(t, r.Addr, &tls.Config{RootCAs: pki.CAPool, ServerName: "localhost", Certificates: []tls.Certificate{pki.Client}})
		if _, err := withCert.Status(ctx(t), &routerv1.StatusRequest{}); err != nil {
			t.Errorf("client with certificate: %v", err)
		}
		noCert := dialTLS(t, r.Addr, &tls.Config{RootCAs: pki.CAPool, ServerName: "localhost"})
		if _, err := noCert.Status(ctx(t), &routerv1.StatusRequest{}); err == nil {
			t.Error("a client without a certificate connected under mTLS")
		}
	})
	t.Run("tokens need TLS off loopback", func(t *testing.T) {
		ws := t.TempDir()
		writeFileT(t, filepath.Join(ws, config.DefaultFile), "addr: 0.0.0.0:7443\nauth: {enabled: true, tokens_file: t.yaml}\n")
		_, err := config.Resolve(config.Overrides{Workspace: ws}, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "clear text") {
			t.Errorf("auth without TLS on 0.0.0.0: %v", err)
		}
	})
}
