// The uWebSockets.js front end: read the request (bounded), route, authenticate, rate-limit, check
// idempotency headers, content type and schema, run the route, write the reply in the spec's envelope.
// Main thread. It never touches balances: routes turn requests into shard commands.
// Invariant: every response, success or failure, carries X-Request-Id equal to error.request_id.
import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { reject, statusOf, type Rejection } from '../errors.ts';
import type { KeyRecord } from '../store/control-store.ts';
import { uws, type HttpRequest, type HttpResponse, type TemplatedApp, type us_listen_socket, type WebSocketBehavior } from './uws.ts';
import { ipSubject, type RateDecision } from './rate-limit.ts';
import { idempotencyKeyHeader } from './idempotency.ts';
import { closedForFraming } from './framing.ts';
import { FrontIdempotencyStore } from './idempotency-store.ts';
import { writeBodyBounded } from './write-body.ts';
import { readForwarded, type TrustProxy } from './trust-proxy.ts';
import { Preflight } from './preflight.ts';
import type { CompiledRoute, HttpMethod, Reply, RequestContext } from './types.ts';
import type { ServerDeps } from './server-deps.ts';
import { SHARD_MOVING_MESSAGE } from '../errors.ts';
import { EMPTY_BODY, NO_SIGNATURE, browserHeaders, peerIp, type Incoming } from './incoming.ts';

export type { ServerDeps };

/** uWS accepts listen options after the port; its typings only show them without a host. */
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => unknown;
/** No SO_REUSEPORT: a second server on a taken port fails instead of sharing traffic with the first. */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/** What a request came to: the reply, and the rate decision whose headers it carries (none before auth). */
type Outcome = { reply: Reply; rate?: RateDecision };

const STATUS_LINE = new Map<number, string>(Object.entries(STATUS_CODES).map(([code, text]) => [Number(code), `${code} ${text ?? ''}`]));
const INTERNAL_MESSAGE = 'An internal error occurred; it is safe to retry with the same Idempotency-Key.';
const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

export class HttpServer {
  private readonly app: TemplatedApp;
  private listenSocket: us_listen_socket | null = null;
  private readonly bootId = randomBytes(4).toString('hex');
  private requestSeq = 0;
  private inFlight = 0;
  private draining = false;
  private readonly checks: Preflight;
  private drained: (() => void) | null = null;
  private readonly trustProxy: TrustProxy | null;

