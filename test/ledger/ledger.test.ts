// Covers the two-phase, double-entry ledger op by op: post, hold, commit, void, and the invariant checks.
// Runs under node:test on the main thread; pure (no clock, no I/O).
// Invariant checked: each op moves the four counters of both accounts by the same amount; a wallet never
// goes below zero available; ledgerViolations reports every corrupted counter.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  addTotals,
  applyLedgerOp,
  availableMinor,
  balanceMinor,
  canDebit,
  emptyLedger,
  ledgerViolations,
  newAccount,
  systemAccountId,
  type CurrencyTotals,
  type LedgerAccount,
  type LedgerState,
} from '../../src/ledger/ledger.ts';

const CLEARING = systemAccountId('collection_clearing', 'NGN');
const MERCHANT = systemAccountId('merchant_payable', 'NGN');

function counters(account: LedgerAccount | undefined): [number, number, number, number] {
  assert.ok(account, 'account exists');
  return [account.debitsPending, account.debitsPosted, account.creditsPending, account.creditsPosted];
}

/** A ledger with wallet `w1` (NGN) funded with `funded` minor units from collection clearing. */
function fundedLedger(funded: number): LedgerState {
  const ledger = emptyLedger();
  ledger.accounts.set('w1', newAccount('w1', 'wallet', 'NGN'));
  if (funded > 0) applyLedgerOp(ledger, { op: 'post', id: 'p0', txn: 't0', dr: CLEARING, cr: 'w1', amt: funded, cur: 'NGN' });
  return ledger;
}

function wallet(ledger: LedgerState, id = 'w1'): LedgerAccount {
  const account = ledger.accounts.get(id);
  assert.ok(account);
  return account;
}

function totalsOf(ledger: LedgerState): Map<string, CurrencyTotals> {
  const totals = new Map<string, CurrencyTotals>();
  addTotals(totals, ledger);
  return totals;
}

