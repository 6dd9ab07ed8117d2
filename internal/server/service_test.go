package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/testlog"
)

// fakeRouter is a skill.Router whose methods are function fields; a nil
// field answers Unimplemented.
type fakeRouter struct {
	match  func(context.Context, skill.MatchRequest) (*skill.MatchResult, error)
	list   func(context.Context, skill.ListRequest) (*skill.ListResult, error)
	get    func(context.Context, skill.GetRequest) (*skill.GetResult, error)
	load   func(context.Context, skill.LoadRequest) (*skill.LoadResult, error)
	status func(context.Context) (*skill.Status, error)
	call   func(context.Context, skill.ToolCall) (*skill.ToolResult, error)
}

var errUnimplemented = skill.Errorf(skill.CodeUnimplemented, "not in this fake")

func (f *fakeRouter) Match(ctx context.Context, r skill.MatchRequest) (*skill.MatchResult, error) {
	if f.match == nil {
		return nil, errUnimplemented
	}
	return f.match(ctx, r)
}

func (f *fakeRouter) List(ctx context.Context, r skill.ListRequest) (*skill.ListResult, error) {
	if f.list == nil {
		return nil, errUnimplemented
	}
	return f.list(ctx, r)
}

func (f *fakeRouter) Get(ctx context.Context, r skill.GetRequest) (*skill.GetResult, error) {
	if f.get == nil {
		return nil, errUnimplemented
	}
	return f.get(ctx, r)
}

func (f *fakeRouter) Load(ctx context.Context, r skill.LoadRequest) (*skill.LoadResult, error) {
	if f.load == nil {
		return nil, errUnimplemented
	}
	return f.load(ctx, r)
}

func (f *fakeRouter) Reindex(context.Context, skill.ReindexRequest) (*skill.ReindexStats, error) {
	return nil, errUnimplemented
}

func (f *fakeRouter) Status(ctx context.Context) (*skill.Status, error) {
	if f.status == nil {
		return nil, errUnimplemented
	}
	return f.status(ctx)
}

func (f *fakeRouter) AuthorizeExec(context.Context, skill.ExecRequest) (*skill.ExecDecision, error) {
	return nil, errUnimplemented
}

func (f *fakeRouter) ReportExecResult(context.Context, skill.ExecReport) (*skill.ExecReport, error) {
	return nil, errUnimplemented
}

func (f *fakeRouter) CallTool(ctx context.Context, c skill.ToolCall) (*skill.ToolResult, error) {
	if f.call == nil {
		return nil, errUnimplemented
	}
	return f.call(ctx, c)
}

