// The npm packages as a user gets them, offline: `npm pack` every package (npm/pack.mjs, from
// the cargo profile directory `APPROVAL_GATE_CARGO_PROFILE`, by default the workspace's
// target/debug), `npm install` the tarballs in a fresh directory, then `npx -y` the MCP server
// under the official MCP TypeScript SDK client, `npx approval-gate list`, and executeApproved
// through the installed package (its native module found in the platform package).

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PROFILE = resolve(process.env.APPROVAL_GATE_CARGO_PROFILE ?? join(ROOT, "target", "debug"));
const MAIN = "@approval-gate/approval-gate-mcp";

let user;
let store;

/** The environment of a user's command: offline, the test store, no test-only addon path. */
function userEnv() {
  const env = { ...process.env, APPROVAL_GATE_DIR: store, npm_config_offline: "true", npm_config_update_notifier: "false" };
  delete env.APPROVAL_GATE_NODE_ADDON;
  return env;
}

before(() => {
  for (const file of ["approval-gate", "approval-gate-mcp", "libapproval_gate_node.so"]) {
    assert.ok(existsSync(join(PROFILE, file)), `${file} is not built in ${PROFILE} (APPROVAL_GATE_CARGO_PROFILE)`);
  }
  const out = mkdtempSync(join(tmpdir(), "ag-npm-"));
  const tarballs = execFileSync(process.execPath, [join(ROOT, "npm", "pack.mjs"), "--profile", PROFILE, "--out", join(out, "packs")], {
    encoding: "utf8",
  })
    .trim()
    .split("\n");
  assert.equal(tarballs.length, 2);
  user = join(out, "user");
  store = join(out, "store");
  execFileSync("mkdir", ["-p", user]);
  writeFileSync(join(user, "package.json"), '{ "name": "a-user", "private": true, "type": "module" }\n');
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", ...tarballs], { cwd: user, stdio: "inherit" });
});

test("npx -y <main package> serves MCP to the official SDK client, and npx approval-gate list shows what it filed", { timeout: 120_000 }, async () => {
  const transport = new StdioClientTransport({ command: "npx", args: ["-y", MAIN], cwd: user, env: userEnv(), stderr: "inherit" });
  const client = new Client({ name: "npm-test", version: "1.0.0" });
  await client.connect(transport);
  let id;
  try {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const name of ["request_approval", "check_approval", "wait_for_approval", "list_pending", "decide_approval", "consume_approval"]) {
      assert.ok(names.includes(name), `no tool ${name} in ${names}`);
    }
    const filed = await client.callTool({
      name: "request_approval",
      arguments: { action: "send email to alice@example.com, subject: Invoice 1042", reason: "customer asked", requested_by: "agent-1" },
    });
    assert.notEqual(filed.isError, true, JSON.stringify(filed));
    id = JSON.parse(filed.content[0].text).id;
    assert.match(id, /^[0-9a-z]{12}$/);
  } finally {
    await client.close();
  }
  const list = spawnSync("npx", ["approval-gate", "list"], { cwd: user, env: userEnv(), encoding: "utf8" });
  assert.equal(list.status, 0, list.stderr);
  assert.match(list.stdout, new RegExp(id));
  assert.match(list.stdout, /agent-1 +send email to alice/);
});

test("the shim passes on the binary's exit code", () => {
  const direct = spawnSync(join(PROFILE, "approval-gate"), ["show", "000000000000"], { env: userEnv(), encoding: "utf8" });
  const shimmed = spawnSync("npx", ["approval-gate", "show", "000000000000"], { cwd: user, env: userEnv(), encoding: "utf8" });
  assert.notEqual(direct.status, 0);
  assert.equal(shimmed.status, direct.status);
  assert.equal(shimmed.stderr, direct.stderr);
});

test("the installed package's executeApproved, from both import paths, runs an approved request once", { timeout: 60_000 }, () => {
  const script = `
    import { Gate, AlreadyConsumed } from "${MAIN}";
    import { executeApproved } from "${MAIN}/dist/store.js";
    const gate = await Gate.open();
    const { id } = await gate.requestApproval({ action: "wire 5 EUR", reason: "rent", operation: "payments.transfer", payload: { cents: 500 } });
    await gate.approve(id, { by: "alice" });
    let runs = 0;
    await executeApproved(id, { action: "wire 5 EUR", operation: "payments.transfer", payload: { cents: 500 } }, async (ctx) => {
      ctx.assertActive();
      runs += Object.isFrozen(ctx.payload) && ctx.payload.cents === 500 ? 1 : 100;
    });
    const again = await executeApproved(id, { action: "wire 5 EUR", operation: "payments.transfer", payload: { cents: 500 } }, () => { runs += 1; }).catch((e) => e);
    console.log(JSON.stringify({ runs, refused: again instanceof AlreadyConsumed, location: gate.location }));
  `;
  writeFileSync(join(user, "executor.mjs"), script);
  const run = spawnSync(process.execPath, ["executor.mjs"], { cwd: user, env: userEnv(), encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(JSON.parse(run.stdout), { runs: 1, refused: true, location: store });
});

/** Starts `command`, waits for its answer to MCP's initialize, sends SIGTERM: how it ended. */
async function terminatedAfterInitialize(command, args) {
  const { spawn } = await import("node:child_process");
  const { once } = await import("node:events");
  const child = spawn(command, args, { cwd: user, env: userEnv(), stdio: ["pipe", "pipe", "ignore"] });
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
  };
  child.stdin.write(`${JSON.stringify(initialize)}\n`);
  await once(child.stdout, "data");
  // The processes it started (the shim's: the server), to check none outlives it.
  const { readFileSync } = await import("node:fs");
  const started = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  child.kill("SIGTERM");
  const [code, signal] = await once(child, "exit");
  const alive = started.filter((pid) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  });
  for (const pid of alive) process.kill(pid, "SIGKILL");
  return { code, signal, started: started.length, alive };
}

test("the shim forwards a signal to the server and ends as the server did", { timeout: 60_000 }, async () => {
  const direct = await terminatedAfterInitialize(join(PROFILE, "approval-gate-mcp"), []);
  const shimmed = await terminatedAfterInitialize(join(user, "node_modules", ".bin", "approval-gate-mcp"), []);
  assert.deepEqual(direct, { code: null, signal: "SIGTERM", started: 0, alive: [] });
  // The server got the signal (and was waited for), and the shim ended by it too.
  assert.deepEqual(shimmed, { ...direct, started: 1 });
});
