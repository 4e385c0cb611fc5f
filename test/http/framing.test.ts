// Request framing over a raw socket: Content-Length headers that disagree, or a transfer coding other
// than chunked, close the connection at once, so what follows on it is never run as a request of its
// own (the request-smuggling pattern behind a proxy); the server goes on serving everyone else.
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { until } from '../helpers/wait.ts';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let walletId = '';

before(async () => {
  server = await startServer({ keys: [`${key}@framing`], shards: 1 });
  const api = client(server.baseUrl, key);
  const c = await api('POST', '/v1/customers', { idempotencyKey: idem(), body: { name: 'Frame', email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
  assert.equal(c.status, 201, JSON.stringify(c.body));
  walletId = c.body.data.wallets[0].id;
});
after(async () => server.stop());

/** Writes raw bytes, then collects everything the server sends until it closes (or 3 s pass). */
function exchange(raw: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(raw));
    let got = '';
    const timer = setTimeout(() => socket.destroy(), 3_000);
    socket.on('data', (chunk) => (got += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(got);
    });
  });
}

const smuggled = (): string => `GET /v1/wallets/${walletId} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`;

it('two Content-Length headers that disagree → the connection is closed unanswered; the request hidden behind them never runs', async () => {
  const inner = smuggled();
  const raw = `POST /v1/test_helpers/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n`
    + `Content-Length: 2\r\nContent-Length: ${2 + inner.length}\r\n\r\n{}${inner}`;
  const got = await exchange(Buffer.from(raw));
  assert.equal(got, '', 'closed without answering either request');
  await until(async () => server.output(), (out) => /Content-Length headers disagree/.test(out), 'the refusal is logged');
  assert.equal((await client(server.baseUrl, key)('GET', `/v1/wallets/${walletId}`)).status, 200, 'still serving');
});

it('Transfer-Encoding other than chunked (gzip, chunked) → closed unanswered; plain chunked still works; equal duplicate lengths are fine', async () => {
  const body = '{"seconds":1}';
  const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
  const head = (coding: string) => `POST /v1/test_helpers/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n`;
  const gz = await exchange(Buffer.from(head('gzip, chunked') + chunked + smuggled()));
  assert.equal(gz, '', gz);
  await until(async () => server.output(), (out) => /Transfer-Encoding gzip, chunked is not supported/.test(out), 'the refusal is logged');
  const twice = await exchange(Buffer.from(head('chunked').replace('Transfer-Encoding: chunked\r\n', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n') + chunked + smuggled()));
  assert.equal(twice, '', twice);
  await until(async () => server.output(), (out) => /More than one Transfer-Encoding header/.test(out), 'the refusal is logged');
  const plain = await exchange(Buffer.from(head('chunked') + chunked));
  assert.match(plain, /^HTTP\/1\.1 200/, plain);
  const same = await exchange(Buffer.from(`POST /v1/test_helpers/clock/advance HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`));
  assert.match(same, /^HTTP\/1\.1 200/, same);
});
