package skill

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// EntryKind says what a routable entry is. Skills and the tools of connected
// MCP servers are matched, listed and framed through one index; the kind
// tells them apart.
type EntryKind string

// Entry kinds. A skill is the zero value.
const (
	EntrySkill EntryKind = ""
	EntryTool  EntryKind = "tool"
)

// KindServer is the source kind of tools: they come from a configured MCP
// server, not from a skill root. It is not a root kind (ParseSourceKind
// refuses it) and takes no part in precedence.
const KindServer SourceKind = "mcp_server"

// Tool is what an entry of kind tool holds beyond a skill's fields. Every
// text in it comes from the upstream server and is untrusted: the router
// normalised it (length caps, no control characters) before indexing, and
// frames it as data when it hands it out. The entry's Name is
// "server.tool", safe for hosts' tool-name rules; Tool.Name is the name the
// upstream server uses.
type Tool struct {
	// Server is the configured name of the MCP server.
	Server string
	// Name is the tool's name as the server lists it.
	Name string
	// Title is the tool's display title, normalised.
	Title string
	// InputSchema is the tool's input schema, verbatim as the server sent
	// it: a JSON object.
	InputSchema json.RawMessage
	// Params are the top-level properties of the input schema, with their
	// descriptions normalised; they are indexed as a field of their own.
	Params []ToolParam
	// Results are the top-level properties of the output schema, when the
	// server declares one; they are indexed with the parameters.
	Results []ToolParam
	// Hints are the server's annotations. They are hints from the server,
	// trusted only as far as the server is.
	Hints ToolHints
	// Trusted is the operator's trust in the server (config trust:
	// trusted); tools of untrusted servers are framed as untrusted.
	Trusted bool
	// Agents are the agents that see the server's tools; empty means every
	// agent and the global view.
	Agents []string
}

// ToolParam is one top-level property of a tool's input schema.
type ToolParam struct {
	Name        string
	Description string
	// Type is the schema's "type" when it is a single string, else "".
	Type     string
	Required bool
}

// ToolHints are a tool's annotations as its server declares them.
type ToolHints struct {
	Title      string
	ReadOnly   bool
	Idempotent bool
	// Destructive and OpenWorld are nil when the server says nothing
	// (the protocol's defaults are true for both).
	Destructive, OpenWorld *bool
}

// IsTool reports whether the entry is a tool of an MCP server.
func (s *Skill) IsTool() bool { return s.Kind == EntryTool && s.Tool != nil }

// Key identifies an entry across generations: a skill's folder, or, for a
// tool (which has none), "tool:" and its name.
func (s *Skill) Key() string {
	if s.IsTool() {
		return "tool:" + s.Name
	}
	return s.Dir
}

// SeenBy reports whether agent sees a tool's server; skills always answer
// true (their scope is the catalog's business).
func (t *Tool) SeenBy(agent string) bool {
	return t == nil || len(t.Agents) == 0 || slices.Contains(t.Agents, agent)
}

// KindFilter selects the kinds of entries a request wants.
type KindFilter string

// Kind filters. The zero value (and "both") means skills and tools.
const (
	KindsBoth   KindFilter = "both"
	KindsSkills KindFilter = "skills"
	KindsTools  KindFilter = "tools"
)

// Valid reports whether k is a known filter.
func (k KindFilter) Valid() bool {
	return k == "" || k == KindsBoth || k == KindsSkills || k == KindsTools
}

// Allows reports whether s passes the filter.
func (k KindFilter) Allows(s *Skill) bool {
	switch k {
	case KindsSkills:
		return !s.IsTool()
	case KindsTools:
		return s.IsTool()
	}
	return true
}

// Noun names what the filter selects, for messages: "tool" for tools
// alone, else "skill", as the verdicts of every request without a filter
// have always said.
func (k KindFilter) Noun() string {
	if k == KindsTools {
		return "tool"
	}
	return "skill"
}

// NoneVisible is the reason a match of these kinds abstains with when
// nothing of them is visible to the caller: AbstainNoTools for tools
// alone, else AbstainNoSkills.
func (k KindFilter) NoneVisible() AbstainReason {
	if k == KindsTools {
		return AbstainNoTools
	}
	return AbstainNoSkills
}

func validateKinds(field string, k KindFilter) error {
	if !k.Valid() {
		return InvalidArgument(field, "%q is not a kind filter; want skills, tools or both", Clip(string(k), 40))
	}
	return nil
}

// Scope is what an authenticated caller may reach beyond its agent: the MCP
// servers whose tools it sees and calls. Fronts attach the caller's scope
// to the request context; the router applies it to Match, List, Get and
// CallTool.
type Scope struct {
	// Servers names the servers the caller may see; nil means every
	// server, an empty non-nil list none.
	Servers []string
}

type scopeKey struct{}

