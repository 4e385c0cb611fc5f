// Operator endpoints: GET /healthz (the process answers), GET /readyz (recovery done, every shard
// answers a ping, not draining), GET /metrics (Prometheus text), GET /docs (the API reference) and its script.
// Main thread. Unauthenticated: the listen address is the boundary; KOBO_METRICS_TOKEN guards /metrics.
// Invariant: none of them touches a partition's state or the ledger.
import { timingSafeEqual } from 'node:crypto';
import { reject, statusOf } from '../errors.ts';
import type { Reply, RouteDef } from '../http/types.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { DOCS_CSP, REDOC_BUNDLE_PATH, redocBundle } from './docs-page.ts';

const METRICS_UNAUTHENTICATED = reject('UNAUTHENTICATED', 'Send Authorization: Bearer <KOBO_METRICS_TOKEN>.');

/** A shard that does not answer a ping in this long is not ready. */
export const READY_PING_MS = 1_000;

export interface OpsDeps {
  /** True once recovery is done and until a stop begins. */
  accepting: () => boolean;
  ping: (timeoutMs: number) => Promise<boolean>;
  metrics: Metrics;
  metricsToken: string;
  docsHtml: () => string;
}

function tokenMatches(header: string | undefined, token: string): boolean {
  // The scheme is case-insensitive (RFC 9110 §11.1), as it is for API keys; the token is compared in constant time.
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  const given = Buffer.from(match?.[1] ?? '');
  const expected = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export function opsRoutes(deps: OpsDeps): RouteDef[] {
  const unavailable = (message: string) => {
    const rejection = reject('UNAVAILABLE', message);
    return { status: statusOf(rejection), error: { code: rejection.code, message: rejection.message } };
  };
  return [
    {
      method: 'GET',
      path: '/healthz',
      summary: 'Liveness: the process answers HTTP',
      auth: 'public',
      family: 'ops',
      handle: () => ({ status: 200, json: '{"status":"ok"}' }),
    },
    {
      method: 'GET',
      path: '/readyz',
      summary: 'Readiness: recovery done and every shard answers',
      auth: 'public',
      family: 'ops',
      handle: async () => {
        if (!deps.accepting()) return unavailable('The server is stopping.');
        if (!(await deps.ping(READY_PING_MS))) return unavailable(`A shard did not answer within ${READY_PING_MS} ms.`);
        return { status: 200, json: '{"status":"ready"}' };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics (text exposition format)',
      auth: 'public',
      family: 'ops',
      // With a token, a scraper that sends it has a budget of its own (a key's reads), so unauthenticated
      // traffic from its address cannot blind monitoring; a wrong token is charged to the address.
      verifiedBudget: (proof) => {
        if (deps.metricsToken === '') return null;
        return tokenMatches(proof.authorization, deps.metricsToken) ? proof.charge('metrics') : { rejection: METRICS_UNAUTHENTICATED, headers: { 'WWW-Authenticate': 'Bearer realm="kobo-metrics"' } };
      },
      handle: async (ctx): Promise<Reply> => {
        if (deps.metricsToken !== '' && !tokenMatches(ctx.authorization, deps.metricsToken)) {
          return { status: 401, error: { code: 'UNAUTHENTICATED', message: METRICS_UNAUTHENTICATED.message }, headers: { 'WWW-Authenticate': 'Bearer realm="kobo-metrics"' } };
        }
        return { status: 200, json: await deps.metrics.text(), headers: { 'Content-Type': deps.metrics.contentType } };
      },
    },
    {
      method: 'GET',
      path: '/docs',
      summary: 'The API reference (HTML, rendered by the Redoc bundle this server serves)',
      auth: 'public',
      family: 'ops',
      handle: () => ({ status: 200, json: deps.docsHtml(), headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': DOCS_CSP } }),
    },
    {
      method: 'GET',
      path: REDOC_BUNDLE_PATH,
      summary: "The reference renderer's script (Redoc's standalone bundle, from node_modules)",
      auth: 'public',
      family: 'ops',
      handle: () => ({ status: 200, json: redocBundle(), headers: { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' } }),
    },
  ];
}
