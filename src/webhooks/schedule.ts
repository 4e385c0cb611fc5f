// The spec's webhook retry schedule: attempt 1 immediately, then 30 s, 2 min, 10 min, 1 h, 4 h, 12 h
// after the previous attempt; after 7 failed attempts a delivery is terminal. Any thread; pure.
export const ATTEMPTS_MAX = 7;
const DELAY_AFTER_ATTEMPT_MS = [30_000, 120_000, 600_000, 3_600_000, 14_400_000, 43_200_000] as const;

/** When attempt `failedAttempts + 1` is due, after `failedAttempts` failures; null when terminal. */
export function nextAttemptAtMs(failedAttempts: number, lastAttemptAtMs: number): number | null {
  if (failedAttempts >= ATTEMPTS_MAX) return null;
  const delay = DELAY_AFTER_ATTEMPT_MS[failedAttempts - 1];
  return delay === undefined ? null : lastAttemptAtMs + delay;
}

/** A delivery succeeds only on these statuses; redirects, other 2xx, 4xx, 5xx and timeouts are failures. */
export const SUCCESS_STATUSES: ReadonlySet<number> = new Set([200, 201, 202, 204]);
