// The front end's answer to a route, over real HTTP on a real uWS server: a route may answer
// synchronously (sent inside uWS's callback) or with a promise, and a fault of either kind, thrown or
// rejected, becomes one 500 INTERNAL in the envelope whose request_id is the X-Request-Id, with the
// detail in the log and none of it on the wire. The server keeps answering afterwards.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { HttpServer } from '../../src/http/server.ts';
import { Router } from '../../src/http/router.ts';
import { Authenticator } from '../../src/http/auth.ts';
import { RateLimiter } from '../../src/http/rate-limit.ts';
import { FrontIdempotencyStore } from '../../src/http/idempotency-store.ts';
import { ControlStore } from '../../src/store/control-store.ts';
import { openDatabase } from '../../src/store/shard-store.ts';
import type { Reply, RouteDef } from '../../src/http/types.ts';
import { tempDataDir } from '../helpers/server.ts';

const SECRET_TEXT = 'disk on fire at /var/secret';
const logged: string[] = [];
let server: HttpServer;
let base = '';

const route = (routePath: string, handle: RouteDef['handle']): RouteDef => ({ method: 'GET', path: routePath, summary: routePath, auth: 'public', family: 'test', handle });
const okReply = (tag: string): Reply => ({ status: 200, json: JSON.stringify({ data: { tag } }) });

before(async () => {
  const dir = tempDataDir('kobo-route-faults');
  const router = new Router();
  router.add([
    route('/sync-ok', () => okReply('sync')),
    route('/async-ok', async () => okReply('async')),
    route('/sync-created', () => ({ status: 201, json: '{"data":{}}' })),
    route('/sync-throws', () => {
      throw new Error(SECRET_TEXT);
    }),
    route('/async-rejects', async () => {
      throw new Error(SECRET_TEXT);
    }),
  ]);
  server = new HttpServer({
    router,
    auth: new Authenticator(new ControlStore(dir)),
    rateLimiter: new RateLimiter({ readPerMin: 1_000, writePerMin: 1_000 }),
    bodyBytesMax: 1_024,
    responseBufferedBytesMax: 1 << 20,
    jsonPolicy: { depthMax: 16, membersMax: 64 },
    frontIdempotency: new FrontIdempotencyStore(openDatabase(path.join(dir, 'front.db')), 3_600_000),
    clockOf: () => 0,
    log: (message, fields) => logged.push(`${message} ${(fields?.err as Error | undefined)?.stack ?? ''}`),
  });
  base = `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`;
});

after(() => server?.close());

it('route answering synchronously or with a promise → the same 200 body, status line and headers', async () => {
  for (const [routePath, tag] of [['/sync-ok', 'sync'], ['/async-ok', 'async']] as const) {
    const res = await fetch(`${base}${routePath}`);
    assert.equal(res.status, 200);
    assert.equal(res.statusText, 'OK');
    assert.match(res.headers.get('x-request-id') ?? '', /^req_/);
    assert.ok(res.headers.get('x-ratelimit-remaining') !== null, 'rate headers on a synchronous answer too');
    assert.deepEqual(await res.json(), { data: { tag } });
  }
  const created = await fetch(`${base}/sync-created`);
  assert.equal(created.status, 201);
  assert.equal(created.statusText, 'Created');
});

it('route throwing synchronously or rejecting → 500 INTERNAL, request_id = X-Request-Id, detail only in the log', async () => {
  for (const routePath of ['/sync-throws', '/async-rejects']) {
    const before = logged.length;
    const res = await fetch(`${base}${routePath}`);
    const text = await res.text();
    assert.equal(res.status, 500);
    const body = JSON.parse(text) as { error: { code: string; request_id: string } };
    assert.equal(body.error.code, 'INTERNAL');
    assert.equal(body.error.request_id, res.headers.get('x-request-id'));
    assert.ok(!text.includes(SECRET_TEXT), 'no internal text on the wire');
    const lines = logged.slice(before);
    assert.ok(lines.some((line) => line.includes(body.error.request_id) && line.includes(SECRET_TEXT)), `the fault is logged with its request id: ${lines.join(' | ')}`);
  }
  // Both kinds of fault left the server answering.
  assert.equal((await fetch(`${base}/sync-ok`)).status, 200);
  assert.equal(server.pending, 0, 'every request settled');
});
