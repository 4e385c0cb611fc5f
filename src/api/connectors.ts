// Connector callbacks: POST /v1/connectors/{name}/callbacks, where an operator's connector reports a
// live rail outcome (settled, failed, unknown) for a reference kobo sent it. Main thread; the answer
// goes to the entity's shard as a `rail.answer` command, like a response to kobo's own request.
// Invariant: only a body signed with that connector's secret and a fresh timestamp reaches a shard
// (else 401, nothing changes); a replayed or duplicate callback is acknowledged and changes nothing.
import Type from 'typebox';
import { reject } from '../errors.ts';
import type { RateDecision } from '../http/rate-limit.ts';
import type { Reply, RequestContext, RouteDef, SenderProof, SenderRefusal } from '../http/types.ts';
import { answerOf } from '../connectors/client.ts';
import type { ConnectorConfig } from '../connectors/connector-config.ts';
import { signatureProblem } from '../connectors/signing.ts';
import { parseRailReference, type RailKind } from '../rails/rail.ts';
import { errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';

const KINDS: readonly RailKind[] = ['collection', 'payout', 'fulfilment'];

const CallbackAck = Type.Object({ received: Type.Boolean(), applied: Type.Boolean(), reference: Type.String() });

/** Counts a callback as accepted (verified, answered 200) or rejected, by connector. */
export type CallbackObserver = (connector: string, result: 'accepted' | 'rejected') => void;

async function observed(connectors: ReadonlyMap<string, ConnectorConfig>, ctx: RequestContext, observe: CallbackObserver, reply: Promise<Reply>): Promise<Reply> {
  const answered = await reply;
  const name = ctx.params.name ?? '';
  observe(connectors.has(name) ? name : 'unknown', answered.status === 200 ? 'accepted' : 'rejected');
  return answered;
}

/**
 * Before anything else (the front end calls it in place of the per-IP budget): the connector named in
 * the path must exist and have signed this body with a fresh timestamp; then the callback is charged to
 * that connector's own budget. A refusal (404, 401) is charged to the source IP by the front end.
 */
function verifyCallback(connectors: ReadonlyMap<string, ConnectorConfig>, proof: SenderProof, observe: CallbackObserver): RateDecision | SenderRefusal {
  const connector = connectors.get(proof.params.name ?? '');
  if (connector === undefined) {
    observe('unknown', 'rejected');
    return { rejection: reject('NOT_FOUND', 'No such connector.') };
  }
  const problem = signatureProblem(connector.secret, proof.signature.timestamp || undefined, proof.signature.signature || undefined, proof.rawBody.toString('utf8'));
  if (problem !== null) {
    observe(connector.name, 'rejected');
    return { rejection: reject('UNAUTHENTICATED', `Callback refused: ${problem}.`), headers: { 'WWW-Authenticate': 'Kobo-Signature' } };
  }
  const rate = proof.charge(`connector:${connector.name}`);
  if (!rate.allowed) observe(connector.name, 'rejected');
  return rate;
}

/** A verified callback (verifyCallback ran first) becomes a `rail.answer` command for the entity's shard. */
async function callback(deps: ApiDeps, connectors: ReadonlyMap<string, ConnectorConfig>, ctx: RequestContext): Promise<Reply> {
  const connector = connectors.get(ctx.params.name ?? '');
  if (connector === undefined) return errorOf(reject('NOT_FOUND', 'No such connector.'));
  const text = ctx.rawBody.toString('utf8');
  const body = (typeof ctx.body === 'object' && ctx.body !== null ? ctx.body : {}) as { reference?: unknown; kind?: unknown };
  const reference = typeof body.reference === 'string' ? parseRailReference(body.reference) : null;
  if (reference === null) return errorOf(reject('VALIDATION', 'reference must be the `<id>:<attempt>` kobo sent.'));
  if (typeof body.kind !== 'string' || !(KINDS as readonly string[]).includes(body.kind)) return errorOf(reject('VALIDATION', `kind must be one of ${KINDS.join(', ')}.`));
  const answer = answerOf(text);
  if (answer.outcome === 'not_found') return errorOf(reject('VALIDATION', 'status must be settled, failed, accepted or unknown in a callback.'));
  const partition = partitionOf(reference.entityId, body.kind);
  if (isRejection(partition)) return errorOf(partition);
  const reply = await deps.pool.send({
    k: 'rail.answer',
    kind: body.kind as RailKind,
    id: reference.entityId,
    attempt: reference.attempt,
    phase: 'callback',
    connector: connector.name,
    answer,
    owner: `connector:${connector.name}`,
    nowMs: Date.now(),
    partition,
    customerScope: null,
  });
  if (reply.status >= 500) return reply;
  // Applied, or already applied / no longer applicable (a replay, a duplicate, a late answer): the
  // connector may stop sending either way.
  return { status: 200, json: JSON.stringify({ data: { received: true, applied: reply.status === 200, reference: `${reference.entityId}:${reference.attempt}` } }) };
}

export function connectorRoutes(deps: ApiDeps, connectors: readonly ConnectorConfig[], observe: CallbackObserver = () => {}): RouteDef[] {
  const byName = new Map(connectors.map((c) => [c.name, c]));
  return [
    {
      method: 'POST',
      path: '/v1/connectors/:name/callbacks',
      summary: 'A connector reports a live rail outcome (signed with its secret; see docs/connectors.md)',
      auth: 'public',
      family: 'connectors',
      verifiedBudget: (proof) => verifyCallback(byName, proof, observe),
      response: CallbackAck,
      errors: ['VALIDATION', 'UNAUTHENTICATED', 'NOT_FOUND'],
      handle: (ctx) => observed(byName, ctx, observe, callback(deps, byName, ctx)),
    },
  ];
}
