// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk, pinned in package.json)
// against Rust's approval-gate-mcp (`APPROVAL_GATE_CARGO_PROFILE`, else target/debug): the
// revision it negotiates, and URL-mode elicitation of the request's page, whose "accept"
// approves nothing. This SDK version speaks up to 2025-11-25 (LATEST_PROTOCOL_VERSION) and
// has no stateless 2026-07-28 client; rmcp's client covers that one (approval-gate-mcp's
// tests/mcp/revisions.rs). Without the binary the test is skipped, except in CI.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PROFILE = resolve(process.env.APPROVAL_GATE_CARGO_PROFILE ?? join(ROOT, "target", "debug"));
const ORIGIN = "https://approvals.example.com";

function binary(t) {
  const path = join(PROFILE, "approval-gate-mcp");
  if (existsSync(path)) return path;
  if (process.env.CI) assert.fail(`no ${path}`);
  t.skip(`no ${path} (outside CI: skipped)`);
  return undefined;
}

/** A client with `capabilities`, connected to a server on a fresh store; every message it got. */
async function connect(command, capabilities, args = []) {
  const env = { ...process.env, APPROVAL_GATE_DIR: join(mkdtempSync(join(tmpdir(), "ag-mcp-")), "store") };
  delete env.APPROVAL_GATE_PUBLIC_URL;
  const transport = new StdioClientTransport({ command, args, env, stderr: "ignore" });
  const received = [];
  let deliver;
  // The client installs its handler on the transport; every message passes through here first.
  Object.defineProperty(transport, "onmessage", {
    configurable: true,
    get: () => deliver && ((message) => { received.push(message); deliver(message); }),
    set: (handler) => { deliver = handler; },
  });
  const client = new Client({ name: "mcp-revisions", version: "1" }, { capabilities });
  return { client, received, connected: client.connect(transport) };
}

async function file(client) {
  const filed = await client.callTool({ name: "request_approval", arguments: { action: "ship it", reason: "friday" } });
  assert.notEqual(filed.isError, true, JSON.stringify(filed));
  return filed.structuredContent.id;
}

test(`the SDK's client negotiates ${LATEST_PROTOCOL_VERSION}, its latest`, async (t) => {
  const command = binary(t);
  if (!command) return;
  const { client, received, connected } = await connect(command, {});
  await connected;
  try {
    const opened = received.find((message) => message.result?.protocolVersion);
    assert.equal(opened.result.protocolVersion, LATEST_PROTOCOL_VERSION);
    assert.equal(LATEST_PROTOCOL_VERSION, "2025-11-25");
    assert.equal((await client.listTools()).tools.length, 6);
  } finally {
    await client.close();
  }
});

test("a URL-mode client is handed the page link, and accepting it approves nothing", async (t) => {
  const command = binary(t);
  if (!command) return;
  const { client, connected } = await connect(command, { elicitation: { url: {} } }, ["--public-url", ORIGIN]);
  let asked;
  const elicited = new Promise((resolveAsked) => { asked = resolveAsked; });
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked(request.params);
    return { action: "accept" };
  });
  await connected;
  try {
    const id = await file(client);
    const waiting = client
      .callTool({ name: "wait_for_approval", arguments: { id, timeoutSeconds: 3600 } })
      .catch((error) => error);
    const params = await elicited;
    assert.equal(params.mode, "url");
    assert.equal(params.url, `${ORIGIN}/requests/${id}`);
    // Accepted: the user may have opened the page. Still nobody has decided.
    const checked = await client.callTool({ name: "check_approval", arguments: { id } });
    assert.equal(checked.structuredContent.effectiveStatus, "pending");
    await client.close();
    await waiting;
  } finally {
    await client.close();
  }
});

test("a client without URL mode is never asked", async (t) => {
  const command = binary(t);
  if (!command) return;
  const { client, connected } = await connect(command, { elicitation: { form: {} } }, ["--public-url", ORIGIN]);
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request.params);
    return { action: "accept" };
  });
  await connected;
  try {
    const id = await file(client);
    const waited = await client.callTool({ name: "wait_for_approval", arguments: { id, timeoutSeconds: 1 } });
    assert.equal(waited.structuredContent.code, "timeout");
    assert.deepEqual(asked, []);
  } finally {
    await client.close();
  }
});
