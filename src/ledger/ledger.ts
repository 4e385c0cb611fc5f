// Double-entry, two-phase ledger of one partition: accounts, holds (pending postings), posts and voids.
// Runs inside a shard worker; pure (no clock, no I/O). Every op moves the same amount on both sides,
// so per currency debits always equal credits; a wallet's debits never exceed its posted credits.
import assert from 'node:assert/strict';

export type AccountKind =
  | 'wallet'
  | 'collection_clearing'
  | 'merchant_payable'
  | 'fees'
  | 'fx_position'
  | 'payouts_in_transit'
  | 'service_payables'
  | 'partition_clearing';

export interface LedgerAccount {
  id: string;
  kind: AccountKind;
  currency: string;
  debitsPending: number;
  debitsPosted: number;
  creditsPending: number;
  creditsPosted: number;
}

/** A posting as recorded in the WAL. `hold` is the pending phase of a two-phase posting. */
export type LedgerOp =
  | { op: 'post' | 'hold'; id: string; txn: string; dr: string; cr: string; amt: number; cur: string }
  | { op: 'commit' | 'void'; id: string };

export interface Hold {
  id: string;
  txn: string;
  dr: string;
  cr: string;
  amt: number;
  cur: string;
}

export interface LedgerState {
  accounts: Map<string, LedgerAccount>;
  holds: Map<string, Hold>;
}

export function emptyLedger(): LedgerState {
  return { accounts: new Map(), holds: new Map() };
}

export function systemAccountId(kind: Exclude<AccountKind, 'wallet'>, currency: string): string {
  return `sys:${kind}:${currency}`;
}

export function newAccount(id: string, kind: AccountKind, currency: string): LedgerAccount {
  return { id, kind, currency, debitsPending: 0, debitsPosted: 0, creditsPending: 0, creditsPosted: 0 };
}

/** Posted credits less posted debits: what the wallet holds. */
export function balanceMinor(account: LedgerAccount): number {
  return account.creditsPosted - account.debitsPosted;
}

/** Balance less holds: what the wallet can spend now. */
export function availableMinor(account: LedgerAccount): number {
  return account.creditsPosted - account.debitsPosted - account.debitsPending;
}

function checkedAdd(a: number, b: number): number {
  const sum = a + b;
  assert(Number.isSafeInteger(sum), `ledger: amount overflow (${a} + ${b})`);
  return sum;
}

function resolveAccount(ledger: LedgerState, id: string, currency: string): LedgerAccount {
  let account = ledger.accounts.get(id);
  if (account === undefined) {
    // System accounts are created on first use so that replay creates them at the same point.
    const match = /^sys:([a-z_]+):([A-Z]{3})$/.exec(id);
    assert(match !== null, `ledger: unknown account ${id}`);
    account = newAccount(id, match[1] as AccountKind, currency);
    ledger.accounts.set(id, account);
  }
  assert(account.currency === currency, `ledger: ${id} is ${account.currency}, posting is ${currency}`);
  return account;
}

/** True when `amount` may be debited (held or posted) from the account without going below zero. */
export function canDebit(account: LedgerAccount, amountMinor: number): boolean {
  if (account.kind !== 'wallet') return true;
  return availableMinor(account) >= amountMinor;
}

function assertWalletNotNegative(account: LedgerAccount): void {
  if (account.kind !== 'wallet') return;
  assert(availableMinor(account) >= 0, `ledger: wallet ${account.id} available below zero`);
}

export function applyLedgerOp(ledger: LedgerState, op: LedgerOp): void {
  if (op.op === 'post' || op.op === 'hold') {
    assert(Number.isSafeInteger(op.amt) && op.amt > 0, `ledger: bad amount ${op.amt}`);
    assert(op.dr !== op.cr, 'ledger: debit and credit accounts are the same');
    const dr = resolveAccount(ledger, op.dr, op.cur);
    const cr = resolveAccount(ledger, op.cr, op.cur);
    if (op.op === 'post') {
      dr.debitsPosted = checkedAdd(dr.debitsPosted, op.amt);
      cr.creditsPosted = checkedAdd(cr.creditsPosted, op.amt);
    } else {
      assert(!ledger.holds.has(op.id), `ledger: hold ${op.id} exists`);
      dr.debitsPending = checkedAdd(dr.debitsPending, op.amt);
      cr.creditsPending = checkedAdd(cr.creditsPending, op.amt);
      ledger.holds.set(op.id, { id: op.id, txn: op.txn, dr: op.dr, cr: op.cr, amt: op.amt, cur: op.cur });
    }
    assertWalletNotNegative(dr);
    return;
  }
  const hold = ledger.holds.get(op.id);
  assert(hold !== undefined, `ledger: no hold ${op.id} to ${op.op}`);
  const dr = resolveAccount(ledger, hold.dr, hold.cur);
  const cr = resolveAccount(ledger, hold.cr, hold.cur);
  dr.debitsPending -= hold.amt;
  cr.creditsPending -= hold.amt;
  if (op.op === 'commit') {
    dr.debitsPosted = checkedAdd(dr.debitsPosted, hold.amt);
    cr.creditsPosted = checkedAdd(cr.creditsPosted, hold.amt);
  }
  ledger.holds.delete(op.id);
  assertWalletNotNegative(dr);
}

export interface CurrencyTotals {
  debitsPosted: bigint;
  creditsPosted: bigint;
  debitsPending: bigint;
  creditsPending: bigint;
}

/** Adds one partition's accounts into per-currency totals (bigint: sums of many accounts can pass 2^53). */
export function addTotals(into: Map<string, CurrencyTotals>, ledger: LedgerState): void {
  for (const account of ledger.accounts.values()) {
    let totals = into.get(account.currency);
    if (totals === undefined) {
      totals = { debitsPosted: 0n, creditsPosted: 0n, debitsPending: 0n, creditsPending: 0n };
      into.set(account.currency, totals);
    }
    totals.debitsPosted += BigInt(account.debitsPosted);
    totals.creditsPosted += BigInt(account.creditsPosted);
    totals.debitsPending += BigInt(account.debitsPending);
    totals.creditsPending += BigInt(account.creditsPending);
  }
}

/** Every broken ledger invariant, as sentences; empty when the ledger is sound. */
export function ledgerViolations(ledger: LedgerState, totals?: Map<string, CurrencyTotals>): string[] {
  const violations: string[] = [];
  for (const account of ledger.accounts.values()) {
    if (account.kind === 'wallet' && availableMinor(account) < 0) {
      violations.push(`wallet ${account.id} available ${availableMinor(account)} < 0`);
    }
    if (account.debitsPending < 0 || account.creditsPending < 0) {
      violations.push(`account ${account.id} has negative pending amounts`);
    }
  }
  const pendingByAccount = new Map<string, number>();
  for (const hold of ledger.holds.values()) {
    pendingByAccount.set(hold.dr, (pendingByAccount.get(hold.dr) ?? 0) + hold.amt);
  }
  for (const account of ledger.accounts.values()) {
    if ((pendingByAccount.get(account.id) ?? 0) !== account.debitsPending) {
      violations.push(`account ${account.id} debits_pending does not equal its open holds`);
    }
  }
  if (totals !== undefined) {
    for (const [currency, t] of totals) {
      if (t.debitsPosted !== t.creditsPosted) violations.push(`${currency}: posted debits ${t.debitsPosted} != credits ${t.creditsPosted}`);
      if (t.debitsPending !== t.creditsPending) violations.push(`${currency}: pending debits ${t.debitsPending} != credits ${t.creditsPending}`);
    }
  }
  return violations;
}
