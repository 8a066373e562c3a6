// The types: index.d.ts declares exactly what lib/index.js exports, and `tsc --strict` accepts
// the README's example and refuses to let a body change the approved payload.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { ag } from "./support.mjs";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const TSC = here("../node_modules/typescript/bin/tsc");

/** The names a .d.ts exports (`export declare class X`, `export interface X`, ...). */
function declared(path) {
  const text = readFileSync(path, "utf8");
  const names = new Set();
  for (const [, kind, name] of text.matchAll(/^export (?:declare )?(class|function|const|interface|type) (\w+)/gm)) {
    names.add(`${kind === "interface" || kind === "type" ? "type " : ""}${name}`);
  }
  return names;
}

test("index.d.ts declares every runtime export of lib/index.js, and no other value", () => {
  const types = declared(here("../lib/index.d.ts"));
  const values = [...types].filter((name) => !name.startsWith("type ")).sort();
  assert.deepEqual(values, Object.keys(ag).sort());
});

/** The members a `declare class` or `interface` block of a .d.ts names. */
function members(path, block) {
  const text = readFileSync(path, "utf8");
  const start = text.search(new RegExp(`^export (?:declare class|interface) ${block}\\b`, "m"));
  assert.notEqual(start, -1, `no ${block} in ${path}`);
  const body = text.slice(text.indexOf("{", start) + 1, text.indexOf("\n}", start));
  return [...body.matchAll(/^  (?:readonly )?(\w+)[(:<]/gm)].map(([, name]) => name).sort();
}

test("native.d.ts names exactly what the built native module exports, and each class's members", async () => {
  const { native } = await import("../lib/native.js");
  const path = here("../lib/native.d.ts");
  assert.deepEqual(members(path, "NativeModule"), Object.keys(native).sort());
  for (const name of ["NativeGate", "NativeGrant", "NativeExecution"]) {
    const own = Object.getOwnPropertyNames(native[name].prototype).filter((member) => member !== "constructor");
    assert.deepEqual(members(path, name), own.sort(), name);
  }
});

function tsc(project) {
  return spawnSync(process.execPath, [TSC, "-p", here(project)], { encoding: "utf8" });
}

test("tsc --strict accepts the README's example", () => {
  const run = tsc("types/tsconfig.json");
  assert.equal(run.status, 0, run.stdout + run.stderr);
});

test("tsc --strict refuses a body that writes to the approved payload", () => {
  const run = tsc("types/tsconfig.mutates.json");
  assert.notEqual(run.status, 0);
  assert.match(run.stdout, /mutates\.ts.*TS2540.*'to' because it is a read-only property/s);
});
