// Recipient lookup for POST /v1/services/{code}/validate: asks the rail that serves the service (rails.ts:
// the sandbox's simulator, or a live connector declaring `resolve` for it) and reads its answer. Main
// thread; a lookup moves no money, so it is asked before (and instead of) any shard command.
// Invariant: live recipients are never looked up on the sandbox; no answer is never read as "valid".
import { randomUUID } from 'node:crypto';
import { reject } from '../errors.ts';
import type { MarketService } from '../catalogue/services.ts';
import type { Reply, RequestContext } from '../http/types.ts';
import { NO_LIVE_CONNECTOR } from '../rails/coverage.ts';
import { lookUp } from '../rails/rails.ts';
import { errorOf } from './deps.ts';

export interface Lookup {
  valid: boolean;
  customerName: string;
  address: string;
  serviceable: boolean;
  reason: string | null;
}

/** No rail → 422 SERVICE_UNAVAILABLE; a refusal → `valid: false` with the rail's code; no answer → 502 PROVIDER_FAILURE. */
export async function lookUpRecipient(ctx: RequestContext, service: MarketService, input: { operatorCode: string | null; accountRef: string; meterType: string | null }): Promise<Lookup | Reply> {
  const account = { type: 'service', service_code: service.code, country: service.country, operator_code: input.operatorCode, account_ref: input.accountRef, meter_type: input.meterType };
  const answer = await lookUp(ctx.owner, 'resolve', { service: service.code, country: service.country }, `resolve-${randomUUID()}`, { account }, ctx.nowMs);
  if (answer === null) return errorOf(reject('SERVICE_UNAVAILABLE', `Recipient lookup for live ${service.code} in ${service.country} is not offered: no connector serves it (${NO_LIVE_CONNECTOR}).`));
  if (answer.outcome === 'failed') return { valid: false, customerName: '', address: '', serviceable: false, reason: answer.failureCode };
  if (answer.outcome !== 'settled' || typeof answer.detail?.account_name !== 'string') {
    return errorOf(reject('PROVIDER_FAILURE', `The ${service.code} lookup rail did not answer; retry shortly.`));
  }
  const d = answer.detail;
  return {
    valid: true,
    customerName: String(d.account_name).slice(0, 128),
    address: typeof d.address === 'string' ? d.address.slice(0, 256) : '',
    serviceable: d.serviceable !== false,
    reason: typeof d.reason === 'string' ? d.reason.slice(0, 64) : null,
  };
}
