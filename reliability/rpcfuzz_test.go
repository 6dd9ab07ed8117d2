package reliability

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// rawCodec sends and receives message bytes as they are, so a fuzzer can put
// any bytes on the wire as a request.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// fuzzedMethods are the API's methods with an empty reply message each.
var fuzzedMethods = []struct {
	name  string
	reply func() proto.Message
}{
	{"Match", func() proto.Message { return &pb.MatchResponse{} }},
	{"ListSkills", func() proto.Message { return &pb.ListSkillsResponse{} }},
	{"GetSkill", func() proto.Message { return &pb.GetSkillResponse{} }},
	{"Load", func() proto.Message { return &pb.LoadResponse{} }},
	{"Status", func() proto.Message { return &pb.StatusResponse{} }},
	{"AuthorizeExec", func() proto.Message { return &pb.AuthorizeExecResponse{} }},
	{"ReportExecResult", func() proto.Message { return &pb.ReportExecResultResponse{} }},
}

// FuzzRPC sends arbitrary bytes, as the request of each API method, to a
// real router on a loopback port: the server decodes them, converts them to
// domain requests and answers. No input may make it answer Internal or
// Unknown (a panic caught by the recovery interceptor answers Internal), and
// every reply must decode. Bytes that are no valid message at all are
// answered InvalidArgument. The router's own packages are not touched: this
// drives the proto conversions from the outside.
func FuzzRPC(f *testing.F) {
	ws := newWorkspace(f, 30, 41)
	r := daemontest.Start(f, ws.Dir, daemontest.Options{Configure: func(c *config.Config) { c.Model.Dir = bundledModel }})
	names := ws.Names()
	seeds := []proto.Message{
		&pb.MatchRequest{Task: "fill in a form", TopK: 3},
		&pb.MatchRequest{Task: "x", TopK: -1, Options: &pb.MatchOptions{Mode: pb.MatchMode_MATCH_MODE_DENSE}},
		&pb.ListSkillsRequest{PageSize: 5, CatalogCharBudget: 300, Agent: "reviewer"},
		&pb.ListSkillsRequest{PageToken: "not-a-token"},
		&pb.GetSkillRequest{Name: names[0]},
		&pb.LoadRequest{Name: names[1], Level: pb.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: 10},
		&pb.LoadRequest{Name: names[2], Level: pb.LoadLevel_LOAD_LEVEL_RESOURCE, ResourcePath: "references/../x"},
		&pb.StatusRequest{},
		&pb.AuthorizeExecRequest{Skill: names[3], Script: "scripts/run.sh", Caller: "fuzz"},
		&pb.ReportExecResultRequest{DecisionId: "nope"},
	}
	for _, m := range seeds {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		for i, fm := range fuzzedMethods {
			if string(m.ProtoReflect().Descriptor().Name()) == fm.name+"Request" {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Add(uint8(3), []byte("\x0a\x04\xff\xfe\x00\x01")) // Load with an invalid UTF-8 name
	f.Fuzz(func(t *testing.T, method uint8, payload []byte) {
		fm := fuzzedMethods[int(method)%len(fuzzedMethods)]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out []byte
		err := r.Conn.Invoke(ctx, "/mcpsag.router.v1.SkillRouter/"+fm.name, &payload, &out, grpc.ForceCodec(rawCodec{}))
		msg := status.Convert(err).Message()
		switch {
		case status.Code(err) == codes.Internal, status.Code(err) == codes.Unknown, status.Code(err) == codes.DeadlineExceeded:
			t.Fatalf("%s(%x): %v (%s)", fm.name, payload, err, msg)
		case err == nil:
			if err := proto.Unmarshal(out, fm.reply()); err != nil {
				t.Fatalf("%s(%x): reply does not decode: %v", fm.name, payload, err)
			}
		}
	})
}

// TestMalformedRequests sends bytes that are no valid request message (wire
// garbage, a string that is no UTF-8, a message cut short) to a router with
// authentication on: with the right token each is answered InvalidArgument,
// not Internal; with a wrong token or none, Unauthenticated, audited, as
// the token is checked before the request is read.
func TestMalformedRequests(t *testing.T) {
	const good = "the-right-token-41d7"
	r := startWithAuth(t, newWorkspace(t, 5, 43), good)
	defer r.Stop()
	bad := map[string][]byte{
		"wire garbage":        {0xff, 0xff, 0xff, 0xff},
		"a name no UTF-8":     []byte("\x0a\x04\xff\xfe\x00\x01"),
		"a field cut short":   {0x0a, 0x40, 'a'},
		"an unterminated int": {0x10, 0xff, 0xff},
	}
	conn := dialFrom(t, r.Addr, "127.0.0.1")
	invoke := func(tok, method string, payload []byte) error {
		ctx := ctxT(t, 10*time.Second)
		if tok != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
		}
		var out []byte
		return conn.Invoke(ctx, "/mcpsag.router.v1.SkillRouter/"+method, &payload, &out, grpc.ForceCodec(rawCodec{}))
	}
	for what, payload := range bad {
		if err := invoke(good, "Load", payload); status.Code(err) != codes.InvalidArgument {
			t.Errorf("Load with %s and the right token: %v, want InvalidArgument", what, err)
		}
	}
	for i, tok := range []string{"a-wrong-token-1", "a-wrong-token-2", ""} {
		before := r.logs.count(`"event":"auth_failure"`)
		method := []string{"Load", "Reindex", "Match"}[i]
		if err := invoke(tok, method, bad["wire garbage"]); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s with wire garbage and token %q: %v, want Unauthenticated (the token checked first)", method, tok, err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for r.logs.count(`"event":"auth_failure"`) == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if r.logs.count(`"event":"auth_failure"`) == before {
			t.Errorf("%s with wire garbage and token %q: no auth_failure audit record", method, tok)
		}
	}
}
