// SIGKILL of a Node executor between execution_started and the body's side effect: the
// outcome is recorded unknown, and the approval never runs again.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { ag, approved, events, freshGate } from "./support.mjs";

const EXECUTOR = fileURLToPath(new URL("./fixtures/executor.mjs", import.meta.url));
const BINDING = { action: "wire 100 EUR", operation: "payments.transfer", payload: { cents: 10000 } };

/** Runs the executor until its body says "started": the child and its stdout lines. */
async function startedExecutor(dir, id, effect) {
  const child = spawn(process.execPath, [EXECUTOR, dir, id, effect], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout });
  const [line] = await once(lines, "line");
  assert.equal(line, "started");
  return child;
}

test("a SIGKILLed executor leaves the outcome unknown, and the approval never runs again", { timeout: 120_000 }, async () => {
  const { dir, gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const effect = join(dir, "..", "effect.json");

  const child = await startedExecutor(dir, id, effect);
  assert.deepEqual((await events(gate, id)).slice(-2), ["consumed", "execution_started"]);
  child.kill("SIGKILL");
  const [code, signal] = await once(child, "exit");
  assert.equal(signal, "SIGKILL", `exited with ${code}`);
  assert.equal(existsSync(effect), false);

  // The next open recovers: the execution's outcome is recorded as unknown.
  const reopened = await ag.Gate.open({ dir });
  assert.deepEqual((await events(reopened, id)).slice(-1), ["execution_finished:unknown"]);
  assert.equal((await reopened.check(id)).effectiveStatus, "consumed");

  // Never again: not in this process, not in a fresh executor.
  let ran = false;
  await assert.rejects(
    reopened.executeApproved(id, BINDING, () => {
      ran = true;
    }),
    ag.AlreadyConsumed,
  );
  assert.equal(ran, false);
  const again = spawn(process.execPath, [EXECUTOR, dir, id, effect], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  again.stdout.on("data", (chunk) => {
    out += chunk;
  });
  const [status] = await once(again, "exit");
  assert.notEqual(status, 0);
  assert.equal(out, "");
  assert.equal(existsSync(effect), false);
});

test("the same executor, told to go, does its side effect once and records ok", { timeout: 120_000 }, async () => {
  // The control: the fixture really does the effect when not killed.
  const { dir, gate } = await freshGate();
  const id = await approved(gate, BINDING);
  const effect = join(dir, "..", "effect.json");
  const child = await startedExecutor(dir, id, effect);
  child.stdin.end("go\n");
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
  assert.ok(existsSync(effect));
  assert.deepEqual((await events(gate, id)).slice(-1), ["execution_finished:ok"]);
});
