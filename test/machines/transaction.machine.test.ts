// Covers the transaction lifecycle of the spec's state table, stepped purely (no actor, no clock).
// Runs under node:test on the main thread: nextStatus() and xstate's transition() on resolved snapshots.
// Invariant checked: every (status, event) pair either gives the table's target or is refused (null).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getInitialSnapshot, transition } from 'xstate';
import { nextStatus } from '../../machines/step.ts';
import {
  FINAL_FAILURE_CODES,
  RETRYABLE_FAILURE_CODES,
  TRANSACTION_STATUSES,
  isRetryable,
  transactionMachine,
  type FailureCode,
  type TransactionEvent,
  type TransactionStatus,
} from '../../machines/transaction.machine.ts';

const AT_MS = 1_700_000_000_000;

/** One instance of every event kind the machine knows (reconcile twice: both outcomes). */
const EVENTS: Record<string, TransactionEvent> = {
  submit: { type: 'submit', atMs: AT_MS },
  settle: { type: 'settle', atMs: AT_MS },
  fail: { type: 'fail', atMs: AT_MS, code: 'PROVIDER_ERROR' },
  timeout: { type: 'timeout', atMs: AT_MS },
  'reconcile:completed': { type: 'reconcile', atMs: AT_MS, outcome: 'completed' },
  'reconcile:failed': { type: 'reconcile', atMs: AT_MS, outcome: 'failed' },
  cancel: { type: 'cancel', atMs: AT_MS },
  retry: { type: 'retry', atMs: AT_MS },
};

/** The whole table for a transaction without a failure code (failed+retry is covered per code below). */
const TABLE: Record<TransactionStatus, Record<string, TransactionStatus>> = {
  pending: { submit: 'processing', settle: 'completed', fail: 'failed', cancel: 'failed' },
  processing: { settle: 'completed', fail: 'failed', timeout: 'unknown' },
  unknown: { 'reconcile:completed': 'completed', 'reconcile:failed': 'failed' },
  completed: {},
  failed: {},
};

function step(status: TransactionStatus, event: TransactionEvent, failureCode: FailureCode | null = null): string | null {
  return nextStatus(transactionMachine, status, { failureCode }, event);
}

function snapshotAt(status: TransactionStatus, failureCode: FailureCode | null) {
  return transactionMachine.resolveState({ value: status, context: { failureCode } });
}

describe('transaction machine: nextStatus over every status and event', () => {
  for (const status of TRANSACTION_STATUSES) {
    for (const [name, event] of Object.entries(EVENTS)) {
      const expected = TABLE[status][name] ?? null;
      it(`nextStatus: ${status} + ${name} → ${expected ?? 'refused (null)'}`, () => {
        assert.equal(step(status, event), expected);
      });
    }
  }
});

describe('transaction machine: the spec rules by name', () => {
  it('initial snapshot: a new transaction → pending with no failure code', () => {
    const snapshot = getInitialSnapshot(transactionMachine);
    assert.equal(snapshot.value, 'pending');
    assert.deepEqual(snapshot.context, { failureCode: null });
  });

  it('cancel: processing → refused (409 CONFLICT over HTTP)', () => {
    assert.equal(step('processing', EVENTS.cancel!), null);
  });

  it('cancel: pending → failed', () => {
    assert.equal(step('pending', EVENTS.cancel!), 'failed');
  });

  for (const code of RETRYABLE_FAILURE_CODES) {
    it(`retry: failed with ${code} → pending`, () => {
      assert.equal(step('failed', EVENTS.retry!, code), 'pending');
    });
  }

  for (const code of FINAL_FAILURE_CODES) {
    it(`retry: failed with final ${code} → refused`, () => {
      assert.equal(step('failed', EVENTS.retry!, code), null);
    });
  }

  it('retry: failed without a failure code → refused', () => {
    assert.equal(step('failed', EVENTS.retry!, null), null);
  });

  it('retry: completed, processing, pending or unknown (even with a retryable code) → refused', () => {
    for (const status of ['completed', 'processing', 'pending', 'unknown'] as const) {
      assert.equal(step(status, EVENTS.retry!, 'PROVIDER_ERROR'), null, status);
    }
  });

  it('fail: the code carried by the event does not change the target → failed', () => {
    for (const code of [...RETRYABLE_FAILURE_CODES, ...FINAL_FAILURE_CODES]) {
      assert.equal(step('pending', { type: 'fail', atMs: AT_MS, code }), 'failed', `pending ${code}`);
      assert.equal(step('processing', { type: 'fail', atMs: AT_MS, code }), 'failed', `processing ${code}`);
    }
  });

  it('reconcile: unknown with outcome completed → completed; with outcome failed → failed', () => {
    assert.equal(step('unknown', EVENTS['reconcile:completed']!), 'completed');
    assert.equal(step('unknown', EVENTS['reconcile:failed']!), 'failed');
  });

  it('completed: any event → refused (final state)', () => {
    for (const [name, event] of Object.entries(EVENTS)) {
      assert.equal(step('completed', event, 'PROVIDER_ERROR'), null, name);
    }
    assert.equal(snapshotAt('completed', null).status, 'done');
  });

  it('isRetryable: PROVIDER_ERROR, INTERNAL, RATE_LIMITED → true; final codes and null → false', () => {
    for (const code of RETRYABLE_FAILURE_CODES) assert.equal(isRetryable(code), true, code);
    for (const code of FINAL_FAILURE_CODES) assert.equal(isRetryable(code), false, code);
    assert.equal(isRetryable(null), false);
  });
});

describe('transaction machine: xstate transition() on a rehydrated snapshot', () => {
  for (const status of TRANSACTION_STATUSES) {
    for (const [name, event] of Object.entries(EVENTS)) {
      const expected = TABLE[status][name];
      const label = expected === undefined ? 'value unchanged, can() false' : expected;
      it(`transition: ${status} + ${name} → ${label}`, () => {
        const snapshot = snapshotAt(status, null);
        const [next] = transition(transactionMachine, snapshot, event);
        if (expected === undefined) {
          assert.equal(snapshot.can(event), false);
          assert.equal(next.value, status);
        } else {
          assert.equal(snapshot.can(event), true);
          assert.equal(next.value, expected);
        }
      });
    }
  }

  it('transition: failed with RATE_LIMITED + retry → pending, context kept', () => {
    const [next] = transition(transactionMachine, snapshotAt('failed', 'RATE_LIMITED'), EVENTS.retry!);
    assert.equal(next.value, 'pending');
    assert.deepEqual(next.context, { failureCode: 'RATE_LIMITED' });
  });

  it('transition: failed with INSUFFICIENT_FUNDS + retry → stays failed', () => {
    const snapshot = snapshotAt('failed', 'INSUFFICIENT_FUNDS');
    const [next] = transition(transactionMachine, snapshot, EVENTS.retry!);
    assert.equal(snapshot.can(EVENTS.retry!), false);
    assert.equal(next.value, 'failed');
  });

  it('transition: pending → processing → unknown → completed along the timeout path', () => {
    let snapshot = getInitialSnapshot(transactionMachine);
    for (const [event, expected] of [
      [EVENTS.submit!, 'processing'],
      [EVENTS.timeout!, 'unknown'],
      [EVENTS['reconcile:completed']!, 'completed'],
    ] as const) {
      [snapshot] = transition(transactionMachine, snapshot, event);
      assert.equal(snapshot.value, expected);
    }
    assert.equal(snapshot.status, 'done');
  });
});
