package reliability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"

	pb "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
)

// snapshot is everything a router serves about its catalog, minus what
// legitimately differs between two routers on the same files (generation
// numbers, start times, timings). Two routers on the same files and config
// must have equal snapshots, whatever their caches went through.
type snapshot struct {
	Status  string
	Views   map[string]*view  // by agent; "" is the global view
	Matches map[string]string // task -> rendered answer
}

// view is the catalog one agent sees.
type view struct {
	Skills   map[string]string // name -> detail (prototext) and body hash
	Shadowed []string
}

// takeSnapshot reads a router's catalog over gRPC: Status counts, every
// agent's ListSkills (hidden and disabled included) and shadowed list,
// GetSkill and the raw level-2 body of every skill, and the answers to the
// given Match tasks.
func takeSnapshot(ctx context.Context, rpc pb.SkillRouterClient, tasks []string) (*snapshot, error) {
	st, err := rpc.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("Status: %w", err)
	}
	s := &snapshot{Views: map[string]*view{}, Matches: map[string]string{}}
	s.Status = fmt.Sprintf("skills=%d disabled=%d hidden=%d shadowed=%d agent_scoped=%d files_invalid=%d agents=%v",
		st.GetSkills(), st.GetSkillsDisabled(), st.GetSkillsHidden(), st.GetSkillsShadowed(), st.GetSkillsAgentScoped(),
		st.GetFilesInvalid(), st.GetAgents())
	for _, agent := range append([]string{""}, st.GetAgents()...) {
		v, err := takeView(ctx, rpc, agent)
		if err != nil {
			return nil, err
		}
		s.Views[agent] = v
	}
	for _, task := range tasks {
		m, err := rpc.Match(ctx, &pb.MatchRequest{Task: task, TopK: 5})
		if err != nil {
			return nil, fmt.Errorf("Match %q: %w", task, err)
		}
		s.Matches[task] = renderMatch(m)
	}
	return s, nil
}

func takeView(ctx context.Context, rpc pb.SkillRouterClient, agent string) (*view, error) {
	v := &view{Skills: map[string]string{}}
	token := ""
	for {
		resp, err := rpc.ListSkills(ctx, &pb.ListSkillsRequest{Agent: agent, PageSize: 1000, PageToken: token,
			IncludeHidden: true, IncludeDisabled: true})
		if err != nil {
			return nil, fmt.Errorf("ListSkills agent %q: %w", agent, err)
		}
		if token == "" {
			for _, sh := range resp.GetShadowed() {
				v.Shadowed = append(v.Shadowed, prototext.MarshalOptions{}.Format(sh))
			}
			sort.Strings(v.Shadowed)
		}
		for _, sum := range resp.GetSkills() {
			v.Skills[sum.GetName()] = ""
		}
		token = resp.GetNextPageToken()
		if token == "" {
			break
		}
	}
	for name := range v.Skills {
		g, err := rpc.GetSkill(ctx, &pb.GetSkillRequest{Name: name, Agent: agent})
		if err != nil {
			return nil, fmt.Errorf("GetSkill %s (agent %q): %w", name, agent, err)
		}
		entry := prototext.MarshalOptions{}.Format(g.GetSkill())
		l, err := rpc.Load(ctx, &pb.LoadRequest{Name: name, Agent: agent, Level: pb.LoadLevel_LOAD_LEVEL_BODY, TokenBudget: 50000, Raw: true})
		switch {
		case err == nil:
			sum := sha256.Sum256([]byte(l.GetContent()))
			entry += fmt.Sprintf("\nbody sha256=%s tokens=%d/%d truncated=%v", hex.EncodeToString(sum[:8]), l.GetTokens(), l.GetTotalTokens(), l.GetTruncated())
		default:
			entry += "\nbody " + status.Code(err).String()
		}
		v.Skills[name] = entry
	}
	return v, nil
}

