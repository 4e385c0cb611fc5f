// The cluster fronts' hold over real HTTP: while the route says 'hold' (the owner's lease lapsed but may
// come back) requests wait, up to a count; they go on once the route names a server, or get the move's
// 503 once it says nobody serves. No NATS needed: the route is the test's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFronts, type Route } from '../../src/cluster/proxy.ts';

const SECRET = 'test-cluster-secret-0123456789';

/** An upstream kobo stand-in: answers every request 200 with its path. */
async function upstream(): Promise<{ url: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    const body = JSON.stringify({ path: req.url });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** Resolves with the answer, or 'pending' if none came within `ms`. */
async function within<T>(answer: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([answer, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), ms))]);
}

test('cluster fronts: the route holds → requests wait (two at most here; the third gets 503 UNAVAILABLE with Retry-After at once), go on to the server once it is named, and get the move\'s 503 once nobody serves', { timeout: 30_000 }, async () => {
  const server = await upstream();
  let route: Route = 'hold';
  const fronts = await startFronts({ host: '127.0.0.1', port: 0, internalHost: '127.0.0.1', internalPort: 0, secret: SECRET, publicRoute: () => route, localRoute: () => route, heldRequestsMax: 2 });
  const base = `http://127.0.0.1:${fronts.publicPort}`;
  try {
    const first = fetch(`${base}/v1/one`);
    const second = fetch(`http://127.0.0.1:${fronts.internalPort}/v1/two`, { headers: { 'x-kobo-cluster-token': SECRET } });
    assert.equal(await within(first, 300), 'pending', 'a held request is not answered');
    const third = await fetch(`${base}/v1/three`);
    assert.equal(third.status, 503);
    assert.equal(third.headers.get('retry-after'), '1');
    assert.equal(((await third.json()) as { error: { code: string } }).error.code, 'UNAVAILABLE');
    assert.equal(await within(second, 100), 'pending');
    route = { url: server.url };
    fronts.wake();
    const answers = await Promise.all([first, second]);
    assert.deepEqual(answers.map((r) => r.status), [200, 200]);
    assert.deepEqual(await Promise.all(answers.map((r) => r.json())), [{ path: '/v1/one' }, { path: '/v1/two' }]);

    route = 'hold';
    const fourth = fetch(`${base}/v1/four`);
    assert.equal(await within(fourth, 300), 'pending');
    route = null;
    // No wake: the held request asks again by itself.
    const moved = await fourth;
    assert.equal(moved.status, 503);
    assert.equal(((await moved.json()) as { error: { code: string } }).error.code, 'UNAVAILABLE');
  } finally {
    fronts.stopAccepting();
    fronts.close();
    server.close();
  }
});
