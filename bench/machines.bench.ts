// One lifecycle step, two ways: the table compiled from the machine at start (what the shard consults:
// a Map lookup and a guard call) and xstate's transition() on a snapshot rehydrated from the status
// (the reference the table is tested against). Run: npx tsx bench/machines.bench.ts [--time-ms 300].
// Results also go to bench/.out/machines.json.
import { Bench } from 'tinybench';
import { transition } from 'xstate';
import { referenceStep, type Step } from '../machines/step.ts';
import { orderMachine, orderTable } from '../machines/order.machine.ts';
import { transactionMachine, transactionTable } from '../machines/transaction.machine.ts';
import { fmt, flag, table, writeResult } from './lib/report.ts';

const AT_MS = Date.UTC(2026, 0, 15, 12);
/** Table steps take well under a microsecond: run them in loops so the timer's own cost does not dominate. */
const INNER = 1_000;
const timeMs = Number(flag('time-ms', '300'));

interface Case {
  name: string;
  table: () => Step | null;
  reference: () => Step | null;
  expected: string | null;
}

const failedRetryable = { failureCode: 'PROVIDER_ERROR' as const };
const cases: Case[] = [
  {
    name: 'txn pending -submit-> (no guard)',
    table: () => transactionTable.step('pending', { failureCode: null }, { type: 'submit', atMs: AT_MS }),
    reference: () => referenceStep(transactionMachine, 'pending', { failureCode: null }, { type: 'submit', atMs: AT_MS }),
    expected: 'processing',
  },
  {
    name: 'txn failed -retry-> (guard passes)',
    table: () => transactionTable.step('failed', failedRetryable, { type: 'retry', atMs: AT_MS }),
    reference: () => referenceStep(transactionMachine, 'failed', failedRetryable, { type: 'retry', atMs: AT_MS }),
    expected: 'pending',
  },
  {
    name: 'order unknown -reconcile(failed)-> (guard fails, next candidate)',
    table: () => orderTable.step('unknown', {}, { type: 'reconcile', atMs: AT_MS, outcome: 'failed' }),
    reference: () => referenceStep(orderMachine, 'unknown', {}, { type: 'reconcile', atMs: AT_MS, outcome: 'failed' }),
    expected: 'failed',
  },
  {
    name: 'order completed -cancel-> (refused)',
    table: () => orderTable.step('completed', {}, { type: 'cancel', atMs: AT_MS }),
    reference: () => referenceStep(orderMachine, 'completed', {}, { type: 'cancel', atMs: AT_MS }),
    expected: null,
  },
];

// transition() alone, on a snapshot resolved once: what the reference costs without rehydrating.
const resolved = orderMachine.resolveState({ value: 'fulfilling', context: {} });
const delivered = { type: 'rail.delivered', atMs: AT_MS } as const;

function check(name: string, got: Step | null, expected: string | null): void {
  if ((got?.target ?? null) !== expected) throw new Error(`${name}: got ${got?.target ?? 'null'}, expected ${expected ?? 'null'}`);
}

const bench = new Bench({ time: timeMs, warmupTime: 100, throws: true });
for (const c of cases) {
  bench.add(`table: ${c.name}`, () => {
    for (let i = 0; i < INNER; i += 1) check(c.name, c.table(), c.expected);
  });
  bench.add(`transition(): ${c.name}`, () => check(c.name, c.reference(), c.expected));
}
bench.add('transition() only, snapshot resolved once: order fulfilling -rail.delivered->', () => {
  const [next] = transition(orderMachine, resolved, delivered);
  if (next.value !== 'completed') throw new Error('bad step');
});
await bench.run();

const rows = bench.tasks.map((task) => {
  const result = task.result;
  if (result === undefined || result.error !== undefined) throw new Error(`${task.name}: ${result?.error?.message ?? 'no result'}`);
  const inner = task.name.startsWith('table:') ? INNER : 1;
  return { name: task.name, meanUs: (result.latency.mean * 1000) / inner, p99Us: ((result.latency.p99 ?? Number.NaN) * 1000) / inner, samples: result.latency.samples.length };
});
const meanOf = (name: string): number => rows.find((r) => r.name === name)?.meanUs ?? Number.NaN;
process.stdout.write(
  `${table([
    ['step', 'mean µs', 'p99 µs', 'samples', 'transition() ÷ table'],
    ...rows.map((r) => [
      r.name,
      fmt(r.meanUs, 3),
      fmt(r.p99Us, 3),
      String(r.samples),
      r.name.startsWith('table: ') ? `${fmt(meanOf(`transition(): ${r.name.slice('table: '.length)}`) / r.meanUs, 0)}×` : '',
    ]),
  ])}\n(table rows: loops of ${INNER} steps, p99 of loop means)\n`,
);
process.stdout.write(`${writeResult('machines', { timeMs, inner: INNER, rows })}\n`);