// renderMatch renders a Match answer: candidates in order with fused scores
// to four places, or the abstention.
func renderMatch(m *pb.MatchResponse) string {
	if m.GetAbstained() {
		return "abstained: " + m.GetAbstainReason().String()
	}
	var parts []string
	for _, c := range m.GetCandidates() {
		parts = append(parts, fmt.Sprintf("%s=%.4f", c.GetSkill().GetName(), c.GetScores().GetFused()))
	}
	if m.GetDegraded() {
		parts = append(parts, "(degraded)")
	}
	return strings.Join(parts, " ")
}

// diffReport compares a snapshot (got) with the reference one (want).
type diffReport struct {
	Lost, Stale, Ghost, Other []string
}

func (d diffReport) empty() bool {
	return len(d.Lost)+len(d.Stale)+len(d.Ghost)+len(d.Other) == 0
}

func (d diffReport) String() string {
	var b strings.Builder
	for _, part := range []struct {
		name  string
		items []string
	}{{"lost", d.Lost}, {"stale", d.Stale}, {"ghost", d.Ghost}, {"other", d.Other}} {
		if len(part.items) == 0 {
			continue
		}
		fmt.Fprintf(&b, "%s (%d):", part.name, len(part.items))
		for i, it := range part.items {
			if i == 5 {
				fmt.Fprintf(&b, "\n  ... %d more", len(part.items)-5)
				break
			}
			fmt.Fprintf(&b, "\n  %s", it)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// compare lists what got serves differently from want: skills lost (in want
// only), stale (served with other content), ghosts (in got only), and other
// differences (counts, shadowing, Match answers).
func compare(got, want *snapshot) diffReport {
	var d diffReport
	if got.Status != want.Status {
		d.Other = append(d.Other, fmt.Sprintf("status: got %s, want %s", got.Status, want.Status))
	}
	for agent, wv := range want.Views {
		gv := got.Views[agent]
		if gv == nil {
			d.Other = append(d.Other, fmt.Sprintf("agent %q view missing", agent))
			continue
		}
		for name, w := range wv.Skills {
			g, ok := gv.Skills[name]
			switch {
			case !ok:
				d.Lost = append(d.Lost, fmt.Sprintf("%s (agent %q)", name, agent))
			case g != w:
				d.Stale = append(d.Stale, fmt.Sprintf("%s (agent %q): %s", name, agent, firstDiff(g, w)))
			}
		}
		for name := range gv.Skills {
			if _, ok := wv.Skills[name]; !ok {
				d.Ghost = append(d.Ghost, fmt.Sprintf("%s (agent %q)", name, agent))
			}
		}
		if strings.Join(gv.Shadowed, "|") != strings.Join(wv.Shadowed, "|") {
			d.Other = append(d.Other, fmt.Sprintf("agent %q shadowed: got %v, want %v", agent, gv.Shadowed, wv.Shadowed))
		}
	}
	for task, w := range want.Matches {
		if g := got.Matches[task]; g != w {
			d.Other = append(d.Other, fmt.Sprintf("Match %q: got %s, want %s", task, g, w))
		}
	}
	sort.Strings(d.Lost)
	sort.Strings(d.Stale)
	sort.Strings(d.Ghost)
	return d
}

// firstDiff names the first differing line of two rendered entries.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("got %q, want %q", clip(gl, 160), clip(wl, 160))
		}
	}
	return "equal"
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// referenceSnapshot starts a router with an empty state directory on ws,
// snapshots it and stops it: the oracle a router that went through crashes
// or damage must agree with.
func referenceSnapshot(t testing.TB, ws *workspace, tasks []string) *snapshot {
	t.Helper()
	r := start(t, routerOpts{Workspace: ws.Dir, StateDir: t.TempDir()})
	defer r.Stop()
	snap, err := takeSnapshot(ctxT(t, 5*time.Minute), r.RPC, tasks)
	if err != nil {
		t.Fatalf("snapshot of a fresh router: %v", err)
	}
	return snap
}
