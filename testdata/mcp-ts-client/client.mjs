// Drives the router's MCP server with the official TypeScript SDK, a client
// written elsewhere: initialize, set a log level, list tools, resources, templates and
// prompts, call find_skills, load_skill, read_skill_file and list_skills,
// read a resource, get a prompt, complete a template argument, subscribe to
// a skill, and check every structured result against its tool's
// outputSchema with ajv. skills.mjs drives the Skills extension.
//
//   node client.mjs --url http://127.0.0.1:8765/mcp [--token TOKEN] [options]
//   node client.mjs [options] --stdio -- COMMAND [ARGS...]
//
// Options name what to exercise (defaults match the Go tests' fixture):
//   --task TEXT        a task find_skills should route to --skill
//   --skill NAME       a skill to load, read and get as a prompt
//   --file PATH        a file of that skill for read_skill_file
//   --expect-list-changed  wait for a prompts/list_changed notification
//
// It prints one JSON summary line on stdout and exits 0, or prints what
// failed on stderr and exits 1.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import Ajv from "ajv";

function parseArgs(argv) {
  const opts = {
    task: "fill in a PDF form from JSON data",
    skill: "pdf-form-filling",
    file: "references/field-types.md",
    expectListChanged: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--url": opts.url = next(); break;
      case "--token": opts.token = next(); break;
      case "--task": opts.task = next(); break;
      case "--skill": opts.skill = next(); break;
      case "--file": opts.file = next(); break;
      case "--expect-list-changed": opts.expectListChanged = true; break;
      case "--stdio":
        if (argv[i + 1] === "--") i++;
        opts.command = argv.slice(i + 1);
        i = argv.length;
        break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!opts.url === !opts.command) throw new Error("give --url URL or --stdio -- COMMAND");
  if (opts.command && opts.command.length === 0) throw new Error("--stdio needs a command");
  return opts;
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// sameJSON compares two JSON values, ignoring the order of object keys.
function sameJSON(a, b) {
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameJSON(a[k], b[k]));
}

