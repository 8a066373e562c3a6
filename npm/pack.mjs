#!/usr/bin/env node
// Stages approval-gate's npm packages from built binaries and packs them (`npm pack`):
//
//   node npm/pack.mjs --profile target/release --out <dir> [--platform linux-x64-gnu] [--no-strip]
//
// The main package (@approval-gate/approval-gate-mcp: the `approval-gate` and
// `approval-gate-mcp` shims, the JS layer of bindings/node/lib) and the package of one platform
// (@approval-gate/approval-gate-mcp-<platform>: the two binaries and the native module, from the
// cargo profile directory given; CI gives its debug builds). The other platforms' rows are in
// bindings/node/lib/platform.js: a release builds each on its own machine and packs it here the
// same way. Prints the tarballs' paths, one a line. Strips the staged copies of the binaries
// unless told not to (debug builds carry their line tables: ten times the size).

import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { MAIN_PACKAGE, PLATFORMS, currentPlatform, packageName } from "../bindings/node/lib/platform.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    profile: { type: "string" },
    out: { type: "string" },
    platform: { type: "string", default: currentPlatform().key },
    "no-strip": { type: "boolean", default: false },
  },
});
if (!values.profile || !values.out) {
  console.error("usage: node npm/pack.mjs --profile <cargo profile dir> --out <dir> [--platform <key>] [--no-strip]");
  process.exit(2);
}
const row = PLATFORMS.find((p) => p.key === values.platform);
if (!row) {
  console.error(`pack: no platform ${values.platform}; the table has ${PLATFORMS.map((p) => p.key).join(", ")}`);
  process.exit(2);
}

/** The workspace's version (`[workspace.package] version` of the root Cargo.toml). */
function version() {
  const manifest = readFileSync(join(ROOT, "Cargo.toml"), "utf8");
  const section = manifest.slice(manifest.indexOf("[workspace.package]"));
  const found = section.match(/^version\s*=\s*"([^"]+)"/m);
  if (!found) throw new Error("pack: no version in [workspace.package] of Cargo.toml");
  return found[1];
}

const VERSION = version();
const out = resolve(values.out);
const stage = join(out, "stage");
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

const COMMON = {
  version: VERSION,
  license: "MIT",
  repository: { type: "git", url: "git+https://github.com/approval-gate/approval-gate.git" },
};

function writeJson(path, value) {
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);
}

/** `npm pack` of a staged directory: the tarball's path. */
function pack(dir) {
  const answer = execFileSync("npm", ["pack", "--json", "--pack-destination", out], { cwd: dir, encoding: "utf8" });
  return join(out, JSON.parse(answer)[0].filename);
}

// The platform package: binaries and the native module, no code to run at install.
const platformDir = join(stage, values.platform);
mkdirSync(join(platformDir, "bin"), { recursive: true });
const exe = row.os === "win32" ? ".exe" : "";
const library = row.os === "win32" ? "approval_gate_node.dll" : row.os === "darwin" ? "libapproval_gate_node.dylib" : "libapproval_gate_node.so";
const copies = [
  [`approval-gate${exe}`, `bin/approval-gate${exe}`],
  [`approval-gate-mcp${exe}`, `bin/approval-gate-mcp${exe}`],
  [library, "approval-gate.node"],
];
for (const [from, to] of copies) {
  const target = join(platformDir, to);
  copyFileSync(join(resolve(values.profile), from), target);
  chmodSync(target, 0o755);
  if (!values["no-strip"] && row.os === "linux") {
    execFileSync("strip", [target.endsWith(".node") ? "--strip-unneeded" : "--strip-all", target]);
  }
}
copyFileSync(join(ROOT, "LICENSE"), join(platformDir, "LICENSE"));
writeFileSync(
  join(platformDir, "README.md"),
  `# ${packageName(values.platform)}\n\nThe ${values.platform} binaries of [${MAIN_PACKAGE}](https://www.npmjs.com/package/${MAIN_PACKAGE}) ` +
    "(`approval-gate`, `approval-gate-mcp`) and its native module. Install the main package, not this one.\n",
);
writeJson(join(platformDir, "package.json"), {
  name: packageName(values.platform),
  ...COMMON,
  description: `approval-gate's prebuilt binaries and native module for ${values.platform}`,
  os: [row.os],
  cpu: [row.cpu],
  ...(row.libc ? { libc: [row.libc] } : {}),
  files: ["bin", "approval-gate.node", "LICENSE", "README.md"],
  preferUnplugged: true,
});

// The main package: the shims and the JS layer; each platform package an optional dependency.
const mainDir = join(stage, "main");
mkdirSync(join(mainDir, "lib"), { recursive: true });
mkdirSync(join(mainDir, "bin"), { recursive: true });
const lib = join(ROOT, "bindings", "node", "lib");
for (const file of readdirSync(lib)) {
  if (file.endsWith(".js") || file.endsWith(".d.ts")) copyFileSync(join(lib, file), join(mainDir, "lib", file));
}
const template = join(ROOT, "npm", "approval-gate-mcp");
for (const file of readdirSync(join(template, "bin"))) {
  copyFileSync(join(template, "bin", file), join(mainDir, "bin", file));
  chmodSync(join(mainDir, "bin", file), 0o755);
}
copyFileSync(join(template, "README.md"), join(mainDir, "README.md"));
copyFileSync(join(ROOT, "LICENSE"), join(mainDir, "LICENSE"));
writeJson(join(mainDir, "package.json"), {
  name: MAIN_PACKAGE,
  ...COMMON,
  description:
    "Human approval for AI agents' consequential actions: the approval-gate CLI, the approval-gate-mcp MCP server and executeApproved for Node executors (prebuilt, no install script).",
  keywords: ["mcp", "approval", "human-in-the-loop", "agent", "authorization"],
  type: "module",
  bin: { "approval-gate": "bin/approval-gate.js", "approval-gate-mcp": "bin/approval-gate-mcp.js" },
  main: "lib/index.js",
  types: "lib/index.d.ts",
  exports: {
    ".": { types: "./lib/index.d.ts", default: "./lib/index.js" },
    "./dist/store.js": { types: "./lib/store.d.ts", default: "./lib/store.js" },
    "./package.json": "./package.json",
  },
  files: ["bin", "lib", "LICENSE", "README.md"],
  engines: { node: ">=18" },
  optionalDependencies: Object.fromEntries(PLATFORMS.map((p) => [packageName(p.key), VERSION])),
});

for (const dir of [platformDir, mainDir]) {
  console.log(pack(dir));
}
