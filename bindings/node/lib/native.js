// Finds and loads the native module (napi-rs): `APPROVAL_GATE_NODE_ADDON` if set (tests, a
// build from source), else the `.node` file of this platform's npm package.

import { createRequire } from "node:module";
import { resolve } from "node:path";

import { platformFile } from "./platform.js";

/** The file name of the native module inside a platform package. */
export const ADDON_FILE = "approval-gate.node";

function load() {
  const require = createRequire(import.meta.url);
  const given = process.env.APPROVAL_GATE_NODE_ADDON;
  if (given !== undefined && given !== "") {
    // A path as the user wrote it: relative to the working directory, not to this file.
    return require(resolve(given));
  }
  const path = platformFile(ADDON_FILE);
  if (path instanceof Error) {
    throw path;
  }
  return require(path);
}

/** The native module. */
export const native = load();