  constructor(private readonly deps: ServerDeps) {
    this.trustProxy = deps.trustProxy ?? null;
    this.checks = new Preflight({ auth: deps.auth, jsonPolicy: deps.jsonPolicy });
    this.app = uws.App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  /** A WebSocket route served by uWS itself (its upgrade handler authenticates; see src/api/event-stream.ts). */
  webSocket<T>(path: string, behavior: WebSocketBehavior<T>): void {
    this.app.ws<T>(path, behavior);
  }

  /**
   * The key of an upgrade request (which skips the request pipeline) and the status refusing it:
   * the same checks as a GET of `family` (key, source IP, scopes).
   */
  upgradeKey(res: HttpResponse, req: HttpRequest, family: string): KeyRecord | { status: number; rejection: Rejection } {
    const key = this.deps.auth.authenticate(req.getHeader('authorization'), Date.now());
    if ('code' in key) return { status: statusOf(key), rejection: key };
    const denied = this.deps.auth.authorize(key, { method: 'GET', family } as CompiledRoute, peerIp(res));
    return denied === null ? key : { status: statusOf(denied), rejection: denied };
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject_) => {
      (this.app.listen as unknown as ListenWithOptions).call(this.app, host, port, LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
        if (socket === false) return reject_(new Error(`cannot listen on ${host}:${port}: the port is in use (or the address is not this machine's); set PORT or HOST`));
        this.listenSocket = socket;
        resolve(uws.us_socket_local_port(socket));
      });
    });
  }

  close(): void {
    if (this.listenSocket !== null) uws.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
  }

  /**
   * Stops accepting connections and waits (at most `timeoutMs`) for the requests already received to
   * be answered; responses written meanwhile close their connection. Resolves with those still open.
   */
  async drain(timeoutMs: number): Promise<number> {
    this.draining = true;
    this.close();
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.drained = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.inFlight;
  }

  /** Requests received and not yet answered (or aborted by the client). */
  get pending(): number {
    return this.inFlight;
  }

  private settle(incoming: Incoming): void {
    if (incoming.settled) return;
    incoming.settled = true;
    this.inFlight -= 1;
    if (this.inFlight === 0 && this.drained !== null) this.drained();
  }

  private onRequest(res: HttpResponse, req: HttpRequest): void {
    const method = req.getCaseSensitiveMethod().toUpperCase();
    // A read carries no body, idempotency key, PIN or connector signature that anything would look at:
    // those five headers (each a call into uWS) are read for writes only.
    const write = method !== 'GET';
    const path = req.getUrl();
    const incoming: Incoming = {
      method,
      path,
      query: req.getQuery() ?? '',
      authorization: req.getHeader('authorization'),
      contentType: write ? req.getHeader('content-type') : '',
      idempotencyKey: write ? idempotencyKeyHeader(req) : '',
      transactionAuthorization: write ? req.getHeader('x-transaction-authorization') : '',
      browser: browserHeaders(req, path),
      signature: write ? { timestamp: req.getHeader('kobo-timestamp'), signature: req.getHeader('kobo-signature') } : NO_SIGNATURE,
      ip: null,
      forwarded: this.trustProxy === null ? '' : readForwarded(req, this.trustProxy.header),
      key: null,
      res,
      requestId: `req_${this.bootId}${(this.requestSeq++).toString(36).padStart(8, '0')}`,
      aborted: false,
      startedMs: performance.now(),
      route: '',
      settled: false,
      abortWatched: false,
    };
    this.inFlight += 1;
    if (!BODY_METHODS.has(incoming.method)) {
      // Most reads are answered inside this callback: uWS needs an abort handler only for an answer
      // that comes later, so `process` registers one then (a native call and a closure spared a read).
      this.process(res, incoming, EMPTY_BODY);
      return;
    }
    this.watchAbort(res, incoming);
    if (closedForFraming(req, res, (why) => this.deps.log(`request ${incoming.requestId}: ${why} Connection closed.`))) return;
    const declared = Number(req.getHeader('content-length') || '0');
    if (declared > this.deps.bodyBytesMax) {
      this.refuseOversized(res, incoming);
      return;
    }
    const chunks: Buffer[] = [];
    let received = 0;
    let refused = false;
    res.onData((chunk, isLast) => {
      if (refused) return;
      received += chunk.byteLength;
      if (received > this.deps.bodyBytesMax) {
        // uWS sets no body limit of its own: refuse as soon as the bound is crossed, and close.
        refused = true;
        this.refuseOversized(res, incoming);
        return;
      }
      // The chunk is uWS's memory, valid only in this callback: copied into Node's buffer pool (a body
      // under 4 KiB), not into an ArrayBuffer of its own (a malloc, then a free by the sweeper).
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) this.process(res, incoming, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    });
  }

  /** uWS forbids touching a finished or aborted response: `send` reads the address before ending it. */
  private ipOf(incoming: Incoming): string {
    if (incoming.ip === null) {
      const peer = incoming.aborted ? '' : peerIp(incoming.res);
      incoming.ip = this.trustProxy === null || peer === '' ? peer : this.trustProxy.clientOf(peer, incoming.forwarded);
    }
    return incoming.ip;
  }

  /** Answers an oversized body and closes: 401 to a keyed route without a valid key (as a missing key always is), else 413. */
  private refuseOversized(res: HttpResponse, incoming: Incoming): void {
    const tooLarge = this.errorReply(reject('PAYLOAD_TOO_LARGE', `The body is larger than ${this.deps.bodyBytesMax} bytes.`));
    const match = this.deps.router.match(incoming.method, incoming.path);
    const authenticated = match.kind === 'found' && match.route.auth === 'key' ? this.authenticate(incoming, match.route.method !== 'GET', Date.now()) : null;
    if (authenticated === null) this.send(res, incoming, tooLarge, this.rateOfRefused(incoming), true);
    else if ('reply' in authenticated) this.send(res, incoming, authenticated.reply, authenticated.rate, true);
    else this.send(res, incoming, tooLarge, authenticated.rate, true);
  }

  /** The key of a request to a keyed route and its rate decision, or the 401 (429 for an IP guessing keys). */
  private authenticate(incoming: Incoming, write: boolean, wallMs: number): { key: KeyRecord; rate: RateDecision } | Outcome {
    const authenticated = incoming.authorization === ''
      ? reject('UNAUTHENTICATED', 'Send Authorization: Bearer <secret key>.')
      : this.deps.auth.authenticate(incoming.authorization, wallMs);
    if ('code' in authenticated) {
      // Failed authentications count against the source IP, so guessing keys is rate-limited too.
      return this.refusedSender(incoming, this.unauthenticated(authenticated), write, wallMs);
    }
    incoming.key = authenticated;
    return { key: authenticated, rate: this.deps.rateLimiter.take(authenticated.id, write, wallMs) };
  }

  /** A request whose sender could not be verified: charged to its source IP, so guessing is rate-limited too. */
  private refusedSender(incoming: Incoming, reply: Reply, write: boolean, wallMs: number): Outcome {
    const ipRate = this.deps.rateLimiter.take(ipSubject(this.ipOf(incoming)), write, wallMs);
    if (!ipRate.allowed) return { reply: this.rateLimited(ipRate), rate: ipRate };
    return { reply, rate: ipRate };
  }

  /**
   * The rate decision of a public route: a sender's own budget once it has proved who it is (its
   * refusal, charged to the IP, otherwise); any other public request's source IP.
   */
  private publicRate(route: CompiledRoute, incoming: Incoming, params: Record<string, string>, rawBody: Buffer, wallMs: number): { rate: RateDecision } | Outcome {
    const write = route.method !== 'GET';
    const limiter = this.deps.verifiedRateLimiter ?? this.deps.rateLimiter;
    const verified = route.verifiedBudget === undefined
      ? null
      : route.verifiedBudget({ params, rawBody, signature: incoming.signature, authorization: incoming.authorization, charge: (budget) => limiter.take(budget, write, wallMs) });
    if (verified === null) return { rate: this.deps.rateLimiter.take(ipSubject(this.ipOf(incoming)), write, wallMs) };
    if ('rejection' in verified) return this.refusedSender(incoming, this.errorReply(verified.rejection, verified.headers), write, wallMs);
    return { rate: verified };
  }

  private errorReply(rejection: Rejection, headers?: Record<string, string>): Reply {
    return { status: statusOf(rejection), error: { code: rejection.code, message: rejection.message }, ...(headers === undefined ? {} : { headers }) };
  }

  /** A 401 must name the scheme to use (RFC 9110 §11.6.1), so clients and proxies know it is bearer auth. */
  private unauthenticated(rejection: Rejection): Reply {
    return this.errorReply(rejection, { 'WWW-Authenticate': 'Bearer realm="kobo"' });
  }

  /**
   * The rate decision for a request refused before routing (413): a valid key's budget is charged,
   * so an authenticated client sees its X-RateLimit-* headers on every answer.
   */
  private rateOfRefused(incoming: Incoming): RateDecision | undefined {
    if (incoming.authorization === '') return undefined;
    const wallMs = Date.now();
    const key = this.deps.auth.authenticate(incoming.authorization, wallMs);
    if ('code' in key) return undefined;
    return this.deps.rateLimiter.take(key.id, incoming.method !== 'GET', wallMs);
  }

  private rateLimited(rate: RateDecision): Reply {
    return this.errorReply(reject('RATE_LIMITED', `Rate limit exceeded; retry in ${rate.resetSeconds} s.`), { 'Retry-After': String(rate.resetSeconds) });
  }

  /** Marks the request aborted when the client goes before its answer (uWS requires a handler then). */
  private watchAbort(res: HttpResponse, incoming: Incoming): void {
    incoming.abortWatched = true;
    res.onAborted(() => {
      incoming.aborted = true;
      this.settle(incoming);
    });
  }

  /**
   * Runs the route and answers. A route that answers synchronously (a cached catalogue, a wallet view,
   * any refusal before the route) is answered inside uWS's own callback, with no promise between: at
   * 40k+ reads a second the microtask hops were a measurable share of a read.
   */
  private process(res: HttpResponse, incoming: Incoming, rawBody: Buffer): void {
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = this.handle(incoming, rawBody);
    } catch (error) {
      this.failed(res, incoming, error);
      return;
    }
    const replica = this.deps.replica;
    if (replica !== undefined && incoming.method !== 'GET') {
      // Cluster owner: a 2xx for a change of keys, clocks, subscriptions or idempotency records leaves once the stream has it.
      outcome = Promise.resolve(outcome).then(async (done) => {
        if (!replica.idle()) await replica.settled();
        return done;
      });
    }
    if (outcome instanceof Promise) {
      if (!incoming.abortWatched) this.watchAbort(res, incoming);
      outcome.then((done) => this.send(res, incoming, done.reply, done.rate, false), (error: unknown) => this.failed(res, incoming, error));
    } else {
      this.send(res, incoming, outcome.reply, outcome.rate, false);
    }
  }

  /** A fault in a route: the stack goes to the log with the request id; the client gets a 500 to retry. */
  private failed(res: HttpResponse, incoming: Incoming, error: unknown): void {
    this.deps.log(`request ${incoming.requestId} failed: ${(error as Error).message}`, { req_id: incoming.requestId, route: incoming.route, err: error });
    this.send(res, incoming, this.errorReply(reject('INTERNAL', INTERNAL_MESSAGE)), undefined, false);
  }

  private handle(incoming: Incoming, rawBody: Buffer): Outcome | Promise<Outcome> {
    const match = this.deps.router.match(incoming.method, incoming.path);
    if (match.kind !== 'found') {
      const rate = this.rateOfRefused(incoming);
      if (rate !== undefined && !rate.allowed) return { reply: this.rateLimited(rate), rate };
      if (match.kind === 'not_found') return { reply: this.errorReply(reject('NOT_FOUND', `No route for ${incoming.method} ${incoming.path}.`)), ...(rate === undefined ? {} : { rate }) };
      return {
        reply: this.errorReply(reject('METHOD_NOT_ALLOWED', `${incoming.method} is not allowed on ${incoming.path}.`), { Allow: match.allow.join(', ') }),
        ...(rate === undefined ? {} : { rate }),
      };
    }
    const route = match.route;
    incoming.route = route.path;
    const wallMs = Date.now();
    let key: KeyRecord | null = null;
    let rate: RateDecision;
    const write = route.method !== 'GET';
    if (route.auth === 'key') {
      const authenticated = this.authenticate(incoming, write, wallMs);
      if ('reply' in authenticated) return authenticated;
      key = authenticated.key;
      rate = authenticated.rate;
    } else {
      const decided = this.publicRate(route, incoming, match.params, rawBody, wallMs);
      if ('reply' in decided) return decided;
      rate = decided.rate;
    }
    // A public route may still be told who is asking (live keys see live availability); a key that does
    // not authenticate is ignored there, never an error.
    let viewerEnv: 'test' | 'live' | undefined;
    if (route.auth === 'public' && incoming.authorization !== '') {
      const viewer = this.deps.auth.authenticate(incoming.authorization, wallMs);
      if (!('code' in viewer)) viewerEnv = viewer.env;
    }
    if (!rate.allowed) return { reply: this.rateLimited(rate), rate };
    const refused = this.checks.run(route, key, incoming, rawBody, key !== null && key.ipAllow.length > 0 ? this.ipOf(incoming) : '');
    if ('rejection' in refused) return { reply: this.errorReply(refused.rejection), rate };
    const owner = key === null ? 'public:public' : `${key.env}:${key.account}`;
    const ctx: RequestContext = {
      requestId: incoming.requestId,
      method: route.method,
      path: incoming.path,
      params: match.params,
      query: refused.query,
      body: refused.body,
      rawBody,
      key,
      owner,
      nowMs: wallMs + this.deps.clockOf(owner),
      idempotencyKey: incoming.idempotencyKey === '' ? null : incoming.idempotencyKey,
      transactionAuthorization: incoming.transactionAuthorization === '' ? null : incoming.transactionAuthorization,
      authorization: incoming.authorization,
      signature: incoming.signature,
      browser: incoming.browser,
    };
    if (viewerEnv !== undefined) ctx.viewerEnv = viewerEnv;
    if (route.method === 'POST' && key !== null && ctx.idempotencyKey !== null && route.idempotent !== true && route.keyedInShard !== true) {
      // Every POST honours an Idempotency-Key; routes without a shard command keep the result here.
      const fingerprint = FrontIdempotencyStore.fingerprint(route.method, incoming.path, rawBody);
      return this.deps.frontIdempotency.run(`${owner}:${ctx.idempotencyKey}`, fingerprint, async () => route.handle(ctx), key.customerId).then((result) => {
        if (result !== 'replay_mismatch') return { reply: result, rate };
        return { reply: this.errorReply(reject('IDEMPOTENCY_REPLAY', 'This Idempotency-Key was used with a different request; retries must repeat the key and body exactly.')), rate };
      });
    }
    const reply = route.handle(ctx);
    return reply instanceof Promise ? reply.then((done) => ({ reply: done, rate })) : { reply, rate };
  }

  /** A 500 never carries internal text to the client: the detail goes to the log with the request id. */
  private internal(incoming: Incoming, reply: Reply): Reply {
    // DATA_DAMAGED carries a fixed message (no row detail: the shard logged that at fatal) the client must see.
    if (reply.error?.message === INTERNAL_MESSAGE || reply.error?.code === 'DATA_DAMAGED') return reply;
    this.deps.log(`request ${incoming.requestId} ${incoming.method} ${incoming.path} answered 500: ${reply.error?.message ?? reply.json ?? ''}`);
    return this.errorReply(reject('INTERNAL', INTERNAL_MESSAGE));
  }

  private send(res: HttpResponse, incoming: Incoming, reply: Reply, rate: RateDecision | undefined, close_: boolean): void {
    if (incoming.aborted) return;
    const close = close_ || this.draining;
    if (reply.status === 500) reply = this.internal(incoming, reply);
    const body = reply.json ?? JSON.stringify({ error: { code: reply.error?.code ?? 'INTERNAL', message: reply.error?.message ?? '', request_id: incoming.requestId } });
    const ip = this.deps.wantsIp?.() === true ? this.ipOf(incoming) : '';
    res.cork(() => {
      // uWS writes "200 OK" itself when no status was set: one native call fewer on most answers.
      if (reply.status !== 200) res.writeStatus(STATUS_LINE.get(reply.status) ?? `${reply.status} Unknown`);
      // The headers every answer carries, in one call into uWS (which writes name, ": ", value and CRLF
      // as given): each call costs a crossing and two string conversions. Only kobo's own values are
      // joined here (a content type from a route, the request id, two numbers), never a client's text.
      const contentType = reply.headers?.['Content-Type'] ?? 'application/json';
      res.writeHeader('Content-Type', rate === undefined
        ? `${contentType}\r\nX-Request-Id: ${incoming.requestId}`
        : `${contentType}\r\nX-Request-Id: ${incoming.requestId}\r\nX-RateLimit-Remaining: ${rate.remaining}\r\nX-RateLimit-Reset: ${rate.resetSeconds}`);
      if (reply.headers !== undefined) {
        for (const [name, value] of Object.entries(reply.headers)) if (name !== 'Content-Type') res.writeHeader(name, value);
      }
      // Cluster mode, per-shard ownership: a command whose shard is moving to another node.
      if (reply.status === 503 && reply.error?.message === SHARD_MOVING_MESSAGE) res.writeHeader('Retry-After', '1');
      // Bytes, not the string: uWS copies bytes as they are, where a string would be measured and encoded
      // again into a buffer of its own (a malloc). A kept body was encoded once, when it was made.
      const bytes = reply.bytes ?? Buffer.from(body);
      if (close) res.end(bytes, true);
      else if (!writeBodyBounded(res, bytes, this.deps.responseBufferedBytesMax)) {
        this.deps.log(`request ${incoming.requestId}: the client is not reading its reply; closing the connection`);
      }
    });
    incoming.aborted = true; // the response is finished: uWS forbids touching it again
    this.settle(incoming);
    this.deps.onResponse?.({
      requestId: incoming.requestId,
      method: incoming.method,
      route: incoming.route,
      path: incoming.path,
      status: reply.status,
      durationMs: performance.now() - incoming.startedMs,
      ip,
      keyId: incoming.key?.id ?? null,
      account: incoming.key?.account ?? null,
    });
  }
}

export type { HttpMethod };
