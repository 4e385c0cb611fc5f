// Covers the payment (collection) lifecycle, stepped purely (no actor, no clock).
// Runs under node:test on the main thread: nextStatus() and xstate's transition() on resolved snapshots.
// Invariant checked: every (status, event) pair either gives the machine's target or is refused (null).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { getInitialSnapshot, transition } from 'xstate';
import { nextStatus } from '../../machines/step.ts';
import { PAYMENT_STATUSES, paymentMachine, type PaymentEvent, type PaymentStatus } from '../../machines/payment.machine.ts';

const AT_MS = 1_700_000_000_000;

const EVENTS: Record<PaymentEvent['type'], PaymentEvent> = {
  submit: { type: 'submit', atMs: AT_MS },
  settle: { type: 'settle', atMs: AT_MS },
  fail: { type: 'fail', atMs: AT_MS },
  cancel: { type: 'cancel', atMs: AT_MS },
  retry: { type: 'retry', atMs: AT_MS },
};

const TABLE: Record<PaymentStatus, Partial<Record<PaymentEvent['type'], PaymentStatus>>> = {
  pending: { submit: 'processing', settle: 'completed', fail: 'failed', cancel: 'failed' },
  processing: { settle: 'completed', fail: 'failed' },
  completed: {},
  failed: { retry: 'pending' },
};

const step = (status: PaymentStatus, event: PaymentEvent): string | null => nextStatus(paymentMachine, status, {}, event);

describe('payment machine: nextStatus over every status and event', () => {
  for (const status of PAYMENT_STATUSES) {
    for (const [name, event] of Object.entries(EVENTS)) {
      const expected = TABLE[status][name as PaymentEvent['type']] ?? null;
      it(`nextStatus: ${status} + ${name} → ${expected ?? 'refused (null)'}`, () => {
        assert.equal(step(status, event), expected);
      });
    }
  }
});

describe('payment machine: rules by name', () => {
  it('initial snapshot: a new payment → pending', () => {
    assert.equal(getInitialSnapshot(paymentMachine).value, 'pending');
  });

  it('cancel: processing (wallet debit submitted) → refused', () => {
    assert.equal(step('processing', EVENTS.cancel), null);
  });

  it('retry: completed or processing → refused; failed → pending', () => {
    assert.equal(step('completed', EVENTS.retry), null);
    assert.equal(step('processing', EVENTS.retry), null);
    assert.equal(step('failed', EVENTS.retry), 'pending');
  });

  it('settle: completed (settled twice) → refused', () => {
    assert.equal(step('completed', EVENTS.settle), null);
  });

  it('fail: failed (failed twice) → refused', () => {
    assert.equal(step('failed', EVENTS.fail), null);
  });
});

describe('payment machine: xstate transition() on a rehydrated snapshot', () => {
  for (const status of PAYMENT_STATUSES) {
    for (const [name, event] of Object.entries(EVENTS)) {
      const expected = TABLE[status][name as PaymentEvent['type']];
      it(`transition: ${status} + ${name} → ${expected ?? 'value unchanged, can() false'}`, () => {
        const snapshot = paymentMachine.resolveState({ value: status, context: {} });
        const [next] = transition(paymentMachine, snapshot, event);
        assert.equal(snapshot.can(event), expected !== undefined);
        assert.equal(next.value, expected ?? status);
      });
    }
  }

  it('transition: pending → processing → failed → pending → processing → completed (a retried wallet debit)', () => {
    let snapshot = getInitialSnapshot(paymentMachine);
    for (const [event, expected] of [
      [EVENTS.submit, 'processing'],
      [EVENTS.fail, 'failed'],
      [EVENTS.retry, 'pending'],
      [EVENTS.submit, 'processing'],
      [EVENTS.settle, 'completed'],
    ] as const) {
      [snapshot] = transition(paymentMachine, snapshot, event);
      assert.equal(snapshot.value, expected);
    }
    assert.equal(snapshot.status, 'done');
  });
});
