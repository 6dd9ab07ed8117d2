package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// Tool arguments. The SDK infers each inputSchema from these types and
// rejects arguments that do not fit it (wrong types, missing or unknown
// fields) with an isError result before a handler runs; ranges and formats
// are the router's to check.

type findInput struct {
	Task  string `json:"task" jsonschema:"the task to route, in a sentence or two"`
	TopK  int    `json:"top_k,omitempty" jsonschema:"the most candidates to return; 0 or absent means the router's default"`
	Agent string `json:"agent,omitempty" jsonschema:"the agent whose skills to search; absent means this connection's agent"`
}

type loadInput struct {
	Name        string `json:"name" jsonschema:"the skill's name, as find_skills or list_skills gives it"`
	TokenBudget int    `json:"token_budget,omitempty" jsonschema:"the most tokens of the whole reply (the body, the file list and the rest); 0 or absent means the router's default"`
	Agent       string `json:"agent,omitempty" jsonschema:"the agent whose copy of the skill to load; absent means this connection's agent"`
}

type readInput struct {
	Name      string `json:"name" jsonschema:"the skill's name"`
	Path      string `json:"path" jsonschema:"the file's path relative to the skill folder, such as references/api.md; a folder's path (or . for the skill's folder) lists the folder"`
	PageToken string `json:"page_token,omitempty" jsonschema:"next_page_token from the previous page of a folder listing"`
	Agent     string `json:"agent,omitempty" jsonschema:"the agent whose copy of the skill to read; absent means this connection's agent"`
}

type listInput struct {
	Agent       string `json:"agent,omitempty" jsonschema:"the agent whose skills to list; absent means this connection's agent"`
	BudgetChars int    `json:"budget_chars,omitempty" jsonschema:"when set, return instead of a page a catalog of every skill, as a prompt-ready text, in a reply of at most this many characters"`
	PageToken   string `json:"page_token,omitempty" jsonschema:"next_page_token from the previous page"`
}

type execInput struct {
	Skill  string `json:"skill" jsonschema:"the skill's name"`
	Script string `json:"script" jsonschema:"the script's path relative to the skill folder, such as scripts/run.py"`
	Agent  string `json:"agent,omitempty" jsonschema:"the agent that would run it; absent means this connection's agent"`
}

// readOnly annotates the tools that only read: they change nothing, repeat
// safely and reach nothing outside the router.
func readOnly(title string) *mcpsdk.ToolAnnotations {
	f := false
	return &mcpsdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &f, OpenWorldHint: &f}
}

// addTools registers the tools a view's features allow, except
// authorize_exec, which follows the skills_exec flag (see refresh).
func (f *Front) addTools(vw *view) {
	feat := vw.key.Features
	if feat&FeatureFind != 0 {
		mcpsdk.AddTool(vw.srv, &mcpsdk.Tool{
			Name:  toolFind,
			Title: "Find skills for a task",
			Description: "Find the skills that fit a task. Call this before starting work that a skill might cover " +
				"(a file format, a tool, a team procedure), with the task in a sentence or two. It returns up to top_k " +
				"candidates, best first, each with a one-line reason, and a verdict: " + verdictDoc + ". Load the " +
				"skill you pick with load_skill.",
			Annotations: readOnly("Find skills for a task"),
		}, structured(func(ctx context.Context, _ *mcpsdk.CallToolRequest, in findInput) (*mcpsdk.CallToolResult, findOutput, error) {
			return f.findSkills(ctx, vw, in)
		}))
	}
	if feat&FeatureList != 0 {
		mcpsdk.AddTool(vw.srv, &mcpsdk.Tool{
			Name:  toolList,
			Title: "List skills",
			Description: "List the available skills by name and description, sorted by name, one page at a time. " +
				"Use find_skills to choose skills for a task; use this to browse, or with budget_chars to get, in a " +
				"reply of at most that many characters, a compact catalog of every skill that fits.",
			Annotations: readOnly("List skills"),
		}, structured(func(ctx context.Context, _ *mcpsdk.CallToolRequest, in listInput) (*mcpsdk.CallToolResult, listOutput, error) {
			return f.listSkills(ctx, vw, in)
		}))
	}
	if feat&FeatureLoad != 0 {
		mcpsdk.AddTool(vw.srv, &mcpsdk.Tool{
			Name:  toolLoad,
			Title: "Load a skill",
			Description: "Load a skill's instructions (the body of its SKILL.md) by name, as find_skills or list_skills " +
				"gives it. The body comes inside <skill_content> delimiters that mark it as data from a skill file. " +
				"The reply stays within token_budget: a long body is cut (truncated says so), and when the skill's other " +
				"files do not all fit, folders are summarised (files_note says how to list them). The files are listed, " +
				"not read: read one with read_skill_file when the instructions call for it.",
			Annotations: readOnly("Load a skill"),
		}, structured(func(ctx context.Context, _ *mcpsdk.CallToolRequest, in loadInput) (*mcpsdk.CallToolResult, loadOutput, error) {
			return f.loadSkill(ctx, vw, in)
		}))
		mcpsdk.AddTool(vw.srv, &mcpsdk.Tool{
			Name:  toolRead,
			Title: "Read a skill file",
			Description: "Read one file from a skill's folder (a reference, a template, a script) by the skill's name and " +
				"the file's path relative to the folder, such as references/api.md; load_skill lists the files. Text " +
				"comes inside <skill_resource> delimiters. A folder's path (. for the skill's folder) lists the folder " +
				"instead, 100 entries at a time. Paths that leave the skill folder are refused.",
			Annotations: readOnly("Read a skill file"),
		}, structured(func(ctx context.Context, _ *mcpsdk.CallToolRequest, in readInput) (*mcpsdk.CallToolResult, readOutput, error) {
			return f.readSkillFile(ctx, vw, in)
		}))
	}
}

