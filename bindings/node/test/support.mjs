// Test helpers: a fresh store per test, requests filed and approved through the binding.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import * as ag from "../lib/index.js";

export { ag };

/** A fresh directory for a store. */
export function freshDir() {
  return mkdtempSync(join(tmpdir(), "ag-node-"));
}

/** A gate over a fresh store. */
export async function freshGate() {
  const dir = join(freshDir(), "store");
  return { dir, gate: await ag.Gate.open({ dir }) };
}

/** A request filed with this binding and approved by alice: its id. */
export async function approved(gate, { action = "send the invoice", operation, payload } = {}) {
  const { id } = await gate.requestApproval({ action, reason: "test", operation, payload });
  await gate.approve(id, { by: "alice" });
  return id;
}

/** The audit lines of request `id` as `event` or `event:outcome`. */
export async function events(gate, id) {
  const records = await gate.auditRecords();
  return records.filter((r) => r.id === id).map((r) => (r.outcome ? `${r.event}:${r.outcome}` : r.event));
}
