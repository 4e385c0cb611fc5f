// verify's check on service orders: a failed or refunded wallet-paid order whose payment was posted
// (the customer charged for nothing) is a violation; released holds, card payments and delivered
// orders are not. The check end to end (a refunded order's data dir verifying) is in
// test/durability/order-restart.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { orderHoldViolation } from '../../src/cli/verify.ts';
import type { Payment, ServiceOrder, Transaction } from '../../src/shard/state.ts';

const order = (id: string, status: string, method: string, holdStatus: string) => ({
  order: { id, status, paymentId: `p-${id}`, paymentTransactionId: `t-${id}`, customerAmountMinor: 10_500, currency: 'NGN' } as unknown as ServiceOrder,
  payment: { id: `p-${id}`, method } as unknown as Payment,
  txn: { id: `t-${id}`, holdStatus } as unknown as Transaction,
});

describe('orderHoldViolation', () => {
  it('refunded or failed + wallet + posted → one violation each, naming the order and the amount; everything else → none', () => {
    const cases = [
      order('o1', 'refunded', 'wallet', 'posted'),
      order('o2', 'failed', 'wallet', 'posted'),
      order('o3', 'refunded', 'wallet', 'released'),
      order('o4', 'refunded', 'card', 'none'),
      order('o5', 'completed', 'wallet', 'posted'),
      order('o6', 'manual_fulfilment', 'wallet', 'held'),
    ];
    const violations = cases.map((c) => orderHoldViolation(c.order, c.payment, c.txn)).filter((v) => v !== null);
    assert.equal(violations.length, 2, violations.join('\n'));
    assert.match(violations[0]!, /^order o1 is refunded but its wallet payment t-o1 was posted: the customer was charged 10500 NGN/);
    assert.match(violations[1]!, /^order o2 is failed/);
  });
});