// serve starts the gRPC server over r on a loopback port and returns a client.
func serve(t *testing.T, r skill.Router, log *slog.Logger) routerv1.SkillRouterClient {
	t.Helper()
	s := New(&Service{Router: r, Logger: log}, Options{Logger: log})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.GRPC.Serve(lis)
	t.Cleanup(s.GRPC.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return routerv1.NewSkillRouterClient(conn)
}

// TestInternalErrorLoggedOnceWithItsID: an internal error is logged exactly
// once, under the request id the client sees, and its text never reaches the
// client.
func TestInternalErrorLoggedOnceWithItsID(t *testing.T) {
	const secret = "bm25: posting list of /srv/skills/secret is corrupt"
	var logs testlog.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	for name, err := range map[string]error{
		"plain error":         errors.New(secret),
		"skill.CodeInternal":  skill.Errorf(skill.CodeInternal, "%s", secret),
		"wrapped plain error": errors.Join(errors.New("build"), errors.New(secret)),
	} {
		t.Run(name, func(t *testing.T) {
			logs.Reset()
			c := serve(t, &fakeRouter{match: func(context.Context, skill.MatchRequest) (*skill.MatchResult, error) { return nil, err }}, log)
			_, got := c.Match(context.Background(), &routerv1.MatchRequest{Task: "x"})
			st := status.Convert(got)
			if st.Code() != codes.Internal {
				t.Fatalf("code %v, want Internal", st.Code())
			}
			if strings.Contains(st.Message(), "secret") || strings.Contains(st.Message(), "/srv") {
				t.Fatalf("internal text reached the client: %q", st.Message())
			}
			var withID []map[string]any
			records, err := logs.Records()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range records {
				if id, ok := r["request_id"].(string); ok {
					withID = append(withID, r)
					if !strings.Contains(st.Message(), id) {
						t.Errorf("client message %q does not quote the logged id %s", st.Message(), id)
					}
					if !strings.Contains(r["err"].(string), secret) {
						t.Errorf("log record lacks the error: %v", r)
					}
					if r["method"] != routerv1.SkillRouter_Match_FullMethodName {
						t.Errorf("log record method %v", r["method"])
					}
				}
			}
			if len(withID) != 1 {
				t.Fatalf("internal error logged %d times, want once:\n%s", len(withID), logs.String())
			}
		})
	}
}

// TestMatchTranslation: proto options reach the domain request, unknown enum
// values reach its validation by name, and domain errors come back with their
// field and reason.
func TestMatchTranslation(t *testing.T) {
	var got skill.MatchRequest
	r := &fakeRouter{match: func(_ context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
		got = req
		if err := req.Validate(skill.MatchLimits{MaxTaskBytes: 100, MaxTopK: 5}); err != nil {
			return nil, err
		}
		return &skill.MatchResult{Mode: skill.ModeDense, Fusion: skill.FusionRRF, Generation: 7,
			Candidates: []skill.Candidate{{Skill: &skill.Skill{Name: "pdf"}, Fused: 0.5, Reason: "why"}}}, nil
	}}
	c := serve(t, r, nil)
	th := 0.4
	res, err := c.Match(context.Background(), &routerv1.MatchRequest{Task: "fill pdf", TopK: 2, Agent: "a",
		Options: &routerv1.MatchOptions{Mode: routerv1.MatchMode_MATCH_MODE_DENSE, Fusion: routerv1.Fusion_FUSION_RRF, Threshold: &th, IncludeHidden: true}})
	if err != nil {
		t.Fatal(err)
	}
	o := got.Options
	if got.Task != "fill pdf" || got.TopK != 2 || got.Agent != "a" || o.Mode != skill.ModeDense || o.Fusion != skill.FusionRRF ||
		o.Threshold == nil || *o.Threshold != 0.4 || !o.IncludeHidden {
		t.Errorf("domain request %+v", got)
	}
	if res.Mode != routerv1.MatchMode_MATCH_MODE_DENSE || res.Fusion != routerv1.Fusion_FUSION_RRF || res.IndexGeneration != 7 ||
		len(res.Candidates) != 1 || res.Candidates[0].Skill.Name != "pdf" {
		t.Errorf("reply %v", res)
	}
	for _, tc := range []struct {
		req   *routerv1.MatchRequest
		field string
	}{
		{&routerv1.MatchRequest{Task: "x", Options: &routerv1.MatchOptions{Mode: 42}}, skill.FieldMode},
		{&routerv1.MatchRequest{Task: "x", Options: &routerv1.MatchOptions{Fusion: 9}}, skill.FieldFusion},
		{&routerv1.MatchRequest{Task: " "}, skill.FieldTask},
		{&routerv1.MatchRequest{Task: "x", TopK: 6}, skill.FieldTopK},
		{&routerv1.MatchRequest{Task: "x", Agent: "a/b"}, skill.FieldAgent},
	} {
		_, err := c.Match(context.Background(), tc.req)
		st := status.Convert(err)
		var field string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok {
				field = br.FieldViolations[0].Field
			}
		}
		if st.Code() != codes.InvalidArgument || field != tc.field {
			t.Errorf("%v: %v field %q, want InvalidArgument on %s", tc.req, st.Code(), field, tc.field)
		}
	}
}

// TestOriginReachesTheRouter: the service tells the router which front and
// which peer a call came from.
func TestOriginReachesTheRouter(t *testing.T) {
	var o skill.Origin
	c := serve(t, &fakeRouter{status: func(ctx context.Context) (*skill.Status, error) {
		o = skill.OriginFrom(ctx)
		return &skill.Status{Version: "v"}, nil
	}}, nil)
	if _, err := c.Status(context.Background(), &routerv1.StatusRequest{}); err != nil {
		t.Fatal(err)
	}
	if o.Transport != "grpc" || !strings.HasPrefix(o.Peer, "127.0.0.1:") || o.Principal != "anonymous" {
		t.Errorf("origin %+v", o)
	}
}
