// One Error subclass per error code of the library's table, with its class and family.

import assert from "node:assert/strict";
import { test } from "node:test";

import { ag } from "./support.mjs";

const BASES = { refused: ag.Refused, invalid: ag.Invalid, fault: ag.Fault, incomplete: ag.Incomplete };
const pascal = (code) => code.split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("");

test("every code of the native module's table has its own exported class, with the table's base and family", () => {
  const table = ag.errorTable();
  assert.ok(table.length > 30);
  assert.deepEqual(ag.UNDECLARED_CODES, []);
  for (const { code, class: kind, family } of table) {
    const Class = ag[pascal(code)];
    assert.equal(typeof Class, "function", `no exported class ${pascal(code)} for ${code}`);
    assert.equal(ag.ERROR_CLASSES[code], Class);
    assert.equal(Class.code, code);
    assert.equal(Class.family, family, code);
    const error = new Class("m", { requestId: "0123456789ab" });
    assert.ok(error instanceof BASES[kind], `${code} is not ${kind}`);
    assert.ok(error instanceof ag.ApprovalGateError && error instanceof Error);
    assert.equal(error.code, code);
    assert.equal(error.name, pascal(code));
    assert.equal(error.requestId, "0123456789ab");
  }
  // And no class for a code the library does not have (bar the JavaScript side's own).
  const codes = new Set(table.map((row) => row.code));
  assert.deepEqual(
    Object.keys(ag.ERROR_CLASSES).filter((code) => !codes.has(code)),
    ["grant_refused"],
  );
});

test("a refusal from the library carries its code, message, request and status", async () => {
  const gate = await ag.Gate.open({ dir: (await import("./support.mjs")).freshDir() + "/s" });
  const { id } = await gate.requestApproval({ action: "a", reason: "r" });
  const error = await gate.consume(id, { action: "a" }).catch((e) => e);
  assert.ok(error instanceof ag.NotApproved);
  assert.equal(error.code, "not_approved");
  assert.equal(error.requestId, id);
  assert.equal(error.status, "pending");
  assert.equal(error.tookEffect, false);
  assert.match(error.message, /not approved|pending/);
});
