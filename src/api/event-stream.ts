// GET /v1/events/stream, a WebSocket served by uWS itself: the account's events as they become durable,
// each as its webhook body (what `kobo listen` forwards). With `?after=<id or ULID time prefix>` the
// events after that point are sent first, from the list index. Main thread.
// Invariant: a socket receives only its key's owner's events (its customer's, for a customer key), and a
// receiver that stops reading is closed (past `STREAM_BUFFERED_BYTES_MAX`) rather than buffered without end.
import { STATUS_CODES } from 'node:http';
import { uws, type HttpResponse, type WebSocket } from '../http/uws.ts';
import type { HttpServer } from '../http/server.ts';
import type { ShardPool } from '../shard/pool.ts';
import type { OutboxEvent } from '../shard/state.ts';
import { eventBody } from '../shard/list-notes.ts';

export const STREAM_PATH = '/v1/events/stream';
/** Sockets open at once, over all accounts. */
export const STREAM_SOCKETS_MAX = 1_000;
/** Bytes a socket may have waiting to be sent; past it the socket is closed (its client resumes). */
export const STREAM_BUFFERED_BYTES_MAX = 4 * 1024 * 1024;
/** Events sent from the index on connect (`after`); a client further behind reads GET /v1/events. */
export const STREAM_BACKLOG_EVENTS_MAX = 10_000;
const BACKLOG_PAGE_ROWS = 100;
const AFTER_PATTERN = /^[0-7][0-9A-HJKMNP-TV-Z]{9}([0-9A-HJKMNP-TV-Z]{16})?$/;

interface Listener {
  owner: string;
  customerScope: string | null;
  after: string | null;
  open: boolean;
}

export class EventStream {
  private readonly sockets = new Set<WebSocket<Listener>>();

  constructor(private readonly pool: ShardPool) {}

  /** Serves the route on `server` (before it listens). */
  attach(server: HttpServer): void {
    server.webSocket<Listener>(STREAM_PATH, {
      maxPayloadLength: 1024,
      idleTimeout: 60,
      sendPingsAutomatically: true,
      compression: uws.DISABLED,
      maxBackpressure: STREAM_BUFFERED_BYTES_MAX,
      closeOnBackpressureLimit: 1,
      upgrade: (res, req, context) => {
        const key = server.upgradeKey(res, req, 'events');
        const after = req.getQuery('after') ?? '';
        const wsKey = req.getHeader('sec-websocket-key');
        const protocol = req.getHeader('sec-websocket-protocol');
        const extensions = req.getHeader('sec-websocket-extensions');
        if ('rejection' in key) return refuse(res, key.status, key.rejection.code, key.rejection.message);
        if (after !== '' && !AFTER_PATTERN.test(after)) return refuse(res, 400, 'VALIDATION', 'after must be an event id or the 10-character time part of one.');
        if (this.sockets.size >= STREAM_SOCKETS_MAX) return refuse(res, 503, 'UNAVAILABLE', 'Too many event streams are open; retry shortly.');
        const listener: Listener = { owner: `${key.env}:${key.account}`, customerScope: key.customerId, after: after === '' ? null : after, open: true };
        res.cork(() => res.upgrade(listener, wsKey, protocol, extensions, context));
      },
      open: (ws) => {
        this.sockets.add(ws);
        const listener = ws.getUserData();
        if (listener.after !== null) void this.backlog(ws, listener, listener.after);
      },
      close: (ws) => {
        ws.getUserData().open = false;
        this.sockets.delete(ws);
      },
    });
  }

  /** Events now durable in a shard (the outbox hand-over): sent to every socket that may see them. */
  publish(events: readonly OutboxEvent[]): void {
    if (this.sockets.size === 0) return;
    for (const event of events) {
      let body: string | null = null;
      for (const ws of this.sockets) {
        const listener = ws.getUserData();
        if (listener.owner !== event.owner) continue;
        if (listener.customerScope !== null && event.data.customer_id !== listener.customerScope) continue;
        body ??= eventBody(event);
        ws.send(body, false);
      }
    }
  }

  /** Sends the events after `after`, oldest first, from the list index (live ones may arrive meanwhile: clients dedupe by id). */
  private async backlog(ws: WebSocket<Listener>, listener: Listener, after: string): Promise<void> {
    let idAbove = after;
    for (let sent = 0; sent < STREAM_BACKLOG_EVENTS_MAX; ) {
      const answers = await this.pool.list({ what: 'rows', nowMs: 0, customerScope: listener.customerScope, q: { owner: listener.owner, kind: 'event', customerId: listener.customerScope, status: null, idAbove, idBelow: '~', order: 'asc', rows: BACKLOG_PAGE_ROWS } });
      const rows = answers.flatMap((a) => a.rows).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).slice(0, BACKLOG_PAGE_ROWS);
      if (!listener.open) return;
      for (const row of rows) ws.send(row.json, false);
      sent += rows.length;
      if (rows.length < BACKLOG_PAGE_ROWS) return;
      idAbove = rows.at(-1)!.key;
    }
  }

  /** Closes every socket (the server is stopping): clients reconnect and resume. */
  closeAll(): void {
    for (const ws of this.sockets) ws.end(1001, 'server stopping');
    this.sockets.clear();
  }
}

function refuse(res: HttpResponse, status: number, code: string, message: string): void {
  res.cork(() => {
    res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`).writeHeader('content-type', 'application/json').end(JSON.stringify({ error: { code, message, request_id: '' } }));
  });
}
