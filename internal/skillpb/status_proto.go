package skillpb

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// ReindexStatsPB carries what a build did.
func ReindexStatsPB(st skill.ReindexStats) *routerv1.ReindexStats {
	return &routerv1.ReindexStats{
		Scanned: int32(st.Scanned), Added: int32(st.Added), Changed: int32(st.Changed),
		Removed: int32(st.Removed), Unchanged: int32(st.Unchanged), Invalid: int32(st.Invalid),
		Parsed: int32(st.Parsed), Embedded: int32(st.Embedded), Duration: durationpb.New(st.Duration), IndexGeneration: st.Generation,
		FinishedAt: timePB(st.FinishedAt),
	}
}

// ReindexStats is the inverse of ReindexStatsPB. The API does not say
// whether the build published; a build that found a change did.
func ReindexStats(s *routerv1.ReindexStats) skill.ReindexStats {
	out := skill.ReindexStats{
		Scanned: int(s.GetScanned()), Added: int(s.GetAdded()), Changed: int(s.GetChanged()), Removed: int(s.GetRemoved()),
		Unchanged: int(s.GetUnchanged()), Invalid: int(s.GetInvalid()), Parsed: int(s.GetParsed()), Embedded: int(s.GetEmbedded()),
		Duration: s.GetDuration().AsDuration(), Generation: s.GetIndexGeneration(), FinishedAt: timeOf(s.GetFinishedAt()),
	}
	out.Published = out.Added+out.Changed+out.Removed > 0
	return out
}

// StatusPB carries the router's state.
func StatusPB(st *skill.Status) *routerv1.StatusResponse {
	byCode := make(map[string]int32, len(st.ProblemsByCode))
	for k, v := range st.ProblemsByCode {
		byCode[k] = int32(v)
	}
	out := &routerv1.StatusResponse{
		Version: st.Version, StartedAt: timestamppb.New(st.StartedAt), Serving: st.Serving,
		IndexGeneration: st.Generation, GenerationId: st.GenerationID, CatchingUp: st.CatchingUp,
		Skills: int32(st.Skills), SkillsDisabled: int32(st.Disabled), SkillsHidden: int32(st.Hidden),
		SkillsShadowed: int32(st.Shadowed), SkillsAgentScoped: int32(st.AgentScoped), FilesInvalid: int32(st.FilesInvalid),
		LastReindex: ReindexStatsPB(st.LastStats), LastReindexError: st.LastReindexError,
		ReindexProgress: &routerv1.ReindexProgress{
			Running: st.Progress.Running, Phase: st.Progress.Phase, Done: int32(st.Progress.Done), Total: int32(st.Progress.Total),
		},
		Validation: &routerv1.ValidationSummary{Errors: int32(st.Errors), Warnings: int32(st.Warnings), ByCode: byCode},
		Shadowed:   shadowsPB(st.Shadows),
		Flags:      &routerv1.FeatureFlags{SkillsV1: st.Flags.SkillsV1, SkillsExec: st.Flags.SkillsExec, ToolsCall: st.Flags.ToolsCall},
		Agents:     st.Agents,
		Config:     &routerv1.ConfigStatus{Path: st.Config.Path, Error: st.Config.Error, LoadedAt: timePB(st.Config.LoadedAt)},
		Tools:      int32(st.Tools),
		Degraded:   st.Degraded, DegradedReason: st.DegradedReason,
	}
	for _, sv := range st.Servers {
		out.Servers = append(out.Servers, ServerStatusPB(sv))
	}
	out.Model, out.FastModel = modelStatusPB(st.Model), modelStatusPB(st.FastModel)
	if b := st.Backfill; b.Model != "" {
		out.Backfill = &routerv1.EmbeddingBackfill{Model: b.Model, Done: int32(b.Done), Total: int32(b.Total), Started: timePB(b.Started)}
	}
	return out
}

// modelStatusPB carries a model's state; nil for none.
func modelStatusPB(m *skill.ModelStatus) *routerv1.ModelStatus {
	if m == nil {
		return nil
	}
	return &routerv1.ModelStatus{
		Name: m.Name, Dimension: int32(m.Dimension), Fingerprint: m.Fingerprint,
		Path: m.Path, LoadDuration: durationpb.New(m.LoadDuration), QueryLatency: durationpb.New(m.QueryLatency),
		EmbeddingsComputed: m.EmbeddingsComputed, CacheEntries: int64(m.VectorsCached), MatchThreshold: m.MatchThreshold,
		Serving: m.Serving, Released: m.Released,
	}
}

// modelStatus is the inverse of modelStatusPB.
func modelStatus(m *routerv1.ModelStatus) *skill.ModelStatus {
	if m == nil {
		return nil
	}
	return &skill.ModelStatus{
		Name: m.GetName(), Dimension: int(m.GetDimension()), Fingerprint: m.GetFingerprint(), Path: m.GetPath(),
		LoadDuration: m.GetLoadDuration().AsDuration(), QueryLatency: m.GetQueryLatency().AsDuration(),
		EmbeddingsComputed: m.GetEmbeddingsComputed(), VectorsCached: int(m.GetCacheEntries()), MatchThreshold: m.GetMatchThreshold(),
		Serving: m.GetServing(), Released: m.GetReleased(),
	}
}

