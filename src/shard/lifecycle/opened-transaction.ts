// A transaction as it opens: its first attempt, pending, nothing held. One literal for every creator
// (newTransaction, and the rule that derives a payment's transaction from `payment.opened`), so records
// and replay build the same object. Pure; inside shard workers and wherever records are applied.
// Invariant: the fields and their order change only with a new event for derived transactions.
import { transactionTable } from '../../../machines/transaction.machine.ts';
import type { Transaction } from '../state.ts';

export type TransactionFields = Pick<Transaction, 'owner' | 'customerId' | 'type' | 'amountMinor' | 'feeMinor' | 'currency' | 'reference' | 'paymentId'> & { transferId?: string | null };

export function openedTransaction(fields: TransactionFields, id: string, atMs: number): Transaction {
  // Every field written out in one literal: a spread of `fields` made V8 build the object's shape at
  // run time on each create (map transitions were ~8% of a payment create's CPU in a perf profile).
  return {
    owner: fields.owner,
    customerId: fields.customerId,
    type: fields.type,
    amountMinor: fields.amountMinor,
    feeMinor: fields.feeMinor,
    currency: fields.currency,
    reference: fields.reference,
    paymentId: fields.paymentId,
    transferId: fields.transferId ?? null,
    id,
    status: transactionTable.initial,
    failure: null,
    holdId: null,
    holdStatus: 'none',
    attempt: 1,
    history: [{ status: transactionTable.initial, atMs, attempt: 1, failureCode: null }],
    createdAtMs: atMs,
    updatedAtMs: atMs,
  };
}
