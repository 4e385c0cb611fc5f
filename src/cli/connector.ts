// The reference connector (`npm run kobo -- connector …`): an HTTP service speaking kobo's connector
// protocol (docs/connectors.md) in front of a simulated bank/PSP/biller, for operators developing a
// real one. Own process; state in memory (a restart forgets every reference).
// Invariant: one reference is decided once (a resubmit or requery answers the recorded outcome), and
// nothing unsigned or stale is served.
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { signatureProblem, signedHeaders } from '../connectors/signing.ts';
import { midRate, supportsPair } from '../catalogue/fx.ts';
import { formatRate, scaleRateBps } from '../money/convert.ts';

export interface ConnectorOptions {
  port: number;
  host: string;
  secret: string;
  /** Delay before every answer. */
  latencyMs: number;
  /** A subject (account number, recipient, or amount) ending in this fails: failure_code PROVIDER_ERROR. */
  failEnding: string;
  /** …ending in this is decided settled, but the first answer is held `timeoutHoldMs` (kobo times out). */
  timeoutEnding: string;
  timeoutHoldMs: number;
  /** …ending in this answers `accepted`, then calls back `settled` after `callbackDelayMs`. */
  asyncEnding: string;
  callbackDelayMs: number;
  /** Fraction (0–1) of other requests failed at random. */
  failRate: number;
  /** FX rates answered: kobo's reference mid rates moved by this many basis points (may be negative). */
  fxDriftBps: number;
  /** Name kobo knows this connector by (the callback path segment). */
  name: string;
  log: (line: string) => void;
}

const FIRST = ['Ngozi', 'Yaw', 'Achieng', 'Sipho', 'Babirye', 'Emeka'];
const LAST = ['Eze', 'Boateng', 'Mwangi', 'Zulu', 'Nansubuga', 'Okoro'];

/** References remembered; beyond this the oldest is forgotten (a requery of it then answers not_found). */
const DECISIONS_MAX = 100_000;

/** Request bodies larger than this are refused (413). */
const REQUEST_BYTES_MAX = 64 * 1024;

interface Decision {
  kind: string;
  status: 'settled' | 'failed' | 'accepted';
  providerReference: string;
  failureCode: string | null;
  detail: Record<string, unknown> | null;
  checkoutUrl: string | null;
  callbackUrl: string | null;
}

function subjectOf(body: Record<string, unknown>): string {
  const account = (body.beneficiary ?? body.account) as { account_number?: unknown; account_ref?: unknown } | undefined;
  if (typeof account?.account_number === 'string') return account.account_number;
  if (typeof account?.account_ref === 'string') return account.account_ref;
  if (typeof body.recipient === 'string') return body.recipient;
  return String(body.amount_minor ?? '');
}

