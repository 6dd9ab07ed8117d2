package remote

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// testServer is a small SkillRouter served over gRPC on a loopback port: it
// records each request and answers from canned responses, or with the
// status error set for the method.
type testServer struct {
	routerv1.UnimplementedSkillRouterServer

	mu       sync.Mutex
	gen      uint64
	skills   []*routerv1.SkillSummary
	requests map[string]proto.Message
	fail     map[string]error
	statuses int
}

func (s *testServer) record(method string, req proto.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[method] = req
	return s.fail[method]
}

func (s *testServer) request(method string) proto.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

func (s *testServer) setFail(method string, err error) {
	s.mu.Lock()
	s.fail[method] = err
	s.mu.Unlock()
}

// publish serves a new generation with skills.
func (s *testServer) publish(skills ...*routerv1.SkillSummary) {
	s.mu.Lock()
	s.gen++
	s.skills = skills
	s.mu.Unlock()
}

var pdfSummary = &routerv1.SkillSummary{
	Name: "pdf-form-filling", Description: "Fill in PDF forms", Tags: []string{"pdf"}, Trust: routerv1.Trust_TRUST_TRUSTED,
	Source: &routerv1.SkillSource{Kind: routerv1.SourceKind_SOURCE_KIND_PROJECT, Root: "skills", Path: "pdf-form-filling/SKILL.md"},
}

var learnedSummary = &routerv1.SkillSummary{
	Name: "learned-trick", Description: "A trick", Trust: routerv1.Trust_TRUST_UNTRUSTED,
	Source: &routerv1.SkillSource{Kind: routerv1.SourceKind_SOURCE_KIND_LEARNED, Root: "learned", Agent: "coder", Path: "learned-trick/SKILL.md"},
}