describe('ledger: ops', () => {
  it('systemAccountId: fees in NGN → sys:fees:NGN', () => {
    assert.equal(systemAccountId('fees', 'NGN'), 'sys:fees:NGN');
  });

  it('post: clearing → wallet 10 000 → wallet creditsPosted 10 000, clearing debitsPosted 10 000, balance 10 000', () => {
    const ledger = fundedLedger(10_000);
    assert.deepEqual(counters(ledger.accounts.get('w1')), [0, 0, 0, 10_000]);
    assert.deepEqual(counters(ledger.accounts.get(CLEARING)), [0, 10_000, 0, 0]);
    assert.equal(balanceMinor(wallet(ledger)), 10_000);
    assert.equal(availableMinor(wallet(ledger)), 10_000);
  });

  it('post: to a system account not yet seen → account created on first use with kind and currency', () => {
    const ledger = fundedLedger(500);
    const clearing = ledger.accounts.get(CLEARING);
    assert.ok(clearing);
    assert.equal(clearing.kind, 'collection_clearing');
    assert.equal(clearing.currency, 'NGN');
  });

  it('hold: 4 000 of 10 000 → wallet debitsPending 4 000, merchant creditsPending 4 000, available 6 000, balance 10 000', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 4_000, cur: 'NGN' });
    assert.deepEqual(counters(ledger.accounts.get('w1')), [4_000, 0, 0, 10_000]);
    assert.deepEqual(counters(ledger.accounts.get(MERCHANT)), [0, 0, 4_000, 0]);
    assert.equal(availableMinor(wallet(ledger)), 6_000);
    assert.equal(balanceMinor(wallet(ledger)), 10_000);
    assert.deepEqual(ledger.holds.get('h1'), { id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 4_000, cur: 'NGN' });
  });

  it('commit: a 4 000 hold → pending moved to posted on both sides, hold removed, balance 6 000', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 4_000, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'commit', id: 'h1' });
    assert.deepEqual(counters(ledger.accounts.get('w1')), [0, 4_000, 0, 10_000]);
    assert.deepEqual(counters(ledger.accounts.get(MERCHANT)), [0, 0, 0, 4_000]);
    assert.equal(ledger.holds.size, 0);
    assert.equal(balanceMinor(wallet(ledger)), 6_000);
    assert.equal(availableMinor(wallet(ledger)), 6_000);
  });

  it('void: a 4 000 hold → pending released on both sides, nothing posted, available back to 10 000', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 4_000, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'void', id: 'h1' });
    assert.deepEqual(counters(ledger.accounts.get('w1')), [0, 0, 0, 10_000]);
    assert.deepEqual(counters(ledger.accounts.get(MERCHANT)), [0, 0, 0, 0]);
    assert.equal(ledger.holds.size, 0);
    assert.equal(availableMinor(wallet(ledger)), 10_000);
  });

  it('commit or void: a hold already committed → throws (a hold is posted or voided once)', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 4_000, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'commit', id: 'h1' });
    assert.throws(() => applyLedgerOp(ledger, { op: 'commit', id: 'h1' }), /no hold h1/);
    assert.throws(() => applyLedgerOp(ledger, { op: 'void', id: 'h1' }), /no hold h1/);
  });

  it('hold: a second hold with the same id → throws', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 1_000, cur: 'NGN' });
    assert.throws(() => applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 1_000, cur: 'NGN' }), /exists/);
  });

  it('hold: beyond available (10 001 of 10 000) → throws (assertion: wallet below zero)', () => {
    const ledger = fundedLedger(10_000);
    assert.throws(
      () => applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 10_001, cur: 'NGN' }),
      (error: unknown) => error instanceof assert.AssertionError && /available below zero/.test(error.message),
    );
  });

  it('hold: beyond what an earlier hold left available → throws', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 6_000, cur: 'NGN' });
    assert.throws(() => applyLedgerOp(ledger, { op: 'hold', id: 'h2', txn: 't2', dr: 'w1', cr: MERCHANT, amt: 4_001, cur: 'NGN' }), /below zero/);
  });

  it('post: a wallet debit beyond its balance → throws', () => {
    const ledger = fundedLedger(100);
    assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 101, cur: 'NGN' }), /below zero/);
  });

  it('post: system accounts may go below zero (clearing pays out before it is funded) → no throw', () => {
    const ledger = emptyLedger();
    applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't1', dr: CLEARING, cr: MERCHANT, amt: 5, cur: 'NGN' });
    assert.equal(balanceMinor(wallet(ledger, CLEARING)), -5);
  });

  it('post: amount 0, negative, fractional or unsafe → throws', () => {
    const ledger = fundedLedger(10_000);
    for (const amt of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 1]) {
      assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: `p${amt}`, txn: 't', dr: CLEARING, cr: 'w1', amt, cur: 'NGN' }), /bad amount/, String(amt));
    }
  });

  it('post: debit and credit the same account → throws', () => {
    const ledger = fundedLedger(10_000);
    assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't', dr: 'w1', cr: 'w1', amt: 1, cur: 'NGN' }), /same/);
  });

  it('post: currency differs from the account (GHS into an NGN wallet) → throws', () => {
    const ledger = fundedLedger(0);
    assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't', dr: systemAccountId('collection_clearing', 'GHS'), cr: 'w1', amt: 1, cur: 'GHS' }), /is NGN/);
  });

  it('post: an unknown non-system account → throws', () => {
    const ledger = fundedLedger(0);
    assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't', dr: CLEARING, cr: 'nobody', amt: 1, cur: 'NGN' }), /unknown account/);
  });

  it('post: a sum past 2^53 → throws (checked add)', () => {
    const ledger = fundedLedger(Number.MAX_SAFE_INTEGER);
    assert.throws(() => applyLedgerOp(ledger, { op: 'post', id: 'p1', txn: 't', dr: CLEARING, cr: 'w1', amt: 1, cur: 'NGN' }), /overflow/);
  });
});

