// Package upstream connects the router to the MCP servers an operator
// configures (config mcp_servers) and serves their tools as index entries of
// kind tool, so that one search covers skills and tools.
//
// A Manager runs one client per enabled server. A stdio server is a local
// process the router starts from its configuration, and only from it: never
// because a skill, a tool or a caller asked. The router does not sandbox it;
// it gets a small inherited environment (PATH, HOME, locale, temporary
// folder) plus its configured env, runs in a process group of its own, and
// is stopped by closing its stdin, then SIGTERM, then SIGKILL. A Streamable
// HTTP server is reached with its configured headers. Secrets come from the
// router's environment or from files, never from the config file; the
// command, its arguments, environment values, header values and the URL's
// path never appear in logs, Status or errors, and a stdio server's stderr
// is kept as a short tail for diagnostics.
//
// A client initializes a session (the router offers no roots, sampling or
// elicitation), pages through tools/list, counts resources and prompts when
// the server offers them, and lists again on list_changed (at most once per
// RefreshInterval, so a flood costs little). A server that fails to start,
// hangs, sends what is not a tool list or closes the session is retried
// with exponential backoff; meanwhile its tools are absent and Status says
// why. Every tool listed is normalised before it reaches the index: names
// mapped to "server.tool" (EntryNames), texts cleaned and cut (Clean),
// schemas that are not objects, duplicate names and oversized definitions
// left out with a diagnostic. Its input schema is kept verbatim.
//
// The loader reads Tools at each pass; Changes tells it to run one, so a
// changed list takes effect at a generation boundary and never inside a
// request.
package upstream
