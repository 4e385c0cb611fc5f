// Replies whose text has multi-byte UTF-8 characters leave the server byte for byte, with a Content-Length
// that counts bytes, not characters (src/http/write-body.ts encodes each body once). Real server, raw TCP
// client, so the framing is read as sent. The path of a reply that waits for a client that stopped reading
// is covered by the slow-reader test (hostile.test.ts).
import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { client, idem, secretKey, startServer, uniqueEmail, uniquePhone, type TestServer } from '../helpers/server.ts';

const key = secretKey();
let server: TestServer;
let api: ReturnType<typeof client>;
let customerId = '';
/** Letters outside ASCII: é, ë and ñ are 2 bytes in UTF-8, ọ and ṣ 3 (and U+0300 on ọ̀ another 2). */
const NAMES = ['Adéọlá Babátúndé', 'Ọláṣùpọ̀ Ìbídùn', 'Zoë Ñúñez'];
const CUSTOMERS = 100;

before(async () => {
  server = await startServer({ keys: [`${key}@bytes`], shards: 1, env: { KOBO_RATE_LIMIT_READ_PER_MIN: '100000', KOBO_RATE_LIMIT_WRITE_PER_MIN: '100000' } });
  api = client(server.baseUrl, key);
  for (let i = 0; i < CUSTOMERS; i += 1) {
    const created = await api('POST', '/v1/customers', { idempotencyKey: idem('bytes'), body: { name: NAMES[i % NAMES.length], email: uniqueEmail(), phone: uniquePhone(), country_code: 'NG' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    customerId = created.body.data.id as string;
  }
});
after(async () => server.stop());

interface RawReply {
  status: number;
  contentLength: number;
  body: Buffer;
}

/**
 * The complete HTTP/1.1 replies at the start of what a socket received, framed by Content-Length (the
 * server sends no chunked replies); a reply still arriving at the end is left out.
 */
function splitReplies(received: Buffer): RawReply[] {
  const replies: RawReply[] = [];
  let at = 0;
  for (;;) {
    const headEnd = received.indexOf('\r\n\r\n', at);
    if (headEnd < 0) return replies;
    const head = received.subarray(at, headEnd).toString('latin1');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1]);
    assert.ok(Number.isInteger(length), `no Content-Length in ${head}`);
    if (headEnd + 4 + length > received.length) return replies;
    replies.push({ status, contentLength: length, body: received.subarray(headEnd + 4, headEnd + 4 + length) });
    at = headEnd + 4 + length;
  }
}

/**
 * GETs each path in turn on one keep-alive connection, each request sent once the previous reply is in
 * whole: a Content-Length counting characters would cut a reply short and misframe the one after it.
 */
async function inTurn(paths: readonly string[]): Promise<RawReply[]> {
  const socket = net.connect(server.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
  });
  try {
    for (const [i, path] of paths.entries()) {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      const deadline = Date.now() + 10_000;
      while (splitReplies(received).length <= i && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // Anything past the last reply would be a misframed remainder.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const replies = splitReplies(received);
    const framed = replies.reduce((n, r) => n + r.body.length, 0);
    assert.ok(received.length > framed, 'heads were received');
    const last = replies.at(-1);
    assert.ok(last !== undefined && received.subarray(received.length - last.body.length).equals(last.body), 'nothing follows the last reply');
    return replies;
  } finally {
    socket.destroy();
  }
}

it('multi-byte replies: Content-Length counts bytes, each reply on a connection is framed whole, names come back as sent', async () => {
  const paths = [`/v1/customers?limit=3`, `/v1/customers?limit=${CUSTOMERS}`, `/v1/customers?limit=7`];
  const replies = await inTurn(paths);
  assert.equal(replies.length, paths.length);
  for (const [i, reply] of replies.entries()) {
    assert.equal(reply.status, 200);
    const text = reply.body.toString('utf8');
    assert.ok(Buffer.byteLength(text) > text.length, 'the page has multi-byte characters');
    const names = (JSON.parse(text) as { data: Array<{ name: string }> }).data.map((c) => c.name);
    assert.equal(names.length, [3, CUSTOMERS, 7][i]);
    for (const name of names) assert.ok(NAMES.includes(name), name);
  }
});

it('a kept body (the memoised catalogue) is framed whole each time it is sent on one connection, between bodies encoded per answer', async () => {
  const catalogue = `/v1/services?country=NG&customer_id=${customerId}`;
  const paths = [catalogue, catalogue, '/v1/customers?limit=5', catalogue];
  const replies = await inTurn(paths);
  assert.equal(replies.length, paths.length);
  for (const reply of replies) {
    assert.equal(reply.status, 200, reply.body.toString('utf8'));
    assert.equal(reply.contentLength, reply.body.length);
  }
  const items = (JSON.parse(replies[0]!.body.toString('utf8')) as { data: { country_code: string; items: unknown[] } }).data.items;
  assert.ok(items.length > 0);
  assert.ok(replies[0]!.body.equals(replies[1]!.body) && replies[0]!.body.equals(replies[3]!.body), 'the same body each time');
  assert.equal((JSON.parse(replies[2]!.body.toString('utf8')) as { data: unknown[] }).data.length, 5);
});
