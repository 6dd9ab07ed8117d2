package skillpb

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// gen makes domain values from fuzz input: each choice takes the next byte
// (zero once the input is used up).
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) intn(n int) int { return int(g.byte()) % n }
func (g *gen) bool() bool     { return g.byte()&1 == 1 }
func (g *gen) num() int       { return int(int8(g.byte())) * int(g.byte()) }

// str is a short string, valid UTF-8 as the API's strings must be.
func (g *gen) str() string {
	n := g.intn(6)
	b := make([]byte, n)
	for i := range b {
		b[i] = g.byte()
	}
	return strings.ToValidUTF8(string(b), "?")
}

func (g *gen) strs() []string {
	var out []string
	for range g.intn(3) {
		out = append(out, g.str())
	}
	return out
}

func pick[T any](g *gen, xs ...T) T { return xs[g.intn(len(xs))] }

func (g *gen) time() time.Time {
	if g.bool() {
		return time.Time{}
	}
	return time.Unix(int64(g.num())*1000, int64(g.byte())*1000).UTC()
}

func (g *gen) kind() skill.SourceKind {
	return pick(g, skill.KindProject, skill.KindUser, skill.KindLearned, skill.KindBundled, skill.KindServer)
}

// skill is a skill or a tool as a router serves it.
func (g *gen) skill() *skill.Skill {
	s := &skill.Skill{
		Name: g.str(), RelPath: g.str(), ContentHash: g.str(), FrontmatterHash: g.str(),
		Root: skill.Root{Kind: g.kind(), Display: g.str(), Agent: g.str()},
		Frontmatter: skill.Frontmatter{
			Name: g.str(), Description: g.str(), License: g.str(), Tags: g.strs(), Triggers: g.strs(),
			Hidden: g.bool(), DisableModelInvocation: g.bool(),
		},
		Size: int64(g.num()), BodyTokens: g.num(), ModTime: g.time(), ResourcesTruncated: g.bool(),
		Registry: skill.RegistryEntry{Owner: g.str(), Tags: g.strs()},
	}
	if g.bool() {
		v := g.bool()
		s.Registry.Enabled, s.Registry.Source = &v, g.str()
	}
	if g.bool() {
		s.Oversize = g.str()
	}
	for range g.intn(3) {
		s.Resources = append(s.Resources, skill.Resource{Path: g.str(), Size: int64(g.num())})
	}
	for range g.intn(3) {
		s.Problems = append(s.Problems, skill.Problem{Severity: pick(g, skill.SeverityWarning, skill.SeverityError),
			Code: g.str(), Field: g.str(), File: g.str(), Line: g.num(), Message: g.str()})
	}
	if g.bool() {
		s.Kind = skill.EntryTool
		s.Tool = &skill.Tool{Server: g.str(), Name: g.str(), Title: g.str(), InputSchema: json.RawMessage(g.str()),
			Trusted: g.bool(), Agents: g.strs(), Hints: skill.ToolHints{Title: g.str(), ReadOnly: g.bool(), Idempotent: g.bool()}}
		for range g.intn(3) {
			s.Tool.Params = append(s.Tool.Params, skill.ToolParam{Name: g.str(), Description: g.str(), Type: g.str(), Required: g.bool()})
		}
	}
	return s
}

func (g *gen) stats() skill.ReindexStats {
	return skill.ReindexStats{Scanned: g.num(), Added: g.num(), Changed: g.num(), Removed: g.num(), Unchanged: g.num(),
		Invalid: g.num(), Parsed: g.num(), Embedded: g.num(), Duration: time.Duration(g.num()), Generation: uint64(g.byte()),
		FinishedAt: g.time()}
}

func (g *gen) status() *skill.Status {
	st := &skill.Status{
		Version: g.str(), StartedAt: g.time(), Serving: g.bool(), Generation: uint64(g.byte()), GenerationID: g.str(),
		CatchingUp: g.bool(), Skills: g.num(), Disabled: g.num(), Hidden: g.num(), Shadowed: g.num(), AgentScoped: g.num(),
		FilesInvalid: g.num(), LastStats: g.stats(), LastReindexError: g.str(), Errors: g.num(), Warnings: g.num(),
		Progress: skill.Progress{Running: g.bool(), Phase: g.str(), Done: g.num(), Total: g.num()},
		Flags:    skill.Flags{SkillsV1: g.bool(), SkillsExec: g.bool(), ToolsCall: g.bool()}, Agents: g.strs(), Tools: g.num(),
		Config: skill.ConfigState{Path: g.str(), Error: g.str(), LoadedAt: g.time()}, Degraded: g.bool(), DegradedReason: g.str(),
	}
	for range g.intn(3) {
		st.Shadows = append(st.Shadows, skill.Shadow{Name: g.str(), Winner: g.skill(), Loser: g.skill(), Reason: g.str()})
	}
	if g.bool() {
		st.ProblemsByCode = map[string]int{g.str(): g.num()}
	}
	if g.bool() {
		st.Model = &skill.ModelStatus{Name: g.str(), Dimension: g.num(), Fingerprint: g.str(), LoadDuration: time.Duration(g.num()),
			EmbeddingsComputed: int64(g.num()), VectorsCached: g.num(), MatchThreshold: float64(g.num()), Serving: g.bool(), Released: g.bool()}
	}
	for range g.intn(2) {
		st.Servers = append(st.Servers, skill.ServerStatus{Name: g.str(), Transport: g.str(),
			State:   pick(g, skill.ServerDisabled, skill.ServerStarting, skill.ServerReady, skill.ServerFailed, skill.ServerStopped),
			Trusted: g.bool(), Agents: g.strs(), Tools: g.num(), LastError: g.str(), LastErrorAt: g.time(), Restarts: g.num()})
	}
	return st
}