// addExecTool registers authorize_exec.
func (f *Front) addExecTool(vw *view) {
	no := false
	mcpsdk.AddTool(vw.srv, &mcpsdk.Tool{
		Name:  toolExec,
		Title: "Authorize a skill script",
		Description: "Ask whether one of a skill's scripts may run. The router decides against its allowlist and " +
			"records the decision; it never runs anything. Run the script yourself only when allowed is true, and " +
			"only the script named.",
		Annotations: &mcpsdk.ToolAnnotations{Title: "Authorize a skill script", DestructiveHint: &no, OpenWorldHint: &no},
	}, structured(func(ctx context.Context, req *mcpsdk.CallToolRequest, in execInput) (*mcpsdk.CallToolResult, execOutput, error) {
		return f.authorizeExec(ctx, vw, req, in)
	}))
}

// actFor resolves the agent of a call (the view's when none is named) and
// checks that the caller's token may act for it.
func (f *Front) actFor(ctx context.Context, vw *view, agent string) (string, error) {
	c := callFrom(ctx)
	if agent == "" {
		agent = vw.key.Agent
	}
	c.agent = agent
	if p := c.principal; p != nil && !p.ActsFor(agent) {
		c.decision, c.reason, c.outcome = skill.DecisionDeny, "agent", skill.CodePermissionDenied.String()
		shown := agent
		if shown == "" {
			shown = "none (the global view)"
		}
		return "", fmt.Errorf("permission_denied: agent: token %s may not act for agent %s; name an agent the token is bound to",
			p.ID, skill.Clip(shown, 80))
	}
	return agent, nil
}

// viewAgent is actFor for the requests that name no agent (reads, prompts,
// the Skills extension): the view's agent, or -32010 when the token may not
// act for it. It records the skill the request names, if any.
func (f *Front) viewAgent(ctx context.Context, vw *view, skillName string) (string, error) {
	agent, err := f.actFor(ctx, vw, "")
	if err != nil {
		return "", &jsonrpc.Error{Code: codeForbidden, Message: err.Error()}
	}
	if skillName != "" {
		callFrom(ctx).skill = skillName
	}
	return agent, nil
}

func (f *Front) findSkills(ctx context.Context, vw *view, in findInput) (*mcpsdk.CallToolResult, findOutput, error) {
	agent, err := f.actFor(ctx, vw, in.Agent)
	if err != nil {
		return nil, findOutput{}, err
	}
	res, err := f.router.Match(ctx, skill.MatchRequest{Task: in.Task, TopK: in.TopK, Agent: agent,
		Options: skill.MatchOptions{Kinds: skill.KindsSkills}})
	if err != nil {
		return nil, findOutput{}, f.toolError(ctx, toolFind, err)
	}
	out := findOut(res)
	// The structured output as text (first, where clients look for it),
	// then the verdict in a sentence.
	text, err := textOf(out)
	if err != nil {
		return nil, findOutput{}, f.toolError(ctx, toolFind, err)
	}
	return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text},
		&mcpsdk.TextContent{Text: verdictSentence(res, "skill")}}}, out, nil
}

func (f *Front) listSkills(ctx context.Context, vw *view, in listInput) (*mcpsdk.CallToolResult, listOutput, error) {
	agent, err := f.actFor(ctx, vw, in.Agent)
	if err != nil {
		return nil, listOutput{}, err
	}
	req := skill.ListRequest{Agent: agent, PageToken: in.PageToken, Kinds: skill.KindsSkills}
	if in.BudgetChars != 0 {
		out, err := f.listWithin(ctx, req, in.BudgetChars)
		if err != nil {
			return nil, listOutput{}, f.toolError(ctx, toolList, err)
		}
		return nil, out, nil
	}
	res, err := f.router.List(ctx, req)
	if err != nil {
		return nil, listOutput{}, f.toolError(ctx, toolList, err)
	}
	return nil, listOut(res), nil
}

