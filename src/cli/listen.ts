// `kobo listen --forward-to URL`: streams the account's events from a running server (the WebSocket
// GET /v1/events/stream) and forwards each to a local URL, signed as a webhook is, with a secret it
// prints. Runs as its own process. On a lost connection it reconnects and resumes a little before the
// last event it saw; events already forwarded are skipped by id.
// Invariant: each event id is forwarded at most once per run (and every event the stream sends, once).
import { randomBytes } from 'node:crypto';
import { decodeTime, encodeTime } from 'ulid';
import WebSocket from 'ws';
import { signature, SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../webhooks/verify-webhook.ts';

/** How far before the newest event seen a resumed stream starts: events of other shards may arrive late. */
export const LISTEN_RESUME_WINDOW_MS = 60_000;
/** Ids remembered to skip events already forwarded (the oldest are forgotten first). */
export const LISTEN_SEEN_IDS_MAX = 100_000;
/** Attempts to forward one event before it is reported as not delivered. */
const FORWARD_ATTEMPTS_MAX = 5;
const RECONNECT_DELAY_MS_MAX = 5_000;
const FORWARD_TIMEOUT_MS = 10_000;

export interface ListenOptions {
  apiUrl: string;
  key: string;
  forwardTo: string;
  secret?: string;
  log: (line: string) => void;
}

export interface Listening {
  secret: string;
  stop: () => void;
}

export function listen(options: ListenOptions): Listening {
  const secret = options.secret ?? `whsec_${randomBytes(24).toString('hex')}`;
  const seen = new Set<string>();
  let newest: string | null = null;
  let stopped = false;
  let socket: WebSocket | null = null;
  let failures = 0;
  /** Forwards run one after another, in the order events arrive. */
  let forwarding: Promise<void> = Promise.resolve();

  const streamUrl = (): string => {
    const url = new URL('/v1/events/stream', options.apiUrl.replace(/^http/, 'ws'));
    if (newest !== null) url.searchParams.set('after', encodeTime(Math.max(0, decodeTime(newest) - LISTEN_RESUME_WINDOW_MS), 10));
    return url.toString();
  };

  const remember = (id: string): void => {
    seen.add(id);
    if (seen.size > LISTEN_SEEN_IDS_MAX) seen.delete(seen.values().next().value as string);
    if (newest === null || id > newest) newest = id;
  };

  const forward = async (raw: string, event: { id: string; event_type: string }): Promise<void> => {
    for (let attempt = 1; attempt <= FORWARD_ATTEMPTS_MAX && !stopped; attempt += 1) {
      const timestamp = String(Math.floor(Date.now() / 1000));
      try {
        const response = await fetch(options.forwardTo, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': 'kobo-listen/1', [SIGNATURE_HEADER]: signature(secret, timestamp, raw), [TIMESTAMP_HEADER]: timestamp },
          body: raw,
          signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
        });
        await response.arrayBuffer();
        options.log(`${new Date().toISOString()}  --> ${event.event_type} ${event.id} [${response.status}]`);
        if (response.status < 500) return;
      } catch (error) {
        options.log(`${new Date().toISOString()}  --> ${event.event_type} ${event.id} failed: ${(error as Error).message}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
    options.log(`${new Date().toISOString()}  gave up forwarding ${event.id} after ${FORWARD_ATTEMPTS_MAX} attempts`);
  };

  const connect = (): void => {
    if (stopped) return;
    const ws = new WebSocket(streamUrl(), { headers: { authorization: `Bearer ${options.key}` } });
    socket = ws;
    ws.on('open', () => {
      failures = 0;
      options.log(`${new Date().toISOString()}  connected${newest === null ? '' : ', resuming after the last event seen'}`);
    });
    ws.on('message', (data) => {
      const raw = data.toString();
      const event = JSON.parse(raw) as { id: string; event_type: string };
      if (seen.has(event.id)) return;
      remember(event.id);
      forwarding = forwarding.then(() => forward(raw, event));
    });
    ws.on('unexpected-response', (_request, response) => {
      options.log(`${new Date().toISOString()}  the server refused the stream: HTTP ${response.statusCode}`);
      if (response.statusCode === 401 || response.statusCode === 403) stop();
    });
    ws.on('error', (error) => options.log(`${new Date().toISOString()}  stream error: ${error.message}`));
    ws.on('close', () => {
      if (stopped || socket !== ws) return;
      failures += 1;
      const delayMs = Math.min(RECONNECT_DELAY_MS_MAX, 100 * 2 ** Math.min(failures, 6));
      options.log(`${new Date().toISOString()}  disconnected; reconnecting in ${delayMs} ms`);
      setTimeout(connect, delayMs);
    });
  };

  const stop = (): void => {
    stopped = true;
    socket?.close();
  };

  connect();
  return { secret, stop };
}
