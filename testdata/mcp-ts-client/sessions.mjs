// Checks, with the official TypeScript SDK's Streamable HTTP transport, how
// the router answers messages that miss their session, as the transport
// spec asks of a server with sessions: a request without Mcp-Session-Id
// (other than initialize) gets HTTP 400, one naming a session the server
// does not hold (never opened, or closed) gets 404, each with a JSON-RPC
// error whose code is one of JSON-RPC's own.
//
//   node sessions.mjs --url http://127.0.0.1:8765/mcp
//
// It prints one JSON summary line on stdout and exits 0, or prints what
// failed on stderr and exits 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// refusal sends one message on transport and returns the HTTP status and
// the JSON-RPC error the server answered it with.
async function refusal(transport, message) {
  try {
    await transport.send(message);
  } catch (e) {
    check(e instanceof StreamableHTTPError, `not an HTTP error: ${e}`);
    const body = e.message.slice(e.message.indexOf("{"));
    let parsed;
    try {
      parsed = JSON.parse(body);
    } catch {
      throw new Error(`HTTP ${e.code}: the body is not JSON-RPC: ${e.message}`);
    }
    check(parsed.jsonrpc === "2.0" && parsed.error, `HTTP ${e.code}: not a JSON-RPC error: ${body}`);
    return { status: e.code, id: parsed.id ?? null, code: parsed.error.code, message: parsed.error.message };
  }
  throw new Error(`${JSON.stringify(message)} was accepted`);
}

// The codes JSON-RPC 2.0 defines for errors of the request itself.
const specCodes = new Set([-32700, -32600, -32601, -32602, -32603]);

async function main() {
  const argv = process.argv.slice(2);
  const i = argv.indexOf("--url");
  check(i >= 0 && argv[i + 1], "give --url URL");
  const url = new URL(argv[i + 1]);
  const summary = {};

  // A request before any session.
  const bare = new StreamableHTTPClientTransport(url);
  await bare.start();
  summary.noSession = await refusal(bare, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
  await bare.close();

  // A session the server never opened.
  const stale = new StreamableHTTPClientTransport(url, { sessionId: "no-such-session" });
  await stale.start();
  summary.unknownSession = await refusal(stale, { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} });
  await stale.close();

  // A session that was open and is closed.
  const transport = new StreamableHTTPClientTransport(url);
  const client = new Client({ name: "mcpsag-ts-sessions", version: "1.0.0" });
  await client.connect(transport);
  const sid = transport.sessionId;
  check(sid, "initialize returned no Mcp-Session-Id");
  await client.listTools();
  await transport.terminateSession();
  await client.close();
  const ended = new StreamableHTTPClientTransport(url, { sessionId: sid });
  await ended.start();
  summary.closedSession = await refusal(ended, { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} });
  await ended.close();

  for (const [name, want] of [["noSession", 400], ["unknownSession", 404], ["closedSession", 404]]) {
    const r = summary[name];
    check(r.status === want, `${name}: HTTP ${r.status}, want ${want}`);
    check(specCodes.has(r.code), `${name}: code ${r.code} is not a JSON-RPC code`);
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => {
  process.stderr.write(`sessions.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