// same compares two domain values, an empty slice or map equal to none.
func same(a, b any) bool {
	return reflect.DeepEqual(normal(reflect.ValueOf(a)), normal(reflect.ValueOf(b)))
}

// normal copies v with every empty slice and map made nil.
func normal(v reflect.Value) any {
	out := reflect.New(v.Type()).Elem()
	set(out, v)
	return out.Interface()
}

func set(dst, v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			p := reflect.New(v.Type().Elem())
			set(p.Elem(), v.Elem())
			dst.Set(p)
		}
	case reflect.Slice:
		if v.Len() > 0 {
			s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
			for i := range v.Len() {
				set(s.Index(i), v.Index(i))
			}
			dst.Set(s)
		}
	case reflect.Map:
		if v.Len() > 0 {
			dst.Set(v)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if dst.Field(i).CanSet() {
				set(dst.Field(i), v.Field(i))
			} else {
				dst.Set(v) // a type with unexported fields (time.Time) is copied whole
				return
			}
		}
	default:
		dst.Set(v)
	}
}

// FuzzRoundTrip holds each mapping to its inverse: a request the remote
// client sends is the request the server takes; an answer the server sends,
// taken in by the client and sent again, is the same message; a domain
// error survives the trip as a gRPC status.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("a seed with some bytes to spend on choices, strings and numbers"))
	f.Add([]byte{1, 255, 3, 7, 9, 200, 13, 5, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		requests(t, g)
		results(t, g)
		errorsBothWays(t, g)
	})
}

func requests(t *testing.T, g *gen) {
	mr := skill.MatchRequest{Task: g.str(), TopK: g.num(), Agent: g.str(), Options: skill.MatchOptions{
		Mode:          pick(g, "", skill.ModeHybrid, skill.ModeDense, skill.ModeKeyword),
		Fusion:        pick(g, "", skill.FusionTiebreak, skill.FusionRRF, skill.FusionConvex, skill.FusionAdaptive),
		Kinds:         pick(g, "", skill.KindsBoth, skill.KindsSkills, skill.KindsTools),
		IncludeHidden: g.bool(),
	}}
	if g.bool() {
		v := float64(g.num()) / 7
		mr.Options.Threshold = &v
	}
	if pb, err := MatchRequestPB(mr); err != nil || !same(MatchRequest(pb), mr) {
		t.Errorf("match request %+v: came back %+v (%v)", mr, MatchRequest(pb), err)
	}
	lr := skill.ListRequest{Agent: g.str(), PageSize: g.num(), PageToken: g.str(), IncludeHidden: g.bool(), IncludeDisabled: g.bool(),
		CatalogBudget: g.num(), Kinds: pick(g, "", skill.KindsBoth, skill.KindsSkills, skill.KindsTools)}
	if pb, err := ListRequestPB(lr); err != nil || !same(ListRequest(pb), lr) {
		t.Errorf("list request %+v: came back %+v (%v)", lr, ListRequest(pb), err)
	}
	ld := skill.LoadRequest{Name: g.str(), Agent: g.str(), Level: skill.LoadLevel(g.intn(4)), ResourcePath: g.str(), TokenBudget: g.num(), Raw: g.bool()}
	if pb, err := LoadRequestPB(ld); err != nil || !same(LoadRequest(pb), ld) {
		t.Errorf("load request %+v: came back %+v (%v)", ld, LoadRequest(pb), err)
	}
	rep := skill.ExecReport{DecisionID: g.str(), Skill: g.str(), Script: g.str(), Caller: g.str(), ExitCode: g.num(),
		Duration: time.Duration(g.num()) * time.Millisecond, Error: g.str()}
	if pb, err := ExecReportPB(rep); err != nil || !same(ExecReport(pb), rep) {
		t.Errorf("exec report %+v: came back %+v (%v)", rep, ExecReport(pb), err)
	}
	gr := skill.GetRequest{Name: g.str(), Agent: g.str(), Manifest: g.bool()}
	ri := skill.ReindexRequest{Full: g.bool()}
	er := skill.ExecRequest{Skill: g.str(), Script: g.str(), Caller: g.str(), Agent: g.str()}
	tc := skill.ToolCall{Name: g.str(), Arguments: json.RawMessage(g.str()), Agent: g.str(), Caller: g.str()}
	for _, c := range []struct{ in, out any }{
		{gr, GetRequest(GetRequestPB(gr))}, {ri, ReindexRequest(ReindexRequestPB(ri))},
		{er, ExecRequest(ExecRequestPB(er))}, {tc, ToolCall(ToolCallPB(tc))},
	} {
		if !same(c.in, c.out) {
			t.Errorf("request %+v came back %+v", c.in, c.out)
		}
	}
	// A number the API cannot carry, or a mode it has no name for, is
	// refused on the way out.
	if _, err := MatchRequestPB(skill.MatchRequest{TopK: 1 << 40}); skill.ErrorCode(err) != skill.CodeInvalidArgument {
		t.Errorf("top_k 2^40: %v", err)
	}
	if _, err := MatchRequestPB(skill.MatchRequest{Options: skill.MatchOptions{Mode: "psychic"}}); skill.ErrorCode(err) != skill.CodeInvalidArgument {
		t.Errorf("mode psychic: %v", err)
	}
}

