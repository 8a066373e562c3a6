// The predecessor's import path: the same API as the main entry.
export * from "./index.js";
