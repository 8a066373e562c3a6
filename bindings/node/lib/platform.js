// The platforms approval-gate ships for, and the npm package of each: what the native module
// loader and the `approval-gate` / `approval-gate-mcp` shims look for. One row per platform
// package (npm/pack.mjs builds the packages from this table too).

import { createRequire } from "node:module";

/** The main npm package: its bins run the binaries of the platform package below. */
export const MAIN_PACKAGE = "@approval-gate/approval-gate-mcp";

/**
 * Every platform package: `os`, `cpu` and `libc` as npm's package.json fields say them, and
 * the Rust target it is built for.
 */
export const PLATFORMS = [
  { key: "linux-x64-gnu", os: "linux", cpu: "x64", libc: "glibc", target: "x86_64-unknown-linux-gnu" },
  { key: "linux-arm64-gnu", os: "linux", cpu: "arm64", libc: "glibc", target: "aarch64-unknown-linux-gnu" },
  { key: "linux-x64-musl", os: "linux", cpu: "x64", libc: "musl", target: "x86_64-unknown-linux-musl" },
  { key: "darwin-arm64", os: "darwin", cpu: "arm64", libc: null, target: "aarch64-apple-darwin" },
  { key: "darwin-x64", os: "darwin", cpu: "x64", libc: null, target: "x86_64-apple-darwin" },
  { key: "win32-x64-msvc", os: "win32", cpu: "x64", libc: null, target: "x86_64-pc-windows-msvc" },
];

/** The npm name of a platform's package. */
export function packageName(key) {
  return `${MAIN_PACKAGE}-${key}`;
}

/** The C library this Linux process runs on: `glibc` or `musl`. */
function libc() {
  const header = process.report?.getReport?.().header;
  return header?.glibcVersionRuntime ? "glibc" : "musl";
}

/** This machine's platform key (`linux-x64-gnu`, ...), and its row, `undefined` if unsupported. */
export function currentPlatform() {
  const c = process.platform === "linux" ? libc() : null;
  const row = PLATFORMS.find((p) => p.os === process.platform && p.cpu === process.arch && p.libc === c);
  const key = row?.key ?? `${process.platform}-${process.arch}${c ? `-${c === "glibc" ? "gnu" : c}` : ""}`;
  return { key, row };
}

/**
 * The path of `file` inside this machine's platform package, or an Error saying clearly what
 * is missing: the platform is not one we build, or its package is not installed (npm skips an
 * optional dependency whose os/cpu/libc does not match, and `--no-optional` skips them all).
 */
export function platformFile(file) {
  const { key, row } = currentPlatform();
  if (!row) {
    return new Error(
      `approval-gate has no prebuilt binaries for this platform (${key}); the platforms built are ` +
        `${PLATFORMS.map((p) => p.key).join(", ")}. Build from source: cargo install approval-gate-cli approval-gate-mcp`,
    );
  }
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`${packageName(key)}/${file}`);
  } catch {
    return new Error(
      `the platform package ${packageName(key)} is not installed, so ${file} cannot be found for ` +
        `this platform (${key}); reinstall ${MAIN_PACKAGE} without --no-optional / --omit=optional`,
    );
  }
}