// results sends each answer out, takes it in and sends it again: the two
// messages must be equal.
func results(t *testing.T, g *gen) {
	mr := &skill.MatchResult{Abstained: g.bool(), AbstainDetail: g.str(), Generation: uint64(g.byte()), GenerationID: g.str(),
		Verdict: pick(g, "", skill.VerdictConfident, skill.VerdictLowConfidence, skill.VerdictNoSkill), VerdictDetail: g.str(),
		Degraded: g.bool(), Mode: pick(g, "", skill.ModeHybrid, skill.ModeDense, skill.ModeKeyword),
		Fusion:        pick(g, "", skill.FusionTiebreak, skill.FusionRRF, skill.FusionConvex, skill.FusionAdaptive),
		AbstainReason: pick(g, "", skill.AbstainBelowThreshold, skill.AbstainCalibrated, skill.AbstainDisabled, skill.AbstainNoSkills, skill.AbstainNoMatch, skill.AbstainNoTools)}
	for range g.intn(3) {
		mr.Candidates = append(mr.Candidates, skill.Candidate{Skill: g.skill(), Cosine: float64(g.num()), BM25: float64(g.num()),
			Fused: float64(g.num()), DenseRank: g.num(), BM25Rank: g.num(), TriggerBoost: float64(g.num()),
			TriggersFired: g.strs(), NameMentioned: g.bool(), Reason: g.str()})
	}
	twice(t, "match", MatchResultPB(mr), func(m proto.Message) proto.Message { return MatchResultPB(MatchResult(m.(*routerv1.MatchResponse))) })

	lr := &skill.ListResult{NextPageToken: g.str(), Total: g.num(), Generation: uint64(g.byte())}
	for range g.intn(3) {
		lr.Skills = append(lr.Skills, g.skill())
	}
	if g.bool() {
		lr.Catalog = &skill.RenderedCatalog{Text: g.str(), Chars: g.num(), Budget: g.num(), Included: g.strs(), Cut: g.strs()}
	}
	twice(t, "list", ListResultPB(lr), func(m proto.Message) proto.Message { return ListResultPB(ListResult(m.(*routerv1.ListSkillsResponse))) })

	ent := &skill.Entry{Skill: g.skill(), Rank: g.num()}
	if g.bool() {
		ent.ShadowedBy = &skill.Entry{Skill: g.skill()}
	}
	for range g.intn(2) {
		ent.Shadows = append(ent.Shadows, &skill.Entry{Skill: g.skill()})
	}
	gres := &skill.GetResult{Entry: ent, Generation: uint64(g.byte())}
	if g.bool() {
		gres.Manifest = &skill.Manifest{Frontmatter: []byte(g.str())}
		for range g.intn(3) {
			gres.Manifest.Files = append(gres.Manifest.Files, skill.FileDigest{Path: g.str(), Size: int64(g.num()), SHA256: g.str()})
		}
	}
	twice(t, "get", GetResultPB(gres), func(m proto.Message) proto.Message {
		r, err := GetResult(m.(*routerv1.GetSkillResponse))
		if err != nil {
			t.Fatal(err)
		}
		return GetResultPB(r)
	})

	ld := &skill.LoadResult{Skill: g.skill(), Level: skill.LoadLevel(g.intn(4)), Content: g.str(), Framed: g.bool(), Truncated: g.bool(),
		Tokens: g.num(), TotalTokens: g.num(), TokenBudget: g.num(), SHA256: g.str(), ResourcePath: g.str(), Size: int64(g.num()), MediaType: g.str()}
	twice(t, "load", LoadResultPB(ld), func(m proto.Message) proto.Message { return LoadResultPB(LoadResult(m.(*routerv1.LoadResponse))) })

	d := &skill.ExecDecision{Allowed: g.bool(), Message: g.str(), ScriptSHA256: g.str(), DecisionID: g.str()}
	if !d.Allowed {
		d.Reason = pick(g, skill.DenyExecDisabled, skill.DenyNotAllowlisted, skill.DenyHashMismatch, skill.DenyPathEscape, skill.DenyNotFound, skill.DenySkillDisabled)
	}
	twice(t, "exec", ExecDecisionPB(d), func(m proto.Message) proto.Message {
		return ExecDecisionPB(ExecDecision(m.(*routerv1.AuthorizeExecResponse)))
	})

	tr := &skill.ToolResult{Name: g.str(), Server: g.str(), Tool: g.str(), StructuredContent: json.RawMessage(g.str()), IsError: g.bool(),
		Truncated: g.bool(), Framed: g.bool(), Bytes: g.num(), Trusted: g.bool(), Duration: time.Duration(g.num()), DecisionID: g.str(),
		Generation: uint64(g.byte())}
	for range g.intn(2) {
		tr.Content = append(tr.Content, skill.ToolContent{Type: g.str(), Text: g.str(), MIMEType: g.str(), URI: g.str()})
	}
	twice(t, "call_tool", ToolResultPB(tr), func(m proto.Message) proto.Message { return ToolResultPB(ToolResult(m.(*routerv1.CallToolResponse))) })

	twice(t, "status", StatusPB(g.status()), func(m proto.Message) proto.Message { return StatusPB(Status(m.(*routerv1.StatusResponse))) })
}

