// The HTTP baseline: a bare uWebSockets.js server (the same native addon kobo loads) with one route.
// Spawned by bench/http.bench.ts in its own process; GET answers a small JSON body (`/bytes/N`: N bytes
// with kobo's catalogue headers), POST reads the whole body first and then answers. Prints "listening on http://127.0.0.1:PORT" once ready.
import { uws } from '../src/http/uws.ts';

const GET_BODY = '{"data":{"object":"ping","ok":true}}';
const POST_BODY = '{"data":{"object":"ping","received":true}}';
const BODY_BYTES_MAX = 64 * 1024;

/** Bodies of `/bytes/N`, by size: what kobo's catalogue reply weighs, without kobo's work behind it. */
const sized = new Map<number, string>();
const SIZED_BYTES_MAX = 1024 * 1024;
let sizedSeq = 0;

function sizedBody(bytes: number): string {
  let body = sized.get(bytes);
  if (body === undefined) {
    const frame = '{"data":{"padding":""}}';
    body = `{"data":{"padding":"${'x'.repeat(Math.max(0, bytes - frame.length))}"}}`;
    sized.set(bytes, body);
  }
  return body;
}

const app = uws.App();
// The same status line and headers kobo's catalogue answers with (request id, rate-limit pair, caching),
// and a body of N bytes.
app.get('/bytes/:n', (res, req) => {
  const bytes = Number(req.getParameter(0));
  const body = Number.isSafeInteger(bytes) && bytes >= 0 && bytes <= SIZED_BYTES_MAX ? sizedBody(bytes) : GET_BODY;
  sizedSeq += 1;
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').writeHeader('X-Request-Id', `req_0000000000000000${sizedSeq.toString(36).padStart(8, '0')}`)
      .writeHeader('X-RateLimit-Remaining', '999999999').writeHeader('X-RateLimit-Reset', '42').writeHeader('Cache-Control', 'private, max-age=120').end(body);
  });
});
app.get('/*', (res) => {
  res.cork(() => {
    res.writeStatus('200 OK').writeHeader('Content-Type', 'application/json').end(GET_BODY);
  });
});
app.post('/*', (res) => {
  let aborted = false;
  let received = 0;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((chunk, isLast) => {
    received += chunk.byteLength;
    if (received > BODY_BYTES_MAX) {
      aborted = true;
      res.close();
      return;
    }
    if (!isLast || aborted) return;
    res.cork(() => {
      res.writeStatus('201 Created').writeHeader('Content-Type', 'application/json').end(POST_BODY);
    });
  });
});

app.listen('127.0.0.1', 0, (socket) => {
  if (socket === false) {
    process.stderr.write('bare-uws: cannot listen\n');
    process.exit(1);
  }
  process.stdout.write(`listening on http://127.0.0.1:${uws.us_socket_local_port(socket)}\n`);
});
process.on('SIGTERM', () => process.exit(0));
