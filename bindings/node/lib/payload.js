// Payloads between JavaScript and the library: a JavaScript value to JSON text (refusing what
// JSON cannot carry exactly, where `JSON.stringify` would silently drop or change it), the
// canonical text back to a deep-frozen value.

import { InvalidPayload } from "./errors.js";

/** A JSON Pointer segment, escaped as RFC 6901 says. */
function pointer(path, segment) {
  return `${path}/${String(segment).replaceAll("~", "~0").replaceAll("/", "~1")}`;
}

function shown(path) {
  return path === "" ? "the top level" : JSON.stringify(path);
}

function refuse(problem) {
  return new InvalidPayload(`invalid payload: ${problem}`);
}

/** Whether `value` is a plain object: `{...}`, `Object.create(null)`. */
function isPlainObject(value) {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Checks that `value` is JSON exactly: `null`, booleans, strings, finite numbers, dense arrays
 * and plain objects with string keys, without cycles. Everything else (`undefined`, functions,
 * symbols, BigInt, NaN, Infinity, Dates, Maps, class instances, `toJSON` methods, holes) is
 * refused with its path, never dropped or converted. Numbers go on as `JSON.stringify` writes
 * them, and the library's rules apply to that text as to any other front end's (an integer
 * beyond ±(2^53 − 1) is refused there).
 */
function check(value, path, ancestors) {
  if (value === null || typeof value === "boolean" || typeof value === "string") {
    return;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) {
      throw refuse(`the number ${value} at ${shown(path)} is not finite; json has no NaN or infinity`);
    }
    return;
  }
  if (typeof value !== "object") {
    throw refuse(`the value at ${shown(path)} is of type ${typeof value}, which is not json`);
  }
  if (ancestors.has(value)) {
    throw refuse(`the value at ${shown(path)} contains itself`);
  }
  ancestors.add(value);
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) {
      if (!(index in value)) {
        throw refuse(`the array at ${shown(path)} has a hole at ${index}`);
      }
      check(value[index], pointer(path, index), ancestors);
    }
  } else if (isPlainObject(value) && typeof value.toJSON !== "function") {
    if (Object.getOwnPropertySymbols(value).length > 0) {
      throw refuse(`the object at ${shown(path)} has symbol keys; json object keys are strings only`);
    }
    for (const key of Object.keys(value)) {
      check(value[key], pointer(path, key), ancestors);
    }
  } else {
    const name = value.constructor?.name ?? "object";
    throw refuse(
      `the value at ${shown(path)} is a ${name}, which is not json; pass plain objects, arrays, ` +
        "strings, finite numbers, booleans and null",
    );
  }
  ancestors.delete(value);
}

/** `value` as JSON text for the native module, refusing whatever JSON cannot carry exactly. */
export function jsonText(value) {
  check(value, "", new Set());
  return JSON.stringify(value);
}

/** Freezes `value` and everything in it. */
export function deepFreeze(value) {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    for (const item of Object.values(value)) {
      deepFreeze(item);
    }
    Object.freeze(value);
  }
  return value;
}

/** The deep-frozen value of canonical JSON text (`null` for none). */
export function frozenPayload(text) {
  return text === null || text === undefined ? null : deepFreeze(JSON.parse(text));
}