export function startConnector(options: ConnectorOptions): Promise<http.Server> {
  const decisions = new Map<string, Decision>();
  const baseUrl = (): string => `http://${options.host}:${(server.address() as { port: number }).port}`;

  function decide(kind: string, reference: string, body: Record<string, unknown>): Decision {
    const subject = subjectOf(body).replace(/[\s+-]/g, '');
    const providerReference = `REF-${randomBytes(6).toString('hex').toUpperCase()}`;
    const base = { kind, providerReference, failureCode: null, detail: null, checkoutUrl: null, callbackUrl: typeof body.callback_url === 'string' ? body.callback_url : null };
    if (kind !== 'fx' && (subject.endsWith(options.failEnding) || Math.random() < options.failRate)) return { ...base, status: 'failed', failureCode: 'PROVIDER_ERROR' };
    if (kind === 'resolutions') {
      const digest = createHash('sha256').update(subject).digest();
      const name = `${FIRST[digest[0]! % FIRST.length]} ${LAST[digest[1]! % LAST.length]}`;
      const account = body.account as { type?: unknown } | undefined;
      // A service recipient (meter, smartcard, phone) also has an address and may be unserviceable.
      if (account?.type === 'service') return { ...base, status: 'settled', detail: { account_name: name.toUpperCase(), address: `${1 + (digest[2]! % 90)} Marina Road`, serviceable: true, reason: null } };
      return { ...base, status: 'settled', detail: { account_name: name } };
    }
    if (kind === 'fx') {
      // Rates: kobo's reference table moved by --fx-drift-bps, as a market would have moved it.
      const from = String(body.from_currency ?? '');
      const to = String(body.to_currency ?? '');
      if (!supportsPair(from, to)) return { ...base, status: 'failed', failureCode: 'PROVIDER_ERROR' };
      const mid = midRate(from, to);
      return { ...base, status: 'settled', detail: { mid_rate: formatRate(scaleRateBps(mid, BigInt(options.fxDriftBps))) } };
    }
    if (kind === 'collections' || subject.endsWith(options.asyncEnding)) {
      return { ...base, status: 'accepted', checkoutUrl: kind === 'collections' ? `${baseUrl()}/pay/${encodeURIComponent(reference)}` : null };
    }
    const detail = kind === 'fulfilments' ? { receipt_number: `RCPT-${providerReference.slice(4)}`, token: randomBytes(10).toString('hex') } : null;
    return { ...base, status: 'settled', detail };
  }

  function wire(reference: string, d: Decision): Record<string, unknown> {
    return { reference, status: d.status, provider_reference: d.providerReference, failure_code: d.failureCode, detail: d.detail, checkout_url: d.checkoutUrl };
  }

  function send(res: http.ServerResponse, status: number, payload: unknown): void {
    const text = JSON.stringify(payload);
    res.writeHead(status, { 'Content-Type': 'application/json', ...signedHeaders(options.secret, text) });
    res.end(text);
  }

  async function callBack(url: string, reference: string, d: Decision): Promise<void> {
    const kind = d.kind === 'collections' ? 'collection' : d.kind === 'payouts' ? 'payout' : 'fulfilment';
    const text = JSON.stringify({ ...wire(reference, d), kind });
    try {
      const response = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...signedHeaders(options.secret, text) }, body: text, signal: AbortSignal.timeout(10_000) });
      options.log(`callback ${reference} ${d.status} → ${response.status}`);
    } catch (error) {
      options.log(`callback ${reference} failed: ${(error as Error).message}`);
    }
  }

  /**
   * The payer's side of a collection (the stand-in for a PSP's hosted page): opening
   * /pay/{reference}?outcome=settled|failed decides the accepted collection and calls kobo back.
   */
  function payerDecides(res: http.ServerResponse, reference: string, outcome: 'settled' | 'failed'): void {
    const decision = decisions.get(reference);
    if (decision === undefined || decision.status !== 'accepted') return send(res, 409, { error: 'no collection awaiting the payer by that reference' });
    decision.status = outcome;
    if (outcome === 'failed') decision.failureCode = 'PROVIDER_ERROR';
    if (decision.callbackUrl !== null) void callBack(decision.callbackUrl, reference, decision);
    send(res, 200, wire(reference, decision));
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= REQUEST_BYTES_MAX) chunks.push(chunk);
    });
    req.on('end', () => {
      void (async () => {
        if (size > REQUEST_BYTES_MAX) return send(res, 413, { error: 'too large' });
        const text = Buffer.concat(chunks).toString('utf8');
        const pay = /^\/pay\/([^/?]+)\?outcome=(settled|failed)$/.exec(req.url ?? '');
        if (pay !== null) return payerDecides(res, decodeURIComponent(pay[1]!), pay[2] as 'settled' | 'failed');
        const match = /^\/v1\/(collections|payouts|fulfilments|resolutions|fx)\/(submit|requery)$/.exec(req.url ?? '');
        if (req.method !== 'POST' || match === null) return send(res, 404, { error: 'not found' });
        const problem = signatureProblem(options.secret, header(req, 'kobo-timestamp'), header(req, 'kobo-signature'), text);
        if (problem !== null) return send(res, 401, { error: problem });
        let body: Record<string, unknown>;
        try {
          body = JSON.parse(text) as Record<string, unknown>;
        } catch {
          return send(res, 400, { error: 'body is not JSON' });
        }
        const reference = typeof body.reference === 'string' ? body.reference : '';
        if (reference === '') return send(res, 400, { error: 'reference is required' });
        const [, kind = '', op] = match;
        await sleep(options.latencyMs);
        const known = decisions.get(reference);
        if (op === 'requery') {
          options.log(`requery ${reference} → ${known?.status ?? 'not_found'}`);
          return send(res, 200, known === undefined ? { reference, status: 'not_found' } : wire(reference, known));
        }
        if (known !== undefined) return send(res, 200, wire(reference, known));
        const decision = decide(kind, reference, body);
        if (decisions.size >= DECISIONS_MAX) decisions.delete(decisions.keys().next().value ?? '');
        decisions.set(reference, decision);
        options.log(`submit ${kind} ${reference} → ${decision.status}`);
        const callbackUrl = decision.callbackUrl;
        if (decision.status === 'accepted' && callbackUrl !== null && kind !== 'collections') {
          setTimeout(() => {
            decision.status = 'settled';
            void callBack(callbackUrl, reference, decision);
          }, options.callbackDelayMs).unref();
        }
        if (kind !== 'resolutions' && kind !== 'fx' && subjectOf(body).replace(/[\s+-]/g, '').endsWith(options.timeoutEnding)) await sleep(options.timeoutHoldMs);
        send(res, 200, wire(reference, decision));
      })();
    });
  });

  return new Promise((resolve) => server.listen(options.port, options.host, () => {
    options.log(`connector ${options.name} listening on ${baseUrl()}`);
    resolve(server);
  }));
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function sleep(ms: number): Promise<void> {
  return ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
}
