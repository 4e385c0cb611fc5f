// The HTTP baseline: a bare uWebSockets.js server (the same native addon kobo loads) with one route.
// Spawned by bench/http.bench.ts in its own process; GET answers a small JSON body, POST reads the
// whole body first and then answers. Prints "listening on http://127.0.0.1:PORT" once ready.
import { uws } from '../src/http/uws.ts';

const GET_BODY = '{"data":{"object":"ping","ok":true}}';
const POST_BODY = '{"data":{"object":"ping","received":true}}';
const BODY_BYTES_MAX = 64 * 1024;

const app = uws.App();
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
