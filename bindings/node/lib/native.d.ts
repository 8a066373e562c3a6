// The native module's interface (src/, napi-rs), as lib/ uses it. Hand-written; the test suite
// checks it names exactly what the built module exports, each class's members included.

/** The canonical text of a payload and its BLAKE3 digest. */
export interface Canonical {
  text: string;
  digest: string;
}

/** What the executor is about to run; the payload as JSON text. */
export interface BindingInput {
  action: string;
  operation?: string;
  payload?: string;
}

/** A new request; the payload as JSON text. */
export interface RequestInput {
  action: string;
  reason: string;
  operation?: string;
  payload?: string;
  ttlSeconds?: number;
  requestedBy?: string;
}

/** What a consume (or a started execution) proved. */
export declare class NativeGrant {
  private constructor();
  readonly id: string;
  readonly operation: string | null;
  readonly payloadDigest: string | null;
  readonly payloadText: string | null;
  readonly expiresAt: string;
  assertActive(): void;
}

/** An execution whose body may run now. */
export declare class NativeExecution {
  private constructor();
  readonly grant: NativeGrant;
  finish(error: string | null): Promise<void>;
}

/** The library's gate; every method returns a Promise (JSON text where a report comes back). */
export declare class NativeGate {
  private constructor();
  readonly location: string;
  requestApproval(input: RequestInput): Promise<string>;
  check(id: string): Promise<string>;
  approve(id: string, by: string, reason?: string | null): Promise<string>;
  deny(id: string, by: string, reason?: string | null): Promise<string>;
  revoke(id: string, by: string, reason?: string | null): Promise<string>;
  consume(id: string, input: BindingInput): Promise<NativeGrant>;
  beginExecution(id: string, input: BindingInput): Promise<NativeExecution>;
  recover(): Promise<string[]>;
  auditRecords(): Promise<string>;
  verifyAudit(): Promise<number>;
}

/** The native module. */
export interface NativeModule {
  openGate(options?: import("./index.js").OpenOptions): Promise<NativeGate>;
  errorTable(): import("./index.js").ErrorRow[];
  canonicalize(jsonText: string): Canonical;
  postgresInit(url: string): Promise<number>;
  checkOperationName(name: string): void;
  NativeGate: typeof NativeGate;
  NativeGrant: typeof NativeGrant;
  NativeExecution: typeof NativeExecution;
}

/** The native module, loaded. */
export declare const native: NativeModule;
/** The file name of the native module inside a platform package. */
export declare const ADDON_FILE: string;
