package skill

import "context"

// Relay is a Router that hands every call to Via, which chooses the Router
// the call goes to and may make it again. It is the one place that forwards
// each of Router's methods: a wrapper that treats every call alike writes
// Via only, and a method added to Router is added here, beside it. (A
// wrapper that treats a few calls apart embeds a Router instead and
// overrides those, as telemetry.Router does.)
type Relay struct {
	// Via makes call on the Router of its choice and returns call's error.
	// Repeatable says whether the call may run twice without harm: true
	// for reads and reindexing, false for AuthorizeExec, ReportExecResult
	// and CallTool, which act or are recorded once.
	Via func(ctx context.Context, repeatable bool, call func(Router) error) error
}

var _ Router = Relay{}

// Match relays Router.Match (repeatable).
func (r Relay) Match(ctx context.Context, req MatchRequest) (res *MatchResult, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.Match(ctx, req); return err })
	return res, err
}

// List relays Router.List (repeatable).
func (r Relay) List(ctx context.Context, req ListRequest) (res *ListResult, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.List(ctx, req); return err })
	return res, err
}

// Get relays Router.Get (repeatable).
func (r Relay) Get(ctx context.Context, req GetRequest) (res *GetResult, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.Get(ctx, req); return err })
	return res, err
}

// Load relays Router.Load (repeatable).
func (r Relay) Load(ctx context.Context, req LoadRequest) (res *LoadResult, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.Load(ctx, req); return err })
	return res, err
}

// Reindex relays Router.Reindex (repeatable).
func (r Relay) Reindex(ctx context.Context, req ReindexRequest) (res *ReindexStats, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.Reindex(ctx, req); return err })
	return res, err
}

// Status relays Router.Status (repeatable).
func (r Relay) Status(ctx context.Context) (res *Status, err error) {
	err = r.Via(ctx, true, func(to Router) (err error) { res, err = to.Status(ctx); return err })
	return res, err
}

// AuthorizeExec relays Router.AuthorizeExec (not repeatable).
func (r Relay) AuthorizeExec(ctx context.Context, req ExecRequest) (res *ExecDecision, err error) {
	err = r.Via(ctx, false, func(to Router) (err error) { res, err = to.AuthorizeExec(ctx, req); return err })
	return res, err
}

// ReportExecResult relays Router.ReportExecResult (not repeatable).
func (r Relay) ReportExecResult(ctx context.Context, req ExecReport) (res *ExecReport, err error) {
	err = r.Via(ctx, false, func(to Router) (err error) { res, err = to.ReportExecResult(ctx, req); return err })
	return res, err
}

// CallTool relays Router.CallTool (not repeatable).
func (r Relay) CallTool(ctx context.Context, call ToolCall) (res *ToolResult, err error) {
	err = r.Via(ctx, false, func(to Router) (err error) { res, err = to.CallTool(ctx, call); return err })
	return res, err
}