async function listAll(fn, key) {
  const out = [];
  let cursor;
  for (let page = 0; page < 1000; page++) {
    const res = await fn(cursor ? { cursor } : undefined);
    out.push(...res[key]);
    if (!res.nextCursor) return out;
    cursor = res.nextCursor;
  }
  throw new Error(`${key}: more than 1000 pages`);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url), {
        requestInit: opts.token ? { headers: { Authorization: `Bearer ${opts.token}` } } : undefined,
      })
    : new StdioClientTransport({ command: opts.command[0], args: opts.command.slice(1), env: process.env, stderr: "inherit" });

  const client = new Client({ name: "mcpsag-ts-check", version: "1.0.0" });
  let listChanged;
  const listChangedSeen = new Promise((resolve) => { listChanged = resolve; });
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => listChanged());
  await client.connect(transport);
  const summary = { transport: opts.url ? "http" : "stdio" };
  try {
    const caps = client.getServerCapabilities();
    check(caps?.tools?.listChanged && caps?.prompts?.listChanged && caps?.resources?.listChanged,
      `capabilities without listChanged: ${JSON.stringify(caps)}`);
    check(caps?.logging, `no logging capability: ${JSON.stringify(caps)}`);
    await client.setLoggingLevel("info");
    const instructions = client.getInstructions();
    check(instructions && instructions.includes("find_skills"), "no instructions naming find_skills");
    summary.server = client.getServerVersion();
    summary.protocol = transport.protocolVersion ?? "";

    // Tools, each with an outputSchema that compiles.
    const ajv = new Ajv({ strict: false, allErrors: true });
    const tools = await listAll((p) => client.listTools(p), "tools");
    const validators = {};
    for (const t of tools) {
      check(t.outputSchema, `${t.name}: no outputSchema`);
      check(t.annotations && t.annotations.openWorldHint === false, `${t.name}: openWorldHint is not false`);
      validators[t.name] = ajv.compile(t.outputSchema);
    }
    summary.tools = tools.map((t) => t.name).sort();
    for (const name of ["find_skills", "load_skill", "read_skill_file", "list_skills"]) {
      check(validators[name], `tool ${name} missing from ${summary.tools}`);
    }
    const call = async (name, args) => {
      const res = await client.callTool({ name, arguments: args });
      check(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${JSON.stringify(res.content)}`);
      check(res.structuredContent, `${name}: no structuredContent`);
      const ok = validators[name](res.structuredContent);
      check(ok, `${name}: structuredContent does not fit outputSchema: ${ajv.errorsText(validators[name].errors)}`);
      const first = res.content[0];
      check(first?.type === "text" && sameJSON(JSON.parse(first.text), res.structuredContent),
        `${name}: the first text block is not the structured content as JSON`);
      return res;
    };

    const found = await call("find_skills", { task: opts.task });
    check(found.structuredContent.candidates.some((c) => c.name === opts.skill),
      `find_skills did not propose ${opts.skill}: ${JSON.stringify(found.structuredContent)}`);
    summary.found = found.structuredContent.candidates.map((c) => c.name);

    const loaded = await call("load_skill", { name: opts.skill });
    check(loaded.structuredContent.content.startsWith("<skill_content "), "load_skill: body is not framed");
    // The files are listed once, in the JSON, which does not escape the
    // delimiters the model is told to look for.
    check(loaded.content.length === 1 && loaded.content[0].text.includes('"content":"<skill_content '),
      `load_skill: ${loaded.content.length} content blocks; text ${loaded.content[0].text.slice(0, 120)}`);
    const links = loaded.structuredContent.files.map((f) => f.uri);
    summary.links = links;

    const file = await call("read_skill_file", { name: opts.skill, path: opts.file });
    check(file.structuredContent.content?.startsWith("<skill_resource ") || file.structuredContent.data_base64,
      "read_skill_file: neither framed text nor data");

    const listed = await call("list_skills", {});
    summary.skills = listed.structuredContent.total;

    const failed = await client.callTool({ name: "load_skill", arguments: { name: "no-such-skill-anywhere" } });
    check(failed.isError && /^not_found: /.test(failed.content[0].text), `unknown skill: ${JSON.stringify(failed)}`);

    // Resources and prompts.
    const resources = await listAll((p) => client.listResources(p), "resources");
    const templates = await listAll((p) => client.listResourceTemplates(p), "resourceTemplates");
    check(templates.some((t) => t.uriTemplate === "skill://{name}/{+path}"), "no skill://{name}/{+path} template");
    summary.resources = resources.length;
    const uri = `skill://${encodeURIComponent(opts.skill)}/SKILL.md`;
    const read = await client.readResource({ uri });
    check(read.contents[0]?.text?.startsWith("---"), `resources/read ${uri} is not the SKILL.md as written: ${JSON.stringify(read).slice(0, 200)}`);
    const fileRead = await client.readResource({ uri: links.find((l) => l.endsWith(opts.file)) ?? links[0] });
    check(fileRead.contents.length === 1, "resources/read of a file link");

    // Completion of the template's arguments, and a subscription.
    const names = await client.complete({ ref: { type: "ref/resource", uri: "skill://{name}/{+path}" }, argument: { name: "name", value: opts.skill.slice(0, 3) } });
    check(names.completion.values.includes(opts.skill), `completion of ${opts.skill.slice(0, 3)}: ${JSON.stringify(names)}`);
    const paths = await client.complete({ ref: { type: "ref/resource", uri: "skill://{name}/{+path}" }, argument: { name: "path", value: "" },
      context: { arguments: { name: opts.skill } } });
    check(paths.completion.values.includes("SKILL.md") && paths.completion.values.includes(opts.file), `completion of paths: ${JSON.stringify(paths)}`);
    await client.subscribeResource({ uri });
    await client.unsubscribeResource({ uri });

    const prompts = await listAll((p) => client.listPrompts(p), "prompts");
    summary.prompts = prompts.length;
    const prompt = await client.getPrompt({ name: opts.skill });
    check(prompt.messages[0]?.content?.text === loaded.structuredContent.content,
      "prompts/get does not return the same framed body as load_skill");

    // Traversal in a resource URI is refused, not served.
    let refused = false;
    try {
      await client.readResource({ uri: `skill://${encodeURIComponent(opts.skill)}/%2e%2e/%2e%2e/etc/passwd` });
    } catch (e) {
      refused = true;
    }
    check(refused, "a traversal URI was served");

    if (opts.expectListChanged) {
      let timer;
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("no prompts/list_changed within 10s")), 10000);
      });
      try {
        await Promise.race([listChangedSeen, timeout]);
      } finally {
        clearTimeout(timer);
      }
      summary.listChanged = true;
    }
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => {
  process.stderr.write(`mcp-ts-client: ${err?.stack ?? err}\n`);
  process.exit(1);
});
