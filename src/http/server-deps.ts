// What the HTTP front end is given: its router, key checks, rate limits, bounds, idempotency store,
// clocks, log and response hook. Main thread (built once by app.ts).
import type { Authenticator } from './auth.ts';
import type { FrontIdempotencyStore } from './idempotency-store.ts';
import type { JsonPolicy } from './json-policy.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Router } from './router.ts';
import type { TrustProxy } from './trust-proxy.ts';

export interface ServerDeps {
  router: Router;
  auth: Authenticator;
  rateLimiter: RateLimiter;
  /**
   * Budgets of public senders that prove who they are (connector callbacks, writes; the metrics token,
   * reads), apart from keys and IPs; the main limiter when absent.
   */
  verifiedRateLimiter?: RateLimiter;
  bodyBytesMax: number;
  /** A reply the client is not reading may wait in memory up to this size; beyond, the connection closes. */
  responseBufferedBytesMax: number;
  jsonPolicy: JsonPolicy;
  /** Idempotency for keyed POSTs the front end answers itself. */
  frontIdempotency: FrontIdempotencyStore;
  clockOf: (owner: string) => number;
  /** Faults inside the server (the stack stays here; the client gets a request id). */
  log: (message: string, fields?: Record<string, unknown>) => void;
  /**
   * Called once per answered request (request log, metrics); `route` is the matched template or ''.
   * `ip` is read (a getpeername call) only when `wantsIp` says the callback uses it.
   */
  onResponse?: (done: { requestId: string; method: string; route: string; path: string; status: number; durationMs: number; ip: string; keyId: string | null; account: string | null }) => void;
  wantsIp?: () => boolean;
  /**
   * Cluster owner: the replicated control rows. A write's answer waits until every row it changed is
   * acknowledged by the stream (absent on a single node: nothing waits).
   */
  replica?: { idle(): boolean; settled(): Promise<void> };
  /** Reverse proxies whose forwarding header names the client (KOBO_TRUST_PROXY); absent or null: none. */
  trustProxy?: TrustProxy | null;
}
