// The sandbox payout rail: resolves account names and decides payout outcomes from magic values.
// Pure and deterministic (any thread), so shards can call it and replays agree; its answers reach the
// shard as commands after the simulated latency, like a real provider's callback.
// Invariant: the same account number always resolves to the same name and the same outcome.
import { createHash } from 'node:crypto';

const FIRST = ['Adaeze', 'Kwame', 'Wanjiru', 'Thabo', 'Nakato', 'Chinedu', 'Ama', 'Otieno', 'Lerato', 'Musa', 'Grace', 'Tunde'];
const LAST = ['Okafor', 'Mensah', 'Kamau', 'Nkosi', 'Namubiru', 'Adeyemi', 'Asante', 'Odhiambo', 'Dlamini', 'Bello', 'Smith', 'Balogun'];

export const VERIFICATION_FAILS = '0000000000';

export type Resolution = { ok: true; accountName: string } | { ok: false; reason: string };

/** Account-name lookup: `0000000000` fails verification; anything else resolves to a stable name. */
export function resolveAccountName(accountNumber: string): Resolution {
  if (accountNumber === VERIFICATION_FAILS) return { ok: false, reason: 'The rail could not verify this account.' };
  const digest = createHash('sha256').update(accountNumber).digest();
  return { ok: true, accountName: `${FIRST[digest[0]! % FIRST.length]!} ${LAST[digest[1]! % LAST.length]!}` };
}

export type PayoutOutcome = 'completed' | 'failed' | 'timeout';

/**
 * Magic values on the beneficiary account number (documented in the README): ending `9999` fails at
 * the rail (PROVIDER_ERROR, retryable); ending `9998` times out, and a later requery finds it completed.
 */
export function payoutOutcome(accountNumber: string): PayoutOutcome {
  if (accountNumber.endsWith('9999')) return 'failed';
  if (accountNumber.endsWith('9998')) return 'timeout';
  return 'completed';
}

/** What a requery of a timed-out payout answers. */
export function requeryOutcome(): 'completed' {
  return 'completed';
}

export const COMPLIANCE_DENIED_AMOUNT_MINOR = 666;
