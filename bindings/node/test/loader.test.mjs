// Finding the native module: APPROVAL_GATE_NODE_ADDON, else this platform's npm package, else
// an error that names the platform and the package.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { currentPlatform, packageName } from "../lib/platform.js";

const INDEX = fileURLToPath(new URL("../lib/index.js", import.meta.url));

test("without the platform package, importing says which platform and which package is missing", () => {
  const env = { ...process.env };
  delete env.APPROVAL_GATE_NODE_ADDON;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(INDEX)})`], {
    env,
    encoding: "utf8",
  });
  assert.notEqual(run.status, 0);
  const { key } = currentPlatform();
  assert.ok(run.stderr.includes(`the platform package ${packageName(key)} is not installed`), run.stderr);
  assert.ok(run.stderr.includes(`(${key})`), run.stderr);
});

test("APPROVAL_GATE_NODE_ADDON names the module to load", () => {
  const run = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", `const ag = await import(${JSON.stringify(INDEX)}); console.log(ag.errorTable().length)`],
    { env: { ...process.env, APPROVAL_GATE_NODE_ADDON: "/nonexistent/approval-gate.node" }, encoding: "utf8" },
  );
  assert.notEqual(run.status, 0);
  assert.match(run.stderr, /\/nonexistent\/approval-gate\.node/);
});
