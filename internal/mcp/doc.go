// Package mcp serves a skill.Router over the Model Context Protocol, so that
// agent hosts (Claude Code, Codex, Cursor, Claude Desktop, in-house agents)
// can route tasks to skills without a gRPC client. Like the gRPC server, it is
// a translator with no routing logic of its own: tool arguments become
// skill requests, results become structured tool output, *skill.Error values
// become tool results marked isError with the router's message.
//
// A Front holds one MCP server per view: the agent whose skills are offered as
// prompts and resources, and the features the caller's token allows (see
// Features). Run keeps every view current: a new index generation re-registers
// prompts and resources, and a change of feature flag skills_exec adds or
// removes authorize_exec, so connected clients receive list_changed
// notifications.
//
// Serve runs one session over a pair of streams (stdio). HTTPHandler serves
// the Streamable HTTP transport at /mcp with Origin checks, bearer tokens from
// internal/auth, per-token rate limits and an audit record for every call.
package mcp
