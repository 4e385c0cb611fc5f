// Fault injection for the crash tests: `KOBO_TEST_CRASH_AT=<point>:<n>` kills the whole process with
// SIGKILL the n-th time a shard passes that step of a batch, so a test can prove that a kill at every
// step loses nothing acknowledged. Runs in the shard (worker thread or inline); unset, it costs one
// comparison a step. Invariant: a crash point only ever kills; it never changes what a step does.

/** The steps of a batch's life where the tests kill the process. */
export const CRASH_POINTS = ['log.appended', 'log.synced', 'replies.sent', 'derived.written', 'snapshot.written', 'log.truncated'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

const SPEC = /^([a-z.]+):([1-9][0-9]{0,6})$/;

/** The spec's point and count, or a message saying why it is not one (config refuses it at start). */
export function parseCrashAt(spec: string): { point: CrashPoint; n: number } | string {
  const match = SPEC.exec(spec);
  const point = match?.[1] as CrashPoint | undefined;
  if (match === null || point === undefined || !CRASH_POINTS.includes(point)) {
    return `KOBO_TEST_CRASH_AT must be <point>:<n> with a point among ${CRASH_POINTS.join(', ')} and n from 1`;
  }
  return { point, n: Number(match[2]) };
}

/** A function each step calls with its name: with no spec (the default) it does nothing. */
export function crashPoints(spec: string): (point: CrashPoint) => void {
  if (spec === '') return () => {};
  const parsed = parseCrashAt(spec);
  if (typeof parsed === 'string') throw new Error(parsed);
  let seen = 0;
  return (point) => {
    if (point !== parsed.point) return;
    seen += 1;
    if (seen === parsed.n) process.kill(process.pid, 'SIGKILL');
  };
}
