// The order-level magic values of the sandbox fulfilment rail, on top of the per-service simulator in
// sandbox-services.ts (0000 fails, 0001 times out). Pure and deterministic; runs in shard workers.
// Invariant: the same recipient and dispatch attempt always get the same answer, so a requery after a
// restart learns the outcome of the purchase already made instead of buying again.
import { fulfilmentOutcome } from './sandbox-services.ts';

export type RailAnswer = 'delivered' | 'failed' | 'timeout' | 'retry' | 'funding_failed' | 'manual';

/**
 * Ending `0003`: the rail cannot fund the purchase (provider_funding_failure, refunded). Ending `0004`:
 * held for an operator (manual_fulfilment). Ending `0005`: a controlled retry on the first attempt
 * (retry_required), delivered on the second. Anything else: the service simulator decides.
 */
export function railAnswer(recipient: string, attempt: number): RailAnswer {
  if (recipient.endsWith('0003')) return 'funding_failed';
  if (recipient.endsWith('0004')) return 'manual';
  if (recipient.endsWith('0005')) return attempt === 1 ? 'retry' : 'delivered';
  return fulfilmentOutcome(recipient);
}

export const COMPLIANCE_DENIED_COST_MINOR = 666;