describe('ledger: canDebit', () => {
  it('canDebit: wallet with 10 000 available → 10 000 true, 10 001 false', () => {
    const ledger = fundedLedger(10_000);
    assert.equal(canDebit(wallet(ledger), 10_000), true);
    assert.equal(canDebit(wallet(ledger), 10_001), false);
  });

  it('canDebit: wallet with 10 000 and a 3 000 hold → 7 000 true, 7 001 false', () => {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 3_000, cur: 'NGN' });
    assert.equal(canDebit(wallet(ledger), 7_000), true);
    assert.equal(canDebit(wallet(ledger), 7_001), false);
  });

  it('canDebit: empty wallet → false for 1', () => {
    assert.equal(canDebit(newAccount('w', 'wallet', 'NGN'), 1), false);
  });

  it('canDebit: a system account → always true', () => {
    assert.equal(canDebit(newAccount(CLEARING, 'collection_clearing', 'NGN'), 1_000_000_000), true);
  });
});

describe('ledger: totals and violations', () => {
  function soundLedger(): LedgerState {
    const ledger = fundedLedger(10_000);
    applyLedgerOp(ledger, { op: 'post', id: 'fee', txn: 't0', dr: CLEARING, cr: systemAccountId('fees', 'NGN'), amt: 100, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'hold', id: 'h1', txn: 't1', dr: 'w1', cr: MERCHANT, amt: 2_500, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'hold', id: 'h2', txn: 't2', dr: 'w1', cr: MERCHANT, amt: 1_500, cur: 'NGN' });
    applyLedgerOp(ledger, { op: 'commit', id: 'h2' });
    return ledger;
  }

  it('addTotals: a sound ledger → posted debits == credits and pending debits == credits', () => {
    const totals = totalsOf(soundLedger());
    assert.deepEqual(totals.get('NGN'), { debitsPosted: 11_600n, creditsPosted: 11_600n, debitsPending: 2_500n, creditsPending: 2_500n });
  });

  it('addTotals: two partitions added into one map → sums per currency', () => {
    const totals = new Map<string, CurrencyTotals>();
    addTotals(totals, fundedLedger(7));
    addTotals(totals, fundedLedger(5));
    assert.equal(totals.get('NGN')?.creditsPosted, 12n);
    assert.equal(totals.get('NGN')?.debitsPosted, 12n);
  });

  it('ledgerViolations: a sound ledger with holds, commits and fees → empty', () => {
    const ledger = soundLedger();
    assert.deepEqual(ledgerViolations(ledger, totalsOf(ledger)), []);
  });

  it('ledgerViolations: wallet creditsPosted lowered below its debits → wallet available below zero reported', () => {
    const ledger = soundLedger();
    wallet(ledger).creditsPosted = 1_000;
    const violations = ledgerViolations(ledger, totalsOf(ledger));
    assert.ok(violations.some((v) => /wallet w1 available -?\d+ < 0/.test(v)), violations.join('; '));
    assert.ok(violations.some((v) => /NGN: posted debits/.test(v)), violations.join('; '));
  });

  it('ledgerViolations: wallet debitsPending edited without a hold → debits_pending mismatch reported', () => {
    const ledger = soundLedger();
    wallet(ledger).debitsPending += 1;
    const violations = ledgerViolations(ledger, totalsOf(ledger));
    assert.ok(violations.some((v) => /w1 debits_pending does not equal its open holds/.test(v)), violations.join('; '));
    assert.ok(violations.some((v) => /NGN: pending debits/.test(v)), violations.join('; '));
  });

  it('ledgerViolations: a negative creditsPending → negative pending reported', () => {
    const ledger = soundLedger();
    wallet(ledger, MERCHANT).creditsPending = -1;
    const violations = ledgerViolations(ledger);
    assert.ok(violations.some((v) => v.includes(`${MERCHANT} has negative pending amounts`)), violations.join('; '));
  });

  it('ledgerViolations: system account debitsPosted corrupted → unbalanced currency reported only with totals', () => {
    const ledger = soundLedger();
    wallet(ledger, CLEARING).debitsPosted += 1;
    assert.deepEqual(ledgerViolations(ledger), []);
    assert.deepEqual(ledgerViolations(ledger, totalsOf(ledger)), ['NGN: posted debits 11601 != credits 11600']);
  });

  it('ledgerViolations: a hold dropped from the map while its pending stays → mismatch reported', () => {
    const ledger = soundLedger();
    ledger.holds.delete('h1');
    assert.ok(ledgerViolations(ledger).some((v) => v.includes('w1 debits_pending')));
  });
});
