// The link between a front and a shard host, at its first frame: before the peer has shown the cluster
// secret, a listener accepts one small hello and nothing else, and a bad first frame ends the link (it
// never throws in the host). Real TCP sockets on 127.0.0.1.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { serialize } from 'node:v8';
import { acceptedHello, HELLO_BYTES_MAX, readFrames, writeFrame } from '../../src/cluster/shard-link.ts';

const SECRET = 'cluster-secret-for-the-test';

/** A listener reading frames as a shard host does; resolves with what it delivered and why it stopped. */
async function listen(send: (socket: net.Socket) => void): Promise<{ delivered: unknown[]; refused: string | null }> {
  const delivered: unknown[] = [];
  let refused: string | null = null;
  const server = net.createServer((socket) => {
    socket.once('error', () => {});
    readFrames(socket, (message) => {
      delivered.push(message);
      if (acceptedHello(message, 3, SECRET, 0) === null) socket.destroy();
    }, (why) => {
      refused = why;
      socket.destroy();
    }, HELLO_BYTES_MAX);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const client = net.connect(port, '127.0.0.1');
  client.once('error', () => {});
  await new Promise<void>((resolve) => client.once('connect', resolve));
  send(client);
  await new Promise((resolve) => setTimeout(resolve, 200));
  client.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return { delivered, refused };
}

function frame(message: unknown): Buffer {
  const body = serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

describe('shard link: the first frame', () => {
  it('acceptedHello: null, numbers, arrays, a wrong secret, another shard, an older front → refused; the right hello → accepted', () => {
    for (const message of [null, undefined, 7, 'hello', [], {}, { type: 'hello', shard: 3, token: 'nope', epoch: 1 }, { type: 'hello', shard: 4, token: SECRET, epoch: 1 }, { type: 'hello', shard: 3, token: SECRET, epoch: -1 }, { type: 'hello', shard: 3, token: SECRET, epoch: Number.NaN }, { type: 'hello', shard: 3, token: 42, epoch: 1 }]) {
      assert.equal(acceptedHello(message, 3, SECRET, 0), null, JSON.stringify(message) ?? String(message));
    }
    assert.deepEqual(acceptedHello({ type: 'hello', shard: 3, token: SECRET, epoch: 2 }, 3, SECRET, 2), { type: 'hello', shard: 3, token: SECRET, epoch: 2 });
  });

  it(`a first frame over ${HELLO_BYTES_MAX} bytes → refused unread, before any secret is shown`, async () => {
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32BE(HELLO_BYTES_MAX + 1, 0);
    const result = await listen((socket) => socket.write(head));
    assert.deepEqual(result.delivered, []);
    assert.match(result.refused ?? '', /a frame of 4097 bytes/);
  });

  it('a null first frame followed by a valid hello in the same write → the link ends at the null; the hello is never read', async () => {
    const result = await listen((socket) => socket.write(Buffer.concat([frame(null), frame({ type: 'hello', shard: 3, token: SECRET, epoch: 1 })])));
    assert.deepEqual(result.delivered, [null]);
  });

  it('a valid hello, then a large frame → both delivered (only the first frame is bounded by the hello size)', async () => {
    const big = { type: 'ping', pad: 'x'.repeat(HELLO_BYTES_MAX * 4) };
    const result = await listen((socket) => {
      writeFrame(socket, { type: 'hello', shard: 3, token: SECRET, epoch: 1 });
      writeFrame(socket, big);
    });
    assert.equal(result.refused, null);
    assert.equal(result.delivered.length, 2);
  });
});
