// Writing a reply's body to a client that may not be reading it. Main thread (uWS callbacks).
// Invariant: at most one reply per connection waits in memory, and never more than the bound.
import type { HttpResponse } from './uws.ts';

/**
 * The UTF-8 bytes of a body a route keeps and answers many times (`Reply.bytes`). They get a buffer of
 * their own: a slice of Node's shared pool would pin the whole 8 KiB slab for as long as the body is kept.
 */
export function keptBytes(json: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(json));
  bytes.write(json);
  return bytes;
}

/**
 * Ends `res` with the encoded body `bytes` without letting a client that does not read make the server buffer for it:
 * `end()` would complete the response and let uWS parse the next pipelined request, piling up replies
 * nobody reads. `tryEnd` leaves a response that does not fit pending, and uWS reads no further request
 * on that connection until it drains, so at most one reply per connection waits here. When more than
 * `bufferedBytesMax` would have to wait, the connection is closed and this returns false.
 */
export function writeBodyBounded(res: HttpResponse, bytes: Buffer, bufferedBytesMax: number): boolean {
  const totalBytes = bytes.length;
  const startOffset = res.getWriteOffset();
  const [ok, done] = res.tryEnd(bytes, totalBytes);
  if (ok || done) return true;
  if (totalBytes - (res.getWriteOffset() - startOffset) > bufferedBytesMax) {
    res.close();
    return false;
  }
  let gone = false;
  res.onAborted(() => {
    gone = true;
  });
  res.onWritable((offset) => {
    if (gone) return true;
    const [sent, finished] = res.tryEnd(bytes.subarray(offset - startOffset), totalBytes);
    return sent || finished;
  });
  return true;
}