func (s *testServer) Match(_ context.Context, req *routerv1.MatchRequest) (*routerv1.MatchResponse, error) {
	if err := s.record("Match", req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetTask() == "nothing" {
		return &routerv1.MatchResponse{Verdict: routerv1.MatchVerdict_MATCH_VERDICT_NO_SKILL, VerdictDetail: "nothing fits",
			Abstained: true, AbstainReason: routerv1.AbstainReason_ABSTAIN_REASON_CALIBRATED,
			AbstainDetail: "no skill fits", IndexGeneration: s.gen}, nil
	}
	return &routerv1.MatchResponse{
		Candidates: []*routerv1.Candidate{{
			Skill:  pdfSummary,
			Scores: &routerv1.Scores{Cosine: 0.8, Bm25: 3.5, Fused: 0.71, DenseRank: 1, Bm25Rank: 2, TriggerBoost: 0.05},
			Reason: "cosine 0.80", TriggersFired: []string{"pdf form"}, NameMentioned: true,
		}},
		IndexGeneration: s.gen, Degraded: true, Mode: routerv1.MatchMode_MATCH_MODE_DENSE, Fusion: routerv1.Fusion_FUSION_RRF,
	}, nil
}

func (s *testServer) ListSkills(_ context.Context, req *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	if err := s.record("ListSkills", req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &routerv1.ListSkillsResponse{Skills: s.skills, TotalSize: int32(len(s.skills)), IndexGeneration: s.gen,
		Shadowed: []*routerv1.ShadowedSkill{{Name: "pdf-form-filling", Winner: pdfSummary.Source,
			Shadowed: &routerv1.SkillSource{Kind: routerv1.SourceKind_SOURCE_KIND_USER, Root: "~/.skills", Path: "pdf-form-filling/SKILL.md"},
			Reason:   "project ranks above user"}}}
	if req.GetCatalogCharBudget() > 0 {
		out.Catalog = &routerv1.RenderedCatalog{Text: "- pdf-form-filling: Fill in PDF forms\n", Chars: 38, Budget: req.GetCatalogCharBudget(),
			Included: []string{"pdf-form-filling"}, Cut: []string{"learned-trick"}}
	}
	return out, nil
}

func (s *testServer) GetSkill(_ context.Context, req *routerv1.GetSkillRequest) (*routerv1.GetSkillResponse, error) {
	if err := s.record("GetSkill", req); err != nil {
		return nil, err
	}
	yes := true
	var manifest *routerv1.SkillManifest
	if req.GetManifest() {
		manifest = &routerv1.SkillManifest{FrontmatterJson: `{"name":"legacy-ftp","x":"y"}`, Files: []*routerv1.FileDigest{
			{Path: "SKILL.md", SizeBytes: 90, Sha256: "abc"}, {Path: "scripts/up.sh", SizeBytes: 12, Sha256: "def"}}}
	}
	return &routerv1.GetSkillResponse{IndexGeneration: 7, Manifest: manifest, Skill: &routerv1.SkillDetail{
		Name: "legacy-ftp", Source: &routerv1.SkillSource{Kind: routerv1.SourceKind_SOURCE_KIND_USER, Root: "~/.skills", Path: "legacy-ftp/SKILL.md"},
		Frontmatter: &routerv1.Frontmatter{Name: "legacy-ftp", Description: "Upload over FTP", Hidden: true,
			DisableModelInvocation: true, UserInvocable: &yes, Triggers: []string{"ftp upload"}, Extra: map[string]string{"x": `"y"`}},
		Precedence: 2, ContentSha256: "abc", Resources: []*routerv1.Resource{{Path: "scripts/up.sh", SizeBytes: 12}},
		Problems: []*routerv1.Problem{{Severity: routerv1.Severity_SEVERITY_ERROR, Code: "name-mismatch", Line: 2, Message: "m"}},
		Enabled:  false, DisabledReason: "disabled by skills/registry.json (enabled: false)", Owner: "ops",
		Modified: timestamppb.New(time.Unix(1700000000, 0)), BodyTokens: 42,
		ShadowedBy: &routerv1.SkillSource{Kind: routerv1.SourceKind_SOURCE_KIND_PROJECT, Root: "skills", Path: "legacy-ftp/SKILL.md"},
	}}, nil
}

func (s *testServer) Load(_ context.Context, req *routerv1.LoadRequest) (*routerv1.LoadResponse, error) {
	if err := s.record("Load", req); err != nil {
		return nil, err
	}
	out := &routerv1.LoadResponse{Name: req.GetName(), Level: req.GetLevel(), Summary: pdfSummary, Framed: true,
		Provenance: &routerv1.Provenance{Source: pdfSummary.Source, Sha256: "feed", Trust: routerv1.Trust_TRUST_TRUSTED}}
	switch req.GetLevel() {
	case routerv1.LoadLevel_LOAD_LEVEL_BODY:
		out.Content, out.Truncated, out.Tokens, out.TotalTokens, out.TokenBudget = "<skill_content>body</skill_content>\n", true, 10, 90, req.GetTokenBudget()
		out.Resources = []*routerv1.Resource{{Path: "references/a.md", SizeBytes: 5}}
		out.MediaType = "text/markdown; charset=utf-8"
	case routerv1.LoadLevel_LOAD_LEVEL_RESOURCE:
		out.Data, out.Framed, out.ResourcePath, out.SizeBytes, out.MediaType = []byte{0xff, 0}, false, req.GetResourcePath(), 2, "application/octet-stream"
	}
	return out, nil
}

func (s *testServer) Reindex(_ context.Context, req *routerv1.ReindexRequest) (*routerv1.ReindexResponse, error) {
	if err := s.record("Reindex", req); err != nil {
		return nil, err
	}
	return &routerv1.ReindexResponse{Stats: &routerv1.ReindexStats{Scanned: 9, Changed: 1, Duration: durationpb.New(time.Second), IndexGeneration: 8}}, nil
}

func (s *testServer) Status(_ context.Context, req *routerv1.StatusRequest) (*routerv1.StatusResponse, error) {
	if err := s.record("Status", req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses++
	return &routerv1.StatusResponse{Version: "v1", Serving: true, IndexGeneration: s.gen, Skills: int32(len(s.skills)),
		Flags: &routerv1.FeatureFlags{SkillsV1: true, SkillsExec: true}, Agents: []string{"coder"},
		Validation: &routerv1.ValidationSummary{Errors: 1, ByCode: map[string]int32{"name-mismatch": 1}},
		Model:      &routerv1.ModelStatus{Name: "static", Dimension: 256, CacheEntries: 12, MatchThreshold: 0.4}}, nil
}

func (s *testServer) AuthorizeExec(_ context.Context, req *routerv1.AuthorizeExecRequest) (*routerv1.AuthorizeExecResponse, error) {
	if err := s.record("AuthorizeExec", req); err != nil {
		return nil, err
	}
	return &routerv1.AuthorizeExecResponse{Decision: routerv1.ExecDecision_EXEC_DECISION_DENY,
		DenyReason: routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH, Message: "changed", DecisionId: "d1"}, nil
}

func (s *testServer) ReportExecResult(_ context.Context, req *routerv1.ReportExecResultRequest) (*routerv1.ReportExecResultResponse, error) {
	if err := s.record("ReportExecResult", req); err != nil {
		return nil, err
	}
	return &routerv1.ReportExecResultResponse{Recorded: true}, nil
}

// serve starts ts on a loopback port and returns a Router connected to it.
func serve(t *testing.T, ts *testServer, opts Options) (*Router, func()) {
	t.Helper()
	if ts.requests == nil {
		ts.requests, ts.fail = map[string]proto.Message{}, map[string]error{}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	routerv1.RegisterSkillRouterServer(srv, ts)
	go func() { _ = srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); srv.Stop() })
	return New(routerv1.NewSkillRouterClient(conn), opts), srv.Stop
}

func TestMatch(t *testing.T) {
	ts := &testServer{gen: 3}
	r, _ := serve(t, ts, Options{})
	th := 0.5
	res, err := r.Match(context.Background(), skill.MatchRequest{Task: "fill a form", TopK: 2, Agent: "coder",
		Options: skill.MatchOptions{Mode: skill.ModeKeyword, Fusion: skill.FusionConvex, Threshold: &th, IncludeHidden: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := ts.request("Match").(*routerv1.MatchRequest)
	want := &routerv1.MatchRequest{Task: "fill a form", TopK: 2, Agent: "coder", Options: &routerv1.MatchOptions{
		Mode: routerv1.MatchMode_MATCH_MODE_BM25, Fusion: routerv1.Fusion_FUSION_CONVEX, Threshold: &th, IncludeHidden: true}}
	if !proto.Equal(got, want) {
		t.Errorf("request sent = %v, want %v", got, want)
	}
	if res.Generation != 3 || !res.Degraded || res.Mode != skill.ModeDense || res.Fusion != skill.FusionRRF || len(res.Candidates) != 1 {
		t.Fatalf("result = %+v", res)
	}
	c := res.Candidates[0]
	if c.Skill.Name != "pdf-form-filling" || c.Skill.Description() != "Fill in PDF forms" || c.Skill.Root.Kind != skill.KindProject ||
		c.Skill.RelPath != "pdf-form-filling/SKILL.md" || !c.Skill.Trusted() || c.Cosine != 0.8 || c.BM25 != 3.5 || c.Fused != 0.71 ||
		c.DenseRank != 1 || c.BM25Rank != 2 || c.TriggerBoost != 0.05 || !c.NameMentioned || c.Reason != "cosine 0.80" ||
		!slices.Equal(c.TriggersFired, []string{"pdf form"}) || !slices.Equal(c.Skill.Tags(), []string{"pdf"}) {
		t.Errorf("candidate = %+v skill %+v", c, c.Skill)
	}
	res, err = r.Match(context.Background(), skill.MatchRequest{Task: "nothing"})
	if err != nil || !res.Abstained || res.AbstainReason != skill.AbstainCalibrated || res.AbstainDetail != "no skill fits" || res.Candidates != nil ||
		res.Verdict != skill.VerdictNoSkill || res.VerdictDetail != "nothing fits" {
		t.Errorf("abstention = %+v, %v", res, err)
	}
}

func TestListGetLoad(t *testing.T) {
	ts := &testServer{gen: 5, skills: []*routerv1.SkillSummary{pdfSummary, learnedSummary}}
	r, _ := serve(t, ts, Options{})
	ctx := context.Background()
	list, err := r.List(ctx, skill.ListRequest{Agent: "coder", PageSize: 10, PageToken: "t", IncludeHidden: true, IncludeDisabled: true, CatalogBudget: 80})
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.request("ListSkills").(*routerv1.ListSkillsRequest); !proto.Equal(got, &routerv1.ListSkillsRequest{
		Agent: "coder", PageSize: 10, PageToken: "t", IncludeHidden: true, IncludeDisabled: true, CatalogCharBudget: 80}) {
		t.Errorf("list request = %v", got)
	}
	if len(list.Skills) != 2 || list.Total != 2 || list.Generation != 5 || list.Catalog == nil || list.Catalog.Budget != 80 ||
		!slices.Equal(list.Catalog.Cut, []string{"learned-trick"}) {
		t.Errorf("list = %+v", list)
	}
	if l := list.Skills[1]; l.Trusted() || l.Root.Agent != "coder" || l.Root.Display != "learned" {
		t.Errorf("learned skill = %+v", l)
	}
	if sh := list.Shadowed; len(sh) != 1 || sh[0].Winner.Root.Kind != skill.KindProject || sh[0].Loser.Root.Kind != skill.KindUser || sh[0].Reason == "" {
		t.Errorf("shadows = %+v", sh)
	}

	got, err := r.Get(ctx, skill.GetRequest{Name: "legacy-ftp", Agent: "coder"})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Entry.Skill
	if s.Enabled() || s.DisabledReason() != "disabled by skills/registry.json (enabled: false)" || s.Registry.Owner != "ops" ||
		!s.Frontmatter.Hidden || !s.Frontmatter.DisableModelInvocation || s.Frontmatter.UserInvocable == nil || !*s.Frontmatter.UserInvocable ||
		got.Entry.Rank != 2 || got.Entry.ShadowedBy == nil || got.Entry.ShadowedBy.Skill.Name != "legacy-ftp" || got.Generation != 7 ||
		len(s.Problems) != 1 || s.Problems[0].Severity != skill.SeverityError || s.BodyTokens != 42 || s.ModTime.Unix() != 1700000000 ||
		len(s.Resources) != 1 || s.Frontmatter.Extra["x"] != `"y"` {
		t.Errorf("get = %+v skill %+v", got.Entry, s)
	}

	body, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-form-filling", Agent: "coder", Level: skill.LevelBody, TokenBudget: 300})
	if err != nil {
		t.Fatal(err)
	}
	if got := ts.request("Load").(*routerv1.LoadRequest); got.GetLevel() != routerv1.LoadLevel_LOAD_LEVEL_BODY || got.GetTokenBudget() != 300 || got.GetAgent() != "coder" {
		t.Errorf("load request = %v", got)
	}
	if body.Content != "<skill_content>body</skill_content>\n" || !body.Framed || !body.Truncated || body.TokenBudget != 300 || body.SHA256 != "feed" ||
		len(body.Skill.Resources) != 1 || body.Skill.Resources[0].Path != "references/a.md" || body.Level != skill.LevelBody {
		t.Errorf("body = %+v", body)
	}
	file, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-form-filling", Level: skill.LevelResource, ResourcePath: "a.bin"})
	if err != nil || string(file.Data) != "\xff\x00" || file.ResourcePath != "a.bin" || file.Framed || file.Size != 2 {
		t.Errorf("file = %+v, %v", file, err)
	}
}

func TestGetWithManifest(t *testing.T) {
	ts := &testServer{gen: 5}
	r, _ := serve(t, ts, Options{})
	ctx := context.Background()
	got, err := r.Get(ctx, skill.GetRequest{Name: "legacy-ftp"})
	if err != nil || got.Manifest != nil {
		t.Fatalf("without asking: manifest %+v, %v", got, err)
	}
	got, err = r.Get(ctx, skill.GetRequest{Name: "legacy-ftp", Manifest: true})
	if err != nil {
		t.Fatal(err)
	}
	if req := ts.request("GetSkill").(*routerv1.GetSkillRequest); !req.GetManifest() {
		t.Error("the manifest was not asked for")
	}
	if m := got.Manifest; m == nil || string(m.Frontmatter) != `{"name":"legacy-ftp","x":"y"}` || len(m.Files) != 2 ||
		m.Files[1] != (skill.FileDigest{Path: "scripts/up.sh", Size: 12, SHA256: "def"}) {
		t.Errorf("manifest = %+v", got.Manifest)
	}
}

func TestStatusReindexExec(t *testing.T) {
	ts := &testServer{gen: 9}
	r, _ := serve(t, ts, Options{})
	ctx := context.Background()
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Serving || st.Generation != 9 || !st.Flags.SkillsExec || st.Model == nil || st.Model.VectorsCached != 12 ||
		st.ProblemsByCode["name-mismatch"] != 1 || !slices.Equal(st.Agents, []string{"coder"}) {
		t.Errorf("status = %+v", st)
	}
	stats, err := r.Reindex(ctx, skill.ReindexRequest{Full: true})
	if err != nil || stats.Scanned != 9 || !stats.Published || stats.Duration != time.Second || stats.Generation != 8 {
		t.Errorf("reindex = %+v, %v", stats, err)
	}
	if !ts.request("Reindex").(*routerv1.ReindexRequest).GetFull() {
		t.Error("full flag lost")
	}
	d, err := r.AuthorizeExec(ctx, skill.ExecRequest{Skill: "s", Script: "scripts/x.sh", Caller: "mcp:cli", Agent: "coder"})
	if err != nil || d.Allowed || d.Reason != skill.DenyHashMismatch || d.DecisionID != "d1" {
		t.Errorf("decision = %+v, %v", d, err)
	}
	if _, err := r.ReportExecResult(ctx, skill.ExecReport{DecisionID: "d1", ExitCode: 3, Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if rep := ts.request("ReportExecResult").(*routerv1.ReportExecResultRequest); rep.GetExitCode() != 3 || rep.GetDuration().AsDuration() != 2*time.Second {
		t.Errorf("report = %v", rep)
	}
}

func withDetails(t *testing.T, c codes.Code, msg string, details ...protoadapt.MessageV1) error {
	t.Helper()
	st, err := status.New(c, msg).WithDetails(details...)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestErrors(t *testing.T) {
	ts := &testServer{}
	r, stop := serve(t, ts, Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		err  error
		want skill.Error
	}{
		{"invalid argument with field and reason", withDetails(t, codes.InvalidArgument, "task: the task is empty",
			&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "task", Description: "the task is empty"}}},
			&errdetails.ErrorInfo{Reason: "TASK_EMPTY", Domain: "mcpsag.router"}),
			skill.Error{Code: skill.CodeInvalidArgument, Field: "task", Reason: "TASK_EMPTY", Message: "the task is empty"}},
		{"not found", withDetails(t, codes.NotFound, `no skill named "x"`, &errdetails.ErrorInfo{Reason: "SKILL_NOT_FOUND"}),
			skill.Error{Code: skill.CodeNotFound, Reason: "SKILL_NOT_FOUND", Message: `no skill named "x"`}},
		{"unauthenticated", status.Error(codes.Unauthenticated, "invalid bearer token"),
			skill.Error{Code: skill.CodePermissionDenied, Message: "the router refused the credentials: invalid bearer token"}},
		{"rate limited", withDetails(t, codes.ResourceExhausted, "rate limit of token ci exceeded", &errdetails.RetryInfo{RetryDelay: durationpb.New(250 * time.Millisecond)}),
			skill.Error{Code: skill.CodeResourceExhausted, Message: "rate limit of token ci exceeded (retry after 250ms)"}},
		{"no index yet", status.Error(codes.Unavailable, "no index yet"), skill.Error{Code: skill.CodeUnavailable, Message: "no index yet"}},
		{"internal", status.Error(codes.Internal, "internal error; the router logged the details"),
			skill.Error{Code: skill.CodeInternal, Message: "internal error; the router logged the details"}},
		{"unknown code", status.Error(codes.Code(99), "odd"), skill.Error{Code: skill.CodeInternal, Message: "odd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts.setFail("Match", tc.err)
			_, err := r.Match(ctx, skill.MatchRequest{Task: "x"})
			var de *skill.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *skill.Error", err, err)
			}
			if de.Code != tc.want.Code || de.Field != tc.want.Field || de.Reason != tc.want.Reason || de.Message != tc.want.Message {
				t.Errorf("got {%v %q %q %q}, want {%v %q %q %q}", de.Code, de.Field, de.Reason, de.Message,
					tc.want.Code, tc.want.Field, tc.want.Reason, tc.want.Message)
			}
		})
	}

	for _, c := range []struct {
		code codes.Code
		want error
	}{{codes.DeadlineExceeded, context.DeadlineExceeded}, {codes.Canceled, context.Canceled}} {
		ts.setFail("Match", status.Error(c.code, "server side"))
		if _, err := r.Match(ctx, skill.MatchRequest{Task: "x"}); !errors.Is(err, c.want) {
			t.Errorf("%v: err %v, want %v", c.code, err, c.want)
		}
	}
	ts.setFail("Match", nil)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Match(cctx, skill.MatchRequest{Task: "x"}); err != context.Canceled {
		t.Errorf("cancelled caller: err %v, want context.Canceled as is", err)
	}

	stop()
	_, err := r.Status(ctx)
	var de *skill.Error
	// The transport's words (addresses, socket paths) stay in the cause.
	if !errors.As(err, &de) || de.Code != skill.CodeUnavailable || de.Message != "cannot reach the router" || de.Err == nil {
		t.Errorf("stopped router: %v", err)
	}
}

func TestNumbersTheAPICannotCarry(t *testing.T) {
	ts := &testServer{}
	r, _ := serve(t, ts, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		call  func() error
		field string
	}{
		{func() error { _, err := r.Match(ctx, skill.MatchRequest{Task: "x", TopK: 1<<32 + 3}); return err }, skill.FieldTopK},
		{func() error { _, err := r.List(ctx, skill.ListRequest{PageSize: -1 << 40}); return err }, skill.FieldPageSize},
		{func() error { _, err := r.List(ctx, skill.ListRequest{CatalogBudget: 1 << 33}); return err }, skill.FieldCatalogCharBudget},
		{func() error {
			_, err := r.Load(ctx, skill.LoadRequest{Name: "x", Level: skill.LevelBody, TokenBudget: 1 << 31})
			return err
		}, skill.FieldTokenBudget},
		{func() error {
			_, err := r.Match(ctx, skill.MatchRequest{Task: "x", Options: skill.MatchOptions{Mode: "telepathy"}})
			return err
		}, skill.FieldMode},
		{func() error {
			_, err := r.Match(ctx, skill.MatchRequest{Task: "x", Options: skill.MatchOptions{Fusion: "soup"}})
			return err
		}, skill.FieldFusion},
	} {
		err := tc.call()
		var de *skill.Error
		if !errors.As(err, &de) || de.Code != skill.CodeInvalidArgument || de.Field != tc.field {
			t.Errorf("field %s: err %v", tc.field, err)
		}
	}
	if ts.request("Match") != nil || ts.request("ListSkills") != nil || ts.request("Load") != nil {
		t.Error("a request the API cannot carry was sent")
	}
}

func TestWaitGeneration(t *testing.T) {
	ts := &testServer{gen: 4}
	r, _ := serve(t, ts, Options{PollInterval: 20 * time.Millisecond})
	ctx := context.Background()
	if g, err := r.WaitGeneration(ctx, 3); err != nil || g != 4 {
		t.Errorf("already newer: %d, %v", g, err)
	}
	go func() { time.Sleep(100 * time.Millisecond); ts.publish() }()
	start := time.Now()
	g, err := r.WaitGeneration(ctx, 4)
	if err != nil || g != 5 {
		t.Errorf("after a publish: %d, %v", g, err)
	}
	if time.Since(start) < 80*time.Millisecond {
		t.Error("returned before the generation changed")
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := r.WaitGeneration(cctx, 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("no change: %v", err)
	}
	// A router that fails for a while is polled through it.
	ts.setFail("Status", status.Error(codes.Unavailable, "restarting"))
	go func() {
		time.Sleep(100 * time.Millisecond)
		ts.publish()
		ts.setFail("Status", nil)
	}()
	if g, err := r.WaitGeneration(ctx, 5); err != nil || g != 6 {
		t.Errorf("through failures: %d, %v", g, err)
	}
}