// twice checks that pb, taken in and sent again by again, is unchanged.
func twice(t *testing.T, what string, pb proto.Message, again func(proto.Message) proto.Message) {
	t.Helper()
	if back := again(pb); !proto.Equal(pb, back) {
		t.Errorf("%s: sent\n%v\nthen, taken in and sent again,\n%v", what, pb, back)
	}
}

// errorsBothWays sends a domain error as a status and takes it in again.
func errorsBothWays(t *testing.T, g *gen) {
	code := pick(g, skill.CodeInvalidArgument, skill.CodeNotFound, skill.CodePermissionDenied, skill.CodeFailedPrecondition,
		skill.CodeUnavailable, skill.CodeResourceExhausted, skill.CodeUnimplemented)
	e := &skill.Error{Code: code, Message: "m" + g.str(), Reason: g.str()}
	if code == skill.CodeInvalidArgument {
		e.Field = g.str()
	}
	if code == skill.CodeUnavailable && transportFailure(e.Message) {
		e.Message = "m"
	}
	var back *skill.Error
	if err := ErrorOf(context.Background(), StatusOf(e, nil)); !errors.As(err, &back) {
		t.Fatalf("%v came back as %v", e, err)
	}
	if want := *e; back.Code != want.Code || back.Field != want.Field || back.Message != want.Message || back.Reason != want.Reason {
		t.Errorf("%+v came back %+v", *e, *back)
	}
	// An internal error comes back as one, naming its request id only.
	err := ErrorOf(context.Background(), StatusOf(errors.New("/etc/secret"), func(error) string { return "id-7" }))
	if skill.ErrorCode(err) != skill.CodeInternal || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "id-7") {
		t.Errorf("an internal error came back as %v", err)
	}
}

// TestNamesThatAreNoUTF8: folder and file names are byte strings; a summary
// or detail holding one that is no UTF-8 still marshals, with U+FFFD in
// place of the bad bytes.
func TestNamesThatAreNoUTF8(t *testing.T) {
	s := &skill.Skill{Name: "x", RelPath: "skills/bad-\xff\xfe", Root: skill.Root{Kind: skill.KindProject, Display: "root-\xc3"}}
	sum := SummaryPB(s)
	if _, err := proto.Marshal(sum); err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if got := sum.GetSource().GetPath(); got != "skills/bad-\uFFFD" || sum.GetSource().GetRoot() != "root-\uFFFD" {
		t.Errorf("path %q, root %q", got, sum.GetSource().GetRoot())
	}
	res := resourcesPB([]skill.Resource{{Path: "notes-\xff.md"}})
	probs := problemsPB([]skill.Problem{{File: "a/\xff/SKILL.md", Message: "folder \xff"}})
	for _, m := range []proto.Message{res[0], probs[0]} {
		if _, err := proto.Marshal(m); err != nil {
			t.Errorf("marshal %T: %v", m, err)
		}
	}
}
