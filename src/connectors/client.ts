// kobo's side of the connector protocol (docs/connectors.md): one signed JSON request per rail call,
// answered by a signed JSON response. Runs in shard workers (an effect after commit).
// Invariant: anything but a verified answer in time is `unknown` (or retryable/terminal by status),
// never a guess: the shard requeries rather than assuming an outcome.
import type { Rail, RailAnswer, RailKind, RailOp, RailRequest } from '../rails/rail.ts';
import { CONNECTOR_TIMEOUT_MS_DEFAULT, type ConnectorConfig } from './connector-config.ts';
import { signatureProblem, signedHeaders } from './signing.ts';
import type { ConnectorCallSample } from '../metrics/shard-metrics.ts';

/** Connector answers larger than this are not trusted (and not read). */
export const CONNECTOR_RESPONSE_BYTES_MAX = 64 * 1024;

const KIND_PATH: Record<RailKind, string> = { collection: 'collections', payout: 'payouts', resolve: 'resolutions', fulfilment: 'fulfilments', fx: 'fx' };

export async function callConnector(connector: ConnectorConfig, kind: RailKind, op: RailOp, reference: string, payload: Record<string, unknown>): Promise<RailAnswer> {
  const body = JSON.stringify({ reference, kind, op, ...payload });
  const url = `${connector.url.replace(/\/$/, '')}/v1/${KIND_PATH[kind]}/${op}`;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'Idempotency-Key': reference, ...signedHeaders(connector.secret, body) },
      body,
      signal: AbortSignal.timeout(connector.timeout_ms ?? CONNECTOR_TIMEOUT_MS_DEFAULT),
      redirect: 'error',
    });
    text = await response.text();
  } catch {
    return { outcome: 'unknown' };
  }
  if (response.status === 429 || response.status >= 500) return { outcome: 'retryable' };
  if (response.status >= 400) return { outcome: 'terminal', message: `connector ${connector.name} answered ${response.status}: ${text.slice(0, 200)}` };
  if (text.length > CONNECTOR_RESPONSE_BYTES_MAX) return { outcome: 'unknown' };
  const problem = signatureProblem(connector.secret, response.headers.get('kobo-timestamp') ?? undefined, response.headers.get('kobo-signature') ?? undefined, text);
  if (problem !== null) return { outcome: 'unknown' };
  // The signature proves who wrote the answer, not which request it answers: one naming another
  // reference (a replayed answer to an FX lookup or to another payment) is no answer at all.
  return answerOf(text, reference);
}

/**
 * A connector as a rail: every request carries the callback address kobo listens on for it, and each
 * call is reported to `observe` (metrics) with its outcome and duration.
 */
export function connectorRail(connector: ConnectorConfig, publicUrl: () => string, observe: (sample: ConnectorCallSample) => void = () => {}): Rail {
  return {
    name: connector.name,
    call: async (request: RailRequest) => {
      const started = performance.now();
      const answer = await callConnector(connector, request.kind, request.op, request.reference, { ...request.payload, callback_url: `${publicUrl()}/v1/connectors/${connector.name}/callbacks` });
      observe({ connector: connector.name, kind: request.kind, op: request.op, outcome: answer.outcome, seconds: (performance.now() - started) / 1000 });
      return answer;
    },
  };
}

/**
 * A signed connector message (response or callback) as an answer; anything unrecognised is `unknown`,
 * and so is a response whose `reference` is not `expectedReference` (the request's own).
 */
export function answerOf(text: string, expectedReference?: string): RailAnswer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { outcome: 'unknown' };
  }
  if (typeof parsed !== 'object' || parsed === null) return { outcome: 'unknown' };
  const m = parsed as Record<string, unknown>;
  if (expectedReference !== undefined && m.reference !== expectedReference) return { outcome: 'unknown' };
  const providerReference = typeof m.provider_reference === 'string' ? m.provider_reference.slice(0, 128) : null;
  switch (m.status) {
    case 'accepted':
      return { outcome: 'accepted', providerReference, checkoutUrl: typeof m.checkout_url === 'string' && /^https?:\/\//.test(m.checkout_url) ? m.checkout_url.slice(0, 2048) : null, ...(m.manual_review === true ? { manualReview: true } : {}) };
    case 'settled':
      return { outcome: 'settled', providerReference, detail: typeof m.detail === 'object' && m.detail !== null && !Array.isArray(m.detail) ? (m.detail as Record<string, unknown>) : null };
    case 'failed':
      return { outcome: 'failed', providerReference, failureCode: typeof m.failure_code === 'string' ? m.failure_code.slice(0, 64) : 'PROVIDER_ERROR' };
    case 'not_found':
      return { outcome: 'not_found' };
    default:
      return { outcome: 'unknown' };
  }
}
