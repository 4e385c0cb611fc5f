// A real webhook receiver on 127.0.0.1 (node:http) whose answer each test controls.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  atMs: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** status to answer, delay before answering, and a Location for redirects */
  behave: (b: { status?: number; delayMs?: number; location?: string }) => void;
  waitFor: (count: number, timeoutMs?: number) => Promise<Received[]>;
  close: () => Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  const received: Received[] = [];
  let behaviour: { status: number; delayMs: number; location?: string } = { status: 200, delayMs: 0 };
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, raw, body: raw === '' ? null : JSON.parse(raw), atMs: Date.now() });
      const { status, delayMs, location } = behaviour;
      setTimeout(() => {
        if (res.destroyed) return;
        res.writeHead(status, location === undefined ? {} : { location });
        res.end(status === 204 ? undefined : 'ok');
      }, delayMs);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    behave: (b) => {
      behaviour = { status: b.status ?? 200, delayMs: b.delayMs ?? 0, ...(b.location === undefined ? {} : { location: b.location }) };
    },
    waitFor: async (count, timeoutMs = 5_000) => {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
      return received;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