func (f *Front) loadSkill(ctx context.Context, vw *view, in loadInput) (*mcpsdk.CallToolResult, loadOutput, error) {
	agent, err := f.actFor(ctx, vw, in.Agent)
	if err != nil {
		return nil, loadOutput{}, err
	}
	c := callFrom(ctx)
	c.skill = in.Name
	out, err := f.loadWithin(ctx, skill.LoadRequest{Name: in.Name, Agent: agent, Level: skill.LevelBody, TokenBudget: in.TokenBudget})
	if err != nil {
		return nil, loadOutput{}, f.toolError(ctx, toolLoad, err)
	}
	return nil, out, nil
}

func (f *Front) readSkillFile(ctx context.Context, vw *view, in readInput) (*mcpsdk.CallToolResult, readOutput, error) {
	agent, err := f.actFor(ctx, vw, in.Agent)
	if err != nil {
		return nil, readOutput{}, err
	}
	callFrom(ctx).skill = in.Name
	res, err := f.router.Load(ctx, skill.LoadRequest{Name: in.Name, Agent: agent, Level: skill.LevelResource, ResourcePath: in.Path})
	if dir, ok := folderAsked(in.Path, err); ok {
		return f.readFolder(ctx, agent, in, dir, err)
	}
	if err != nil {
		return nil, readOutput{}, f.toolError(ctx, toolRead, err)
	}
	if in.PageToken != "" {
		return nil, readOutput{}, f.toolError(ctx, toolRead, skill.InvalidArgument(skill.FieldPageToken, "only used when path names a folder"))
	}
	if res.Skill == nil {
		return nil, readOutput{}, f.toolError(ctx, toolRead, fmt.Errorf("router returned a load result without its skill"))
	}
	s := res.Skill
	out := readOutput{
		Name: s.Name, Path: res.ResourcePath, MediaType: res.MediaType, SizeBytes: res.Size, Content: res.Content,
		Tokens: res.Tokens, SHA256: res.SHA256, Trust: trustOf(s), Source: sourceOf(s),
	}
	if res.Data != nil {
		out.DataBase64 = base64.StdEncoding.EncodeToString(res.Data)
	}
	return nil, out, nil
}

func (f *Front) authorizeExec(ctx context.Context, vw *view, req *mcpsdk.CallToolRequest, in execInput) (*mcpsdk.CallToolResult, execOutput, error) {
	agent, err := f.actFor(ctx, vw, in.Agent)
	if err != nil {
		return nil, execOutput{}, err
	}
	callFrom(ctx).skill = in.Skill
	caller := "mcp"
	if req != nil && req.Session != nil {
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			caller = "mcp:" + skill.Clip(ip.ClientInfo.Name, 64)
		}
	}
	d, err := f.router.AuthorizeExec(ctx, skill.ExecRequest{Skill: in.Skill, Script: in.Script, Caller: caller, Agent: agent})
	if err != nil {
		return nil, execOutput{}, f.toolError(ctx, toolExec, err)
	}
	return nil, execOutput{Allowed: d.Allowed, Reason: string(d.Reason), Message: d.Message,
		ScriptSHA256: d.ScriptSHA256, DecisionID: d.DecisionID}, nil
}

// structured wraps a tool handler so that a successful result's text block
// is textOf its structured output, not the SDK's encoding, which escapes
// '<' as \u003c.
func structured[In, Out any](h mcpsdk.ToolHandlerFor[In, Out]) mcpsdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcpsdk.CallToolRequest, in In) (*mcpsdk.CallToolResult, Out, error) {
		res, out, err := h(ctx, req, in)
		if err != nil || res != nil {
			return res, out, err
		}
		text, err := textOf(out)
		if err != nil {
			return nil, out, err
		}
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}, out, nil
	}
}

// textOf returns a tool's structured output as its text block: the JSON the
// SDK sends as structuredContent (object keys sorted), without escaping
// '<', '>' and '&', so that a model reads the <skill_content> delimiters the
// instructions name.
func textOf(out any) (string, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode tool output: %w", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("encode tool output: %w", err)
	}
	if b, err = marshalText(v); err != nil {
		return "", fmt.Errorf("encode tool output: %w", err)
	}
	return string(b), nil
}

// marshalText encodes v as JSON without escaping '<', '>' and '&': text a
// model reads.
func marshalText(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
