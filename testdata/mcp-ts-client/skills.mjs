// Drives the router's Skills extension (io.modelcontextprotocol/skills) with
// the official TypeScript SDK's generic request API, as a host would: check
// the capability, page through skills/list, confirm entries with skills/get,
// read files through resources/read and check each against its entry's size
// and sha256 digest, list a skill's folder with resources/directory/read,
// and check that skills the connection may not see are refused.
//
//   node skills.mjs --url http://127.0.0.1:8765/mcp [options]
//   node skills.mjs [options] --stdio -- COMMAND [ARGS...]
//
// Options:
//   --verify N      read and check every file of the first N skills listed
//                   (default: all of them)
//   --expect NAME   a skill the listing must hold (repeatable)
//   --absent NAME   a skill the listing must not hold and skills/get must
//                   refuse with -32602 (repeatable)
//
// It prints one JSON summary line on stdout and exits 0, or prints what
// failed on stderr and exits 1.

import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";

const EXTENSION = "io.modelcontextprotocol/skills";

function parseArgs(argv) {
  const opts = { verify: Infinity, expect: [], absent: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--url": opts.url = next(); break;
      case "--verify": opts.verify = Number(next()); break;
      case "--expect": opts.expect.push(next()); break;
      case "--absent": opts.absent.push(next()); break;
      case "--stdio":
        if (argv[i + 1] === "--") i++;
        opts.command = argv.slice(i + 1);
        i = argv.length;
        break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (!opts.url === !opts.command) throw new Error("give --url URL or --stdio -- COMMAND");
  return opts;
}

function check(cond, what) {
  if (!cond) throw new Error(what);
}

// The extension's shapes, as its specification writes them.
const SkillResource = z.object({
  uri: z.string(),
  digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  size: z.number().int().nonnegative(),
});
const Skill = z.object({
  uri: z.string(),
  frontmatter: z.looseObject({ name: z.string(), description: z.string() }),
  resources: z.union([z.array(SkillResource), z.literal("dynamic")]),
});
const Cacheable = { resultType: z.literal("complete"), ttlMs: z.number(), cacheScope: z.enum(["public", "private"]) };
const ListSkillsResult = z.looseObject({ ...Cacheable, skills: z.array(Skill), nextCursor: z.string().optional() });
const GetSkillResult = z.looseObject({ ...Cacheable, skill: Skill });
const DirectoryResult = z.looseObject({
  resultType: z.literal("complete"),
  resources: z.array(z.looseObject({ uri: z.string(), name: z.string(), mimeType: z.string().optional() })),
  nextCursor: z.string().optional(),
});

// nameOf returns the skill name a URI carries: its last path segment
// before /SKILL.md, decoded.
function nameOf(uri) {
  const path = uri.slice("skill://".length, -"/SKILL.md".length);
  return decodeURIComponent(path.split("/").pop());
}

function skillURI(name) {
  return `skill://${encodeURIComponent(name)}/SKILL.md`;
}

function bytesOf(content) {
  return content.blob !== undefined ? Buffer.from(content.blob, "base64") : Buffer.from(content.text ?? "", "utf8");
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url))
    : new StdioClientTransport({ command: opts.command[0], args: opts.command.slice(1), env: process.env, stderr: "inherit" });
  const client = new Client({ name: "mcpsag-ts-skills", version: "1.0.0" });
  await client.connect(transport);
  const summary = { transport: opts.url ? "http" : "stdio", pages: 0, skills: 0, verifiedSkills: 0, verifiedFiles: 0, refused: 0 };
  try {
    const caps = client.getServerCapabilities();
    check(caps?.resources, `no resources capability: ${JSON.stringify(caps)}`);
    check(caps?.extensions?.[EXTENSION]?.directoryRead === true, `the extension is not declared with directoryRead: ${JSON.stringify(caps)}`);
    summary.protocol = transport.protocolVersion ?? "";

    // Page through the whole listing.
    const entries = new Map();
    let cursor;
    for (;;) {
      const page = await client.request({ method: "skills/list", params: cursor ? { cursor } : {} }, ListSkillsResult);
      summary.pages++;
      // A listing of more than one page says, on every page, how many
      // skills it holds and that find_skills serves a model better.
      const total = page._meta?.["mcpsag/total"], hint = page._meta?.["mcpsag/hint"];
      if (summary.pages === 1) {
        summary.total = total ?? 0;
        summary.hint = hint ?? "";
      }
      check((total ?? 0) === summary.total && (hint ?? "") === summary.hint, `page ${summary.pages}: _meta ${JSON.stringify(page._meta)} differs from the first page's`);
      for (const s of page.skills) {
        check(!entries.has(s.uri), `${s.uri} is listed twice`);
        check(s.uri.endsWith("/SKILL.md") && nameOf(s.uri) === s.frontmatter.name, `${s.uri}: the last segment is not the name ${s.frontmatter.name}`);
        check(Array.isArray(s.resources) && s.resources[0]?.uri === s.uri, `${s.uri}: the manifest does not start with SKILL.md`);
        check(s.resources.length <= 512, `${s.uri}: ${s.resources.length} files, over the extension's limit`);
        entries.set(s.uri, s);
      }
      if (!page.nextCursor) break;
      check(page.nextCursor !== cursor, "the cursor repeats");
      cursor = page.nextCursor;
    }
    summary.skills = entries.size;
    for (const name of opts.expect) check(entries.has(skillURI(name)), `${name} is not listed`);

    // Confirm entries and read their files, checking each digest.
    let n = 0;
    for (const [uri, listed] of entries) {
      if (n++ >= opts.verify) break;
      const got = await client.request({ method: "skills/get", params: { uri } }, GetSkillResult);
      check(JSON.stringify(got.skill) === JSON.stringify(listed), `${uri}: skills/get differs from the listing`);
      for (const r of listed.resources) {
        const read = await client.readResource({ uri: r.uri });
        check(read.contents.length === 1 && read.contents[0].uri === r.uri, `${r.uri}: contents ${JSON.stringify(read.contents).slice(0, 200)}`);
        const bytes = bytesOf(read.contents[0]);
        const digest = "sha256:" + createHash("sha256").update(bytes).digest("hex");
        check(bytes.length === r.size && digest === r.digest, `${r.uri}: read ${bytes.length} bytes ${digest}; the entry says ${r.size} ${r.digest}`);
        if (r.uri === uri) {
          check(read.contents[0].mimeType === "text/markdown", `${uri}: mimeType ${read.contents[0].mimeType}`);
          const text = bytes.toString("utf8");
          check(text.includes(`name: ${listed.frontmatter.name}`) || text.includes(`name: "${listed.frontmatter.name}"`),
            `${uri}: the SKILL.md read does not carry the entry's name`);
        }
        summary.verifiedFiles++;
      }
      summary.verifiedSkills++;
    }

    // A skill's folder lists its direct children.
    const withFiles = [...entries.values()].find((s) => s.resources.length > 1);
    if (withFiles) {
      const root = withFiles.uri.slice(0, -"/SKILL.md".length);
      const dir = await client.request({ method: "resources/directory/read", params: { uri: root } }, DirectoryResult);
      check(dir.resources.some((r) => r.uri === withFiles.uri), `${root}: SKILL.md is not among ${JSON.stringify(dir.resources)}`);
      const sub = dir.resources.find((r) => r.mimeType === "inode/directory");
      if (sub) {
        const inner = await client.request({ method: "resources/directory/read", params: { uri: sub.uri } }, DirectoryResult);
        check(inner.resources.length > 0 && inner.resources.every((r) => r.uri.startsWith(sub.uri + "/")), `${sub.uri}: ${JSON.stringify(inner)}`);
      }
      summary.directory = dir.resources.map((r) => r.name);
    }

    // What the connection may not see is neither listed nor served.
    for (const name of opts.absent) {
      const uri = skillURI(name);
      check(!entries.has(uri), `${name} is listed`);
      let code;
      try {
        await client.request({ method: "skills/get", params: { uri } }, GetSkillResult);
      } catch (e) {
        code = e instanceof McpError ? e.code : undefined;
      }
      check(code === -32602, `skills/get ${uri}: code ${code}, want -32602`);
      let readRefused = false;
      try {
        await client.readResource({ uri });
      } catch {
        readRefused = true;
      }
      check(readRefused, `resources/read ${uri} was served`);
      summary.refused++;
    }
  } finally {
    await client.close();
  }
  process.stdout.write(JSON.stringify(summary) + "\n");
}

main().catch((err) => {
  process.stderr.write(`skills.mjs: ${err?.stack ?? err}\n`);
  process.exit(1);
});
