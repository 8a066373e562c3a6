// Runs one of approval-gate's binaries from this platform's package, as if it were the
// command itself: stdio inherited, its exit code (or the signal that ended it) passed on, and
// the signals this process receives forwarded to it. No install script: the binary comes in the
// platform package npm picked by its os/cpu/libc fields.

import { spawn } from "node:child_process";

import { platformFile } from "../lib/platform.js";

const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2"];

/** Runs `bin/<name>` of the platform package with this process's arguments. */
export function run(name) {
  const file = process.platform === "win32" ? `bin/${name}.exe` : `bin/${name}`;
  const path = platformFile(file);
  if (path instanceof Error) {
    process.stderr.write(`${name}: ${path.message}\n`);
    process.exit(1);
  }
  const child = spawn(path, process.argv.slice(2), { stdio: "inherit", windowsHide: true });
  const forward = (signal) => () => {
    child.kill(signal);
  };
  const handlers = FORWARDED.filter((signal) => process.platform !== "win32" || signal !== "SIGQUIT").map(
    (signal) => [signal, forward(signal)],
  );
  for (const [signal, handler] of handlers) {
    process.on(signal, handler);
  }
  child.on("error", (error) => {
    process.stderr.write(`${name}: cannot run ${path}: ${error.message}\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    for (const [sig, handler] of handlers) {
      process.off(sig, handler);
    }
    if (signal !== null) {
      // End the same way, so whoever ran us sees the signal.
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}
