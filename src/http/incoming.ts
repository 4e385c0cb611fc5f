// What the front end reads of one request before it routes it: the headers it keeps, and the peer's
// address on demand. Main thread (uWS callbacks). Invariant: a header read here is read once, and only
// for the requests that use it (reads skip the write-only headers; the console's three only on /console).
import type { KeyRecord } from '../store/control-store.ts';
import { normalizeIp } from './auth.ts';
import type { HttpRequest, HttpResponse } from './uws.ts';

export interface Incoming {
  method: string;
  path: string;
  query: string;
  authorization: string;
  contentType: string;
  idempotencyKey: string;
  transactionAuthorization: string;
  /** Cookie, Origin and Host: read for the console's paths only (src/console/), '' elsewhere. */
  browser: { cookie: string; origin: string; host: string };
  /** Kobo-Timestamp and Kobo-Signature: how connectors sign their callbacks. */
  signature: { timestamp: string; signature: string };
  /**
   * The client's address, read from the socket (a getpeername call) on first use by `ipOf`: only
   * IP-based rate limits, key allowlists and the request log need it.
   */
  ip: string | null;
  /** The forwarding header's lines, read only when a proxy is trusted ('' otherwise or when absent). */
  forwarded: string;
  /** The key that authenticated the request, for the request log (its id and account, never its secret). */
  key: KeyRecord | null;
  res: HttpResponse;
  requestId: string;
  aborted: boolean;
  startedMs: number;
  route: string;
  /** Counted out of the in-flight total (answered or aborted). */
  settled: boolean;
  /** An abort handler is registered (a body is awaited, or the answer comes after uWS's callback). */
  abortWatched: boolean;
}

export const EMPTY_BODY = Buffer.alloc(0);
export const NO_SIGNATURE = Object.freeze({ timestamp: '', signature: '' });

const NO_BROWSER = Object.freeze({ cookie: '', origin: '', host: '' });

/** The headers only the console reads (three uWS calls spared on every API request). */
export function browserHeaders(req: HttpRequest, path: string): Incoming['browser'] {
  if (!path.startsWith('/console')) return NO_BROWSER;
  return { cookie: req.getHeader('cookie'), origin: req.getHeader('origin'), host: req.getHeader('host') };
}

/**
 * The peer's address as text, from its binary form: IPv4 (and IPv4-mapped IPv6) is formatted here,
 * which costs a fraction of decoding uWS's text form and normalising it; other IPv6 goes that way.
 */
export function peerIp(res: HttpResponse): string {
  const bytes = new Uint8Array(res.getRemoteAddress());
  if (bytes.length === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  if (bytes.length === 16 && bytes[10] === 0xff && bytes[11] === 0xff && bytes.subarray(0, 10).every((b) => b === 0)) {
    return `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  return normalizeIp(Buffer.from(res.getRemoteAddressAsText()).toString());
}
