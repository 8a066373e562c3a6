// Calls into the native module: what it throws becomes the error class of its code.

import { errorOf } from "./errors.js";

const PREFIX = "approval-gate-error:";

/**
 * The JavaScript error for what the native module threw: its code's class, with the library's
 * message and details; anything else as it is.
 */
export function fromNative(error) {
  const text = error?.message;
  if (typeof text === "string" && text.startsWith(PREFIX)) {
    let details;
    try {
      details = JSON.parse(text.slice(PREFIX.length));
    } catch {
      return error;
    }
    return errorOf(details.code, details.message, details);
  }
  return error;
}

/** Runs `call` (sync or async), turning what the native module throws into the classes here. */
export async function nativeCall(call) {
  try {
    return await call();
  } catch (error) {
    throw fromNative(error);
  }
}

/** `call` for synchronous native calls. */
export function nativeSync(call) {
  try {
    return call();
  } catch (error) {
    throw fromNative(error);
  }
}
