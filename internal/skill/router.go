package skill

import "context"

// Router is the service contract of the skill router. Every front end (the
// gRPC server, the MCP server) translates its protocol to these calls and
// back, and holds no logic of its own; internal/router implements it over the
// current index generation, and the telemetry decorator wraps it so each
// event is recorded once.
//
// Errors are *Error values whose Code the fronts map to protocol codes. A
// context error (deadline, cancellation) is returned as is. Any other error
// is internal: fronts log it with a request id and answer a generic message
// naming that id, never its text.
type Router interface {
	// Match ranks the skills and tools the caller sees against a task, or
	// abstains. An abstention (nothing fits, routing switched off by
	// feature flag skills_v1) is an answer, not an error. A tool candidate
	// carries its input schema.
	// Errors: CodeInvalidArgument (fields task, top_k, agent, options.mode,
	// options.fusion, options.threshold, options.kinds), CodeUnavailable
	// (no index yet).
	Match(ctx context.Context, req MatchRequest) (*MatchResult, error)

	// List returns a page of the skills and tools an agent sees, sorted by
	// name, with a budget-aware rendered catalog on request.
	// Errors: CodeInvalidArgument (agent, page_size, page_token,
	// catalog_char_budget, kinds), CodeUnavailable.
	List(ctx context.Context, req ListRequest) (*ListResult, error)

	// Get returns the copy of one skill an agent sees, with its place in
	// the precedence order, or a tool by its "server.tool" name. Disabled
	// and hidden skills are returned. A skill wins over a tool of the same
	// name.
	// With req.Manifest it also reads every file of the skill for its
	// manifest.
	// Errors: CodeInvalidArgument (name, agent), CodeNotFound (reason
	// SKILL_NOT_FOUND), CodeUnavailable; with req.Manifest, also
	// CodeFailedPrecondition (a disabled skill, a tool, a SKILL.md that no
	// longer parses) and the errors of a level-3 load of SKILL.md.
	Get(ctx context.Context, req GetRequest) (*GetResult, error)

	// Load serves a skill at level 1 (summary), 2 (body under a token
	// budget) or 3 (one resource file confined to the skill folder).
	// Errors: CodeInvalidArgument (name, agent, level, resource_path,
	// token_budget), CodeNotFound (no such skill or file),
	// CodePermissionDenied (a path that leaves the folder, hidden or
	// hard-linked files), CodeFailedPrecondition (a disabled skill, a file
	// too large or not regular), CodeUnavailable.
	Load(ctx context.Context, req LoadRequest) (*LoadResult, error)

	// Reindex rescans the skill roots now and publishes a new generation
	// when anything changed. On error the previous generation keeps
	// serving. Errors: context errors; others are internal (the cache
	// could not be written).
	Reindex(ctx context.Context, req ReindexRequest) (*ReindexStats, error)

	// Status reports the router's state for operators. It does not fail
	// before the first index is built: Serving is false then.
	Status(ctx context.Context) (*Status, error)

	// AuthorizeExec decides whether a skill's script may run and records
	// the decision; it never runs anything. Every well-formed request gets
	// a decision (allow, or deny with a reason).
	// Errors: CodeInvalidArgument (skill, script, agent), CodeUnavailable.
	AuthorizeExec(ctx context.Context, req ExecRequest) (*ExecDecision, error)

	// ReportExecResult accepts the outcome of a run AuthorizeExec allowed
	// and returns it as recorded, with the decision's skill and script.
	// Errors: CodeInvalidArgument (decision_id, or a skill or script that
	// differs from the decision's), CodeNotFound (no pending allow
	// decision with that id).
	ReportExecResult(ctx context.Context, req ExecReport) (*ExecReport, error)

	// CallTool forwards a call to a tool of a connected MCP server and
	// returns its result, bounded and framed as untrusted data. It runs
	// only while feature flag tools_call is on and the allowlist names the
	// tool; every decision is recorded. A tool that ran and failed is a
	// result with IsError set, not an error.
	// Errors: CodeInvalidArgument (name, arguments, agent), CodeNotFound
	// (TOOL_NOT_FOUND), CodeFailedPrecondition (NOT_A_TOOL: the name is a
	// skill's), CodePermissionDenied (TOOLS_CALL_DISABLED,
	// TOOL_NOT_ALLOWLISTED, TOOL_CHANGED), CodeUnavailable
	// (SERVER_UNAVAILABLE, UPSTREAM_TIMEOUT, or no index yet),
	// CodeResourceExhausted (SERVER_RATE_LIMITED).
	CallTool(ctx context.Context, call ToolCall) (*ToolResult, error)
}

// GenerationWatcher is implemented by routers that can tell when a new index
// generation is served, so fronts can tell their clients that lists changed.
type GenerationWatcher interface {
	// WaitGeneration blocks until the generation served differs from
	// after, and returns it. It returns ctx's error when ctx ends first.
	WaitGeneration(ctx context.Context, after uint64) (uint64, error)
}

// Origin describes where a request came from, for audit records and
// telemetry. Fronts attach it to the request context.
type Origin struct {
	// Transport is the front that received the request: "grpc" or "mcp".
	Transport string
	// Principal identifies the authenticated caller (a token id, a client
	// certificate subject), empty when anonymous.
	Principal string
	// Peer is the client's network address, empty for stdio.
	Peer string
}

type originKey struct{}

// WithOrigin returns ctx carrying o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginFrom returns the Origin attached to ctx, or the zero Origin.
func OriginFrom(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}
