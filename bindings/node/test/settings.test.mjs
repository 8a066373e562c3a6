// The operator's settings: Gate.open() resolves the store, the limits and the policy exactly as
// the binaries do (the library's settings): options (the CLI's flags), then the environment,
// then the config file; the system policy holds whatever they say.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, test } from "node:test";

import { ag, freshDir } from "./support.mjs";

const PAYLOAD = { to: "bob", amount_cents: 1250 };
const BINDING = { action: "pay bob", operation: "payments.transfer", payload: PAYLOAD };
const VARS = ["APPROVAL_GATE_CONFIG", "APPROVAL_GATE_DIR", "APPROVAL_GATE_STORE", "APPROVAL_GATE_APPROVERS", "APPROVAL_GATE_SYSTEM_POLICY"];
let saved;

beforeEach(() => {
  saved = Object.fromEntries(VARS.map((name) => [name, process.env[name]]));
  for (const name of VARS) delete process.env[name];
});

afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function write(path, text) {
  writeFileSync(path, text);
  chmodSync(path, 0o644);
  return path;
}

/** A new ed25519 public key line, made by ssh-keygen. */
function publicKey(dir, name) {
  const key = join(dir, name);
  const made = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key], { encoding: "utf8" });
  assert.equal(made.status, 0, made.stderr);
  return readFileSync(`${key}.pub`, "utf8").trim();
}

/** A request "approved" unsigned by a gate whose settings hold no policy (as anything writing the store can). */
async function forged(store, dir) {
  process.env.APPROVAL_GATE_CONFIG = write(join(dir, "empty.toml"), "");
  const agent = await ag.Gate.open({ dir: store });
  const { id } = await agent.requestApproval({ ...BINDING, reason: "rent" });
  await agent.approve(id, { by: "alice@example.com" });
  return id;
}

test("the config file names the store; the environment beats it, and an option beats both", async () => {
  const dir = freshDir();
  const store = join(dir, "approvals");
  process.env.APPROVAL_GATE_CONFIG = write(join(dir, "config.toml"), `store = ${JSON.stringify(store)}\n`);
  assert.equal((await ag.Gate.open()).location, store);
  process.env.APPROVAL_GATE_DIR = join(dir, "from-env");
  assert.equal((await ag.Gate.open()).location, join(dir, "from-env"));
  assert.equal((await ag.Gate.open({ dir: join(dir, "from-flag") })).location, join(dir, "from-flag"));
});

test("the config file's limits hold", async () => {
  const dir = freshDir();
  process.env.APPROVAL_GATE_CONFIG = write(join(dir, "config.toml"), "max_pending = 1\n");
  const gate = await ag.Gate.open({ dir: join(dir, "approvals") });
  await gate.requestApproval({ action: "one", reason: "why" });
  await assert.rejects(gate.requestApproval({ action: "two", reason: "why" }), ag.QueueFull);
});

test("an unusable setting opens nothing", async () => {
  const dir = freshDir();
  process.env.APPROVAL_GATE_CONFIG = write(join(dir, "config.toml"), "max_pending = \"many\"\n");
  await assert.rejects(ag.Gate.open({ dir: join(dir, "approvals") }), ag.InvalidInput);
});

test("the config file's approvers hold: an unsigned approval runs nothing", async () => {
  const dir = freshDir();
  const store = join(dir, "approvals");
  const signers = write(join(dir, "allowed_signers"), `alice@example.com ${publicKey(dir, "alice")}\n`);
  const config = write(join(dir, "config.toml"), `store = ${JSON.stringify(store)}\napprovers = ${JSON.stringify(signers)}\n`);
  const id = await forged(store, dir);
  process.env.APPROVAL_GATE_CONFIG = config;
  for (const gate of [await ag.Gate.open(), await ag.Gate.open({ dir: store })]) {
    const refused = await gate.executeApproved(id, BINDING, () => assert.fail("ran")).catch((e) => e);
    assert.ok(["insufficient_approvals", "signature_required"].includes(refused.code), String(refused));
    const { id: other } = await gate.requestApproval({ action: "x", reason: "y" });
    await assert.rejects(gate.approve(other, { by: "alice@example.com" }), ag.SignatureRequired);
  }
  assert.equal((await (await ag.Gate.open({ dir: store })).check(id)).effectiveStatus, "approved_unconsumed");
});

test("the system policy holds for Node as for exec: its approvers cannot be replaced", { skip: process.getuid?.() !== 0 && "a system policy must be owned by root" }, async () => {
  const dir = freshDir();
  const etc = join(dir, "etc");
  mkdirSync(etc, { mode: 0o755 });
  chmodSync(etc, 0o755);
  const signers = write(join(etc, "allowed_signers"), `alice@example.com ${publicKey(etc, "alice")}\n`);
  const system = write(join(etc, "policy.toml"), `approvers = ${JSON.stringify(signers)}\n`);
  const store = join(dir, "approvals");
  const id = await forged(store, dir);
  process.env.APPROVAL_GATE_SYSTEM_POLICY = system;
  const refused = await (await ag.Gate.open({ dir: store })).executeApproved(id, BINDING, () => assert.fail("ran")).catch((e) => e);
  assert.ok(["insufficient_approvals", "signature_required"].includes(refused.code), String(refused));
  const own = write(join(dir, "own_signers"), `alice@example.com ${publicKey(dir, "mallory")}\n`);
  await assert.rejects(ag.Gate.open({ dir: store, approvers: own }), (e) => e instanceof ag.InvalidInput && /cannot replace/.test(e.message));
  process.env.APPROVAL_GATE_APPROVERS = own;
  await assert.rejects(ag.Gate.open({ dir: store }), (e) => e instanceof ag.InvalidInput && /cannot replace/.test(e.message));
});
