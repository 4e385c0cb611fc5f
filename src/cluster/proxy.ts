// The HTTP fronts of a cluster node: the public listener forwards every request to the node that owns
// the shards (its own server, or another node's internal listener, with the shared secret); the
// internal listener accepts only authenticated forwards and serves them only while this node owns.
// While the owner's lease has lapsed and may come back, requests wait here (the route says 'hold').
// Main thread of the node supervisor. Invariant: a forwarded request is never forwarded again.
import http from 'node:http';
import { randomBytes, timingSafeEqual } from 'node:crypto';

export const FORWARD_TOKEN_HEADER = 'x-kobo-cluster-token';
/** What a client is told to wait during a move of ownership. */
const RETRY_AFTER_SECONDS = 1;
/** A forwarded request that has no answer in this long is cut (the owner may have died). */
const FORWARD_TIMEOUT_MS = 30_000;

/** Where a request goes: a server, nowhere (503: a move), or 'hold' (ask again shortly). */
export type Route = { url: string; token?: string } | null | 'hold';

/** How often held requests ask for their route again (besides each `wake`). */
const HOLD_RECHECK_MS = 50;
/** Requests held at once at most; past it a request gets the move's 503 at once. */
const HELD_REQUESTS_MAX = 10_000;

let requestSeq = 0;
const bootId = randomBytes(4).toString('hex');

function unavailable(res: http.ServerResponse, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ error: { code: 'UNAVAILABLE', message, request_id: `req_c${bootId}${(requestSeq++).toString(36)}` } });
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': String(RETRY_AFTER_SECONDS), 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** Forwards on kept-alive connections (the owner's server or another node's internal listener). */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

function forward(req: http.IncomingMessage, res: http.ServerResponse, route: Exclude<Route, 'hold'>): void {
  if (route === null) {
    unavailable(res, 'The shard is moving to another node; retry shortly.');
    return;
  }
  const target = new URL(req.url ?? '/', route.url);
  const headers = { ...req.headers };
  delete headers[FORWARD_TOKEN_HEADER];
  if (route.token !== undefined) headers[FORWARD_TOKEN_HEADER] = route.token;
  // The body is read first (the server bounds its size), so a send on a kept-alive socket the other
  // side had just closed can be made again: that request never reached it.
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.once('error', () => res.destroy());
  req.once('end', () => {
    const body = Buffer.concat(chunks);
    const send = (attempt: number): void => {
      const upstream = http.request(target, { method: req.method, headers, agent, timeout: FORWARD_TIMEOUT_MS }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.once('error', () => res.destroy());
      });
      upstream.once('timeout', () => upstream.destroy(new Error('forward timed out')));
      upstream.once('error', (error: NodeJS.ErrnoException) => {
        if (attempt === 1 && upstream.reusedSocket && error.code === 'ECONNRESET') {
          send(2);
          return;
        }
        // The owner went away mid-request: whether it committed is unknown here, so no 2xx is invented.
        unavailable(res, 'The owner of the shard did not answer; retry shortly (with the same Idempotency-Key).');
      });
      upstream.end(body);
    };
    send(1);
  });
}

function tokenMatches(given: string | string[] | undefined, secret: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface Fronts {
  publicPort: number;
  internalPort: number;
  /** Stops accepting connections; requests under way go on. */
  stopAccepting: () => void;
  /** Cuts whatever connection is left. */
  close: () => void;
  /** The routes may have changed (the lease holds again, or is lost): held requests ask again now. */
  wake: () => void;
}

/**
 * `publicRoute`: where a client's request goes now; `localRoute`: this node's own server while it owns
 * (null otherwise).
 */
export async function startFronts(options: { host: string; port: number; internalHost: string; internalPort: number; secret: string; publicRoute: () => Route; localRoute: () => Route; heldRequestsMax?: number }): Promise<Fronts> {
  const heldMax = options.heldRequestsMax ?? HELD_REQUESTS_MAX;
  const open = new Set<import('node:net').Socket>();
  /** Requests waiting for a route, each asking again when called; the recheck timer runs while any wait. */
  const held = new Set<() => void>();
  let recheck: NodeJS.Timeout | null = null;
  const wake = (): void => {
    for (const again of [...held]) again();
    if (held.size === 0 && recheck !== null) {
      clearInterval(recheck);
      recheck = null;
    }
  };
  /** Forwards along `route()`, holding the request while it says 'hold' (the owner bounds how long). */
  const dispatch = (req: http.IncomingMessage, res: http.ServerResponse, route: () => Route): void => {
    const now = route();
    if (now !== 'hold' || held.size >= heldMax) {
      forward(req, res, now === 'hold' ? null : now);
      return;
    }
    const again = (): void => {
      const next = route();
      if (next === 'hold') return;
      held.delete(again);
      if (!res.destroyed) forward(req, res, next);
    };
    held.add(again);
    res.once('close', () => held.delete(again));
    recheck ??= setInterval(wake, HOLD_RECHECK_MS);
  };
  const track = (server: http.Server): void => {
    server.on('connection', (socket) => {
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    });
  };
  const publicServer = http.createServer((req, res) => dispatch(req, res, options.publicRoute));
  const internalServer = http.createServer((req, res) => {
    if (!tokenMatches(req.headers[FORWARD_TOKEN_HEADER], options.secret)) {
      const body = JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'Forwarded requests need the cluster secret.', request_id: `req_c${bootId}${(requestSeq++).toString(36)}` } });
      res.writeHead(401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    dispatch(req, res, options.localRoute);
  });
  track(publicServer);
  track(internalServer);
  const listen = (server: http.Server, host: string, port: number): Promise<number> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port }, () => resolve((server.address() as import('node:net').AddressInfo).port));
    });
  const publicPort = await listen(publicServer, options.host, options.port);
  const internalPort = await listen(internalServer, options.internalHost, options.internalPort);
  return {
    publicPort,
    internalPort,
    stopAccepting: () => {
      publicServer.close();
      internalServer.close();
    },
    close: () => {
      if (recheck !== null) clearInterval(recheck);
      held.clear();
      for (const socket of open) socket.destroy();
    },
    wake,
  };
}