// Status is the inverse of StatusPB. The API reports the build behind the
// generation served, not later builds that changed nothing: the last
// reindex is when that build finished.
func Status(r *routerv1.StatusResponse) *skill.Status {
	out := &skill.Status{
		Version: r.GetVersion(), Serving: r.GetServing(), Generation: r.GetIndexGeneration(), GenerationID: r.GetGenerationId(),
		CatchingUp: r.GetCatchingUp(), Skills: int(r.GetSkills()), Disabled: int(r.GetSkillsDisabled()), Hidden: int(r.GetSkillsHidden()),
		Shadowed: int(r.GetSkillsShadowed()), AgentScoped: int(r.GetSkillsAgentScoped()), FilesInvalid: int(r.GetFilesInvalid()),
		Agents: r.GetAgents(), Shadows: shadows(r.GetShadowed()), LastStats: ReindexStats(r.GetLastReindex()),
		LastReindexError: r.GetLastReindexError(),
		Progress: skill.Progress{
			Running: r.GetReindexProgress().GetRunning(), Phase: r.GetReindexProgress().GetPhase(),
			Done: int(r.GetReindexProgress().GetDone()), Total: int(r.GetReindexProgress().GetTotal()),
		},
		Errors: int(r.GetValidation().GetErrors()), Warnings: int(r.GetValidation().GetWarnings()),
		Flags:    skill.Flags{SkillsV1: r.GetFlags().GetSkillsV1(), SkillsExec: r.GetFlags().GetSkillsExec(), ToolsCall: r.GetFlags().GetToolsCall()},
		Tools:    int(r.GetTools()),
		Config:   skill.ConfigState{Path: r.GetConfig().GetPath(), Error: r.GetConfig().GetError(), LoadedAt: timeOf(r.GetConfig().GetLoadedAt())},
		Degraded: r.GetDegraded(), DegradedReason: r.GetDegradedReason(), StartedAt: timeOf(r.GetStartedAt()),
	}
	for _, sv := range r.GetServers() {
		out.Servers = append(out.Servers, ServerStatus(sv))
	}
	out.LastReindex = out.LastStats.FinishedAt
	if by := r.GetValidation().GetByCode(); len(by) > 0 {
		out.ProblemsByCode = make(map[string]int, len(by))
		for k, v := range by {
			out.ProblemsByCode[k] = int(v)
		}
	}
	out.Model, out.FastModel = modelStatus(r.GetModel()), modelStatus(r.GetFastModel())
	if b := r.GetBackfill(); b != nil {
		out.Backfill = skill.Backfill{Model: b.GetModel(), Done: int(b.GetDone()), Total: int(b.GetTotal()), Started: timeOf(b.GetStarted())}
	}
	return out
}

// ServerStatusPB carries the state of one MCP server.
func ServerStatusPB(s skill.ServerStatus) *routerv1.ServerStatus {
	return &routerv1.ServerStatus{
		Name: s.Name, Transport: s.Transport, Endpoint: s.Endpoint, State: serverStates.toPB[s.State], Trust: trustPB(s.Trusted), Agents: s.Agents,
		Tools: int32(s.Tools), ToolsListed: int32(s.ToolsListed), ToolsFiltered: int32(s.ToolsFiltered), ToolsDropped: int32(s.ToolsDropped),
		Resources: int32(s.Resources), Prompts: int32(s.Prompts),
		ServerName: s.ServerName, ServerVersion: s.ServerVersion, ProtocolVersion: s.ProtocolVersion,
		LastError: s.LastError, LastErrorAt: timePB(s.LastErrorAt), ConnectedAt: timePB(s.ConnectedAt),
		ListedAt: timePB(s.ListedAt), NextAttempt: timePB(s.NextAttempt),
		Restarts: int32(s.Restarts), ListChanged: int32(s.ListChanged), Refreshes: int32(s.Refreshes),
		Diagnostics: s.Diagnostics, StderrTail: s.StderrTail,
	}
}

// ServerStatus is the inverse of ServerStatusPB.
func ServerStatus(s *routerv1.ServerStatus) skill.ServerStatus {
	return skill.ServerStatus{
		Name: s.GetName(), Transport: s.GetTransport(), Endpoint: s.GetEndpoint(), State: serverStates.fromPB[s.GetState()],
		Trusted: trusted(s.GetTrust()), Agents: s.GetAgents(),
		Tools: int(s.GetTools()), ToolsListed: int(s.GetToolsListed()), ToolsFiltered: int(s.GetToolsFiltered()),
		ToolsDropped: int(s.GetToolsDropped()), Resources: int(s.GetResources()), Prompts: int(s.GetPrompts()),
		ServerName: s.GetServerName(), ServerVersion: s.GetServerVersion(), ProtocolVersion: s.GetProtocolVersion(),
		LastError: s.GetLastError(), LastErrorAt: timeOf(s.GetLastErrorAt()), ConnectedAt: timeOf(s.GetConnectedAt()),
		ListedAt: timeOf(s.GetListedAt()), NextAttempt: timeOf(s.GetNextAttempt()),
		Restarts: int(s.GetRestarts()), ListChanged: int(s.GetListChanged()), Refreshes: int(s.GetRefreshes()),
		Diagnostics: s.GetDiagnostics(), StderrTail: s.GetStderrTail(),
	}
}

// timePB carries a time; nil for the zero time.
func timePB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// timeOf is the inverse of timePB.
func timeOf(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime()
}
