// The compact record of a payment's creation: `payment.opened` carries the payment alone, and its
// transaction is derived from it by this rule, live and at replay (it was a second copy of the same
// facts, ~40% of the record). Pure; any thread that applies records. Invariant: the rule never changes
// for this event name: a transaction built another way needs a new event (records replay forever).
import { openedTransaction } from './lifecycle/opened-transaction.ts';
import { isLiveOwner } from '../rails/coverage.ts';
import type { Payment, Transaction } from './state.ts';
import { registerDerivedEntity } from '../store/log-pointers.ts';

/** The transaction a payment opened with (its first attempt, pending, nothing held). */
export function transactionOfPayment(payment: Payment): Transaction {
  const txn = openedTransaction(
    { owner: payment.owner, customerId: payment.customerId, type: 'payment', amountMinor: payment.amountMinor, feeMinor: payment.feeMinor, currency: payment.currency, reference: payment.reference, paymentId: payment.id },
    payment.transactionId,
    payment.createdAtMs,
  );
  // A sandbox collection then waits for its payer, cold, and its transaction with it (see awaitsPayer).
  if (payment.method !== 'wallet' && !isLiveOwner(payment.owner)) txn.awaitsPayer = true;
  return txn;
}

// A cold row pointing at a `payment.opened` record reads its transaction through this (log-pointers.ts).
registerDerivedEntity('payment.opened', (event, kind, id) => {
  if (kind !== 'txn') return undefined;
  const payment = event.payment as Payment;
  return payment.transactionId === id ? JSON.stringify(transactionOfPayment(payment)) : undefined;
});
