// Package mcp serves a skill.Router over the Model Context Protocol, so that
// agent hosts (Claude Code, Codex, Cursor, Claude Desktop, in-house agents)
// can route tasks to skills without a gRPC client. Like the gRPC server, it is
// a translator with no routing logic of its own: tool arguments become
// skill requests, results become structured tool output, *skill.Error values
// become tool results marked isError with the router's message.
//
// A Front holds one MCP server per view: the agent whose skills are offered as
// prompts and resources, and the features the caller's token allows (see
// Features). Besides the tools, a view with load serves every file of a skill
// as a skill:// resource and speaks the Skills extension
// (io.modelcontextprotocol/skills: skills/list, skills/get,
// resources/directory/read) over the router's manifests, with completion of
// the resource templates and resource subscriptions. Run keeps every view
// current: a new index generation re-registers prompts and resources, and
// the router's flags and MCP servers, read every poll interval, add or
// remove authorize_exec, find_tools and call_tool, so connected clients
// receive list_changed notifications.
//
// Serve runs one session over a pair of streams (stdio), answering what a
// client sends wrong instead of ending the session. HTTPHandler serves the
// Streamable HTTP transport at /mcp with Origin checks, bearer tokens from
// internal/auth, per-token rate limits and an audit record for every call;
// protocol 2026-07-28 goes to a stateless handler.
package mcp