// WithScope returns ctx carrying s.
func WithScope(ctx context.Context, s Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the Scope attached to ctx, or the zero Scope (every
// server).
func ScopeFrom(ctx context.Context) Scope {
	s, _ := ctx.Value(scopeKey{}).(Scope)
	return s
}

// AllowsServer reports whether the scope includes server.
func (s Scope) AllowsServer(server string) bool {
	return s.Servers == nil || slices.Contains(s.Servers, server)
}

// Allows reports whether the scope lets the caller see entry e: skills
// always, tools when their server is in scope.
func (s Scope) Allows(e *Skill) bool { return !e.IsTool() || s.AllowsServer(e.Tool.Server) }

// Limits of a ToolCall.
const (
	// MaxToolArgumentBytes caps a call's arguments.
	MaxToolArgumentBytes = 512 << 10
	// MaxToolNameBytes is the longest entry name of a tool (hosts' limit).
	MaxToolNameBytes = 128
)

// ToolCall asks the router to call a tool of a connected MCP server.
type ToolCall struct {
	// Name is the entry's name, "server.tool", as Match and List give it.
	Name string
	// Arguments is a JSON object; empty means {}.
	Arguments json.RawMessage
	// Agent is the calling agent; the tool's server must be visible to it.
	Agent string
	// Caller names who asks, for the audit record.
	Caller string
}

// Validate checks the call. The arguments must be a JSON object of at most
// MaxToolArgumentBytes; whether they fit the tool's schema is the upstream
// server's to say.
func (c *ToolCall) Validate() error {
	if err := ValidateName(FieldName, c.Name); err != nil {
		return err
	}
	if len(c.Arguments) > MaxToolArgumentBytes {
		return InvalidArgument(FieldArguments, "%d bytes; the limit is %d", len(c.Arguments), MaxToolArgumentBytes).
			WithReason(ReasonArgumentsTooLarge)
	}
	if a := strings.TrimSpace(string(c.Arguments)); a != "" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
			return InvalidArgument(FieldArguments, "not a JSON object; pass the tool's arguments as {\"name\": value, ...}").
				WithReason(ReasonArgumentsNotObject)
		}
	}
	return ValidateAgent(c.Agent)
}

// ToolContent is one content block of a tool result.
type ToolContent struct {
	// Type is text, image, audio, resource_link or resource.
	Type string
	// Text is a text block's text (framed unless the router was told
	// otherwise), or an embedded text resource's.
	Text string
	// Data is an image's, audio's or embedded blob resource's bytes.
	Data     []byte
	MIMEType string
	// URI, Name and Description describe a resource link or an embedded
	// resource.
	URI, Name, Description string
}

// ToolResult is what a tool call returned, bounded and framed.
type ToolResult struct {
	// Name is the entry's name; Server and Tool the upstream's names.
	Name, Server, Tool string
	Content            []ToolContent
	// StructuredContent is the result's structured JSON, when the server
	// sent one and it fit the size limit.
	StructuredContent json.RawMessage
	// IsError is the server's own verdict: the tool ran and failed. It is
	// passed through, not turned into an error.
	IsError bool
	// Truncated says content was cut or left out to fit the size limit;
	// Framed that text blocks are wrapped in <tool_result> delimiters.
	Truncated, Framed bool
	// Bytes is the size of the returned content.
	Bytes int
	// Trusted is the server's trust.
	Trusted  bool
	Duration time.Duration
	// DecisionID names the allow decision in the audit record.
	DecisionID string
	Generation uint64
}

// ServerState is the state of a connection to an MCP server.
type ServerState string

// Server states.
const (
	ServerDisabled ServerState = "disabled" // enabled: false; nothing runs
	ServerStarting ServerState = "starting" // connecting or listing for the first time
	ServerReady    ServerState = "ready"    // connected; its tools are served
	ServerFailed   ServerState = "failed"   // the last attempt failed; retrying with backoff
	ServerStopped  ServerState = "stopped"  // the router is shutting down
)

// ServerStatus describes one configured MCP server for operators. Texts the
// server supplied (its name, version, stderr) are clipped and stripped of
// control characters; the command, its arguments, environment values and
// secrets never appear.
type ServerStatus struct {
	Name string
	// Transport is stdio or http; Endpoint the HTTP URL's scheme and host
	// (no path, query or credentials), empty for stdio.
	Transport, Endpoint string
	State               ServerState
	Trusted             bool
	Agents              []string
	// Tools counts the tools served; ToolsListed those the server listed;
	// ToolsFiltered those enabled_tools/disabled_tools removed;
	// ToolsDropped those left out as unusable (Diagnostics say why).
	Tools, ToolsListed, ToolsFiltered, ToolsDropped int
	// Resources and Prompts count what the server lists, -1 when it
	// offers none.
	Resources, Prompts int
	// ServerName and ServerVersion are what the server calls itself.
	ServerName, ServerVersion, ProtocolVersion string
	LastError                                  string
	LastErrorAt, ConnectedAt, ListedAt         time.Time
	// NextAttempt is when a failed server is tried again.
	NextAttempt time.Time
	// Restarts counts connections after the first; ListChanged the
	// list_changed notifications received; Refreshes the lists fetched
	// after one.
	Restarts, ListChanged, Refreshes int
	// Diagnostics are findings about the server's tools (duplicate names,
	// shortened descriptions, schemas that are not objects), capped.
	Diagnostics []string
	// StderrTail is the end of a stdio server's standard error.
	StderrTail []string
}
