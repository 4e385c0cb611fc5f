// Seeded property tests of the ledger: random sequences of post, hold, commit and void over a few
// wallets in three currencies and every kind of system account, checked against a plain model.
// Runs under node:test on the main thread; pure. The generator only issues debits a wallet can cover.
// Invariant checked: per currency debits == credits (posted and pending), no wallet available below zero.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
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
  type AccountKind,
  type CurrencyTotals,
  type LedgerOp,
  type LedgerState,
} from '../../src/ledger/ledger.ts';

const RUNS = { seed: 42, numRuns: 200 } as const;

const WALLETS = [
  { id: 'w0', currency: 'NGN' },
  { id: 'w1', currency: 'NGN' },
  { id: 'w2', currency: 'GHS' },
  { id: 'w3', currency: 'KES' },
] as const;

const SYSTEM_KINDS: ReadonlyArray<Exclude<AccountKind, 'wallet'>> = [
  'collection_clearing',
  'merchant_payable',
  'fees',
  'fx_position',
  'payouts_in_transit',
  'service_payables',
  'partition_clearing',
];

interface Step {
  kind: 'credit' | 'debit' | 'hold' | 'commit' | 'void' | 'system';
  wallet: number;
  amount: number;
  pick: number;
  sys: number;
  sys2: number;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom('credit', 'credit', 'debit', 'hold', 'hold', 'commit', 'void', 'system'),
  wallet: fc.nat({ max: WALLETS.length - 1 }),
  amount: fc.integer({ min: 1, max: 5_000_000 }),
  pick: fc.nat(),
  sys: fc.nat({ max: SYSTEM_KINDS.length - 1 }),
  sys2: fc.nat({ max: SYSTEM_KINDS.length - 1 }),
});

/** What each wallet should show, kept by plain arithmetic, independent of the ledger's counters. */
interface Model {
  balance: Map<string, number>;
  held: Map<string, number>;
  openHolds: Array<{ id: string; wallet: string; amt: number }>;
}

function freshLedger(): LedgerState {
  const ledger = emptyLedger();
  for (const w of WALLETS) ledger.accounts.set(w.id, newAccount(w.id, 'wallet', w.currency));
  return ledger;
}

/** Turns an abstract step into a ledger op the wallet can cover (null when nothing fits), updating the model. */
function opFor(step: Step, index: number, ledger: LedgerState, model: Model): LedgerOp | null {
  const w = WALLETS[step.wallet]!;
  const sys = systemAccountId(SYSTEM_KINDS[step.sys]!, w.currency);
  const account = ledger.accounts.get(w.id)!;
  const id = `op${index}`;
  switch (step.kind) {
    case 'credit':
      model.balance.set(w.id, (model.balance.get(w.id) ?? 0) + step.amount);
      return { op: 'post', id, txn: `t${index}`, dr: sys, cr: w.id, amt: step.amount, cur: w.currency };
    case 'debit':
    case 'hold': {
      const available = availableMinor(account);
      if (available < 1) return null;
      const amt = 1 + (step.amount % available);
      assert.ok(canDebit(account, amt));
      if (step.kind === 'debit') {
        model.balance.set(w.id, (model.balance.get(w.id) ?? 0) - amt);
        return { op: 'post', id, txn: `t${index}`, dr: w.id, cr: sys, amt, cur: w.currency };
      }
      model.held.set(w.id, (model.held.get(w.id) ?? 0) + amt);
      model.openHolds.push({ id, wallet: w.id, amt });
      return { op: 'hold', id, txn: `t${index}`, dr: w.id, cr: sys, amt, cur: w.currency };
    }
    case 'commit':
    case 'void': {
      if (model.openHolds.length === 0) return null;
      const [hold] = model.openHolds.splice(step.pick % model.openHolds.length, 1);
      model.held.set(hold!.wallet, (model.held.get(hold!.wallet) ?? 0) - hold!.amt);
      if (step.kind === 'commit') model.balance.set(hold!.wallet, (model.balance.get(hold!.wallet) ?? 0) - hold!.amt);
      return { op: step.kind, id: hold!.id };
    }
    case 'system': {
      const other = systemAccountId(SYSTEM_KINDS[step.sys2]!, w.currency);
      if (other === sys) return null;
      return { op: 'post', id, txn: `t${index}`, dr: sys, cr: other, amt: step.amount, cur: w.currency };
    }
  }
}

function totalsOf(ledger: LedgerState): Map<string, CurrencyTotals> {
  const totals = new Map<string, CurrencyTotals>();
  addTotals(totals, ledger);
  return totals;
}

function assertSound(ledger: LedgerState, model: Model): void {
  const totals = totalsOf(ledger);
  for (const [currency, t] of totals) {
    assert.equal(t.debitsPosted, t.creditsPosted, `${currency} posted`);
    assert.equal(t.debitsPending, t.creditsPending, `${currency} pending`);
  }
  assert.deepEqual(ledgerViolations(ledger, totals), []);
  for (const w of WALLETS) {
    const account = ledger.accounts.get(w.id)!;
    assert.ok(availableMinor(account) >= 0, `${w.id} available ${availableMinor(account)}`);
    assert.equal(balanceMinor(account), model.balance.get(w.id) ?? 0, `${w.id} balance`);
    assert.equal(account.debitsPending, model.held.get(w.id) ?? 0, `${w.id} held`);
    assert.equal(availableMinor(account), balanceMinor(account) - account.debitsPending, `${w.id} available = balance - held`);
  }
  assert.equal(ledger.holds.size, model.openHolds.length);
}

function run(steps: Step[], check: (ledger: LedgerState, model: Model) => void): { ledger: LedgerState; model: Model } {
  const ledger = freshLedger();
  const model: Model = { balance: new Map(), held: new Map(), openHolds: [] };
  steps.forEach((step, index) => {
    const op = opFor(step, index, ledger, model);
    if (op === null) return;
    applyLedgerOp(ledger, op);
    check(ledger, model);
  });
  return { ledger, model };
}

describe('ledger properties (fast-check, seed 42)', () => {
  it('random post/hold/commit/void: after every op → debits == credits per currency, no wallet below zero, model agrees', () => {
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
      run(steps, assertSound);
    }), RUNS);
  });

  it('random sequences: sum of all balances per currency → zero (money is neither made nor lost)', () => {
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
      const { ledger } = run(steps, () => {});
      const net = new Map<string, number>();
      for (const account of ledger.accounts.values()) net.set(account.currency, (net.get(account.currency) ?? 0) + balanceMinor(account));
      for (const [currency, sum] of net) assert.equal(sum, 0, currency);
    }), RUNS);
  });

  it('random sequences then void every open hold: → no pending left anywhere, available == balance', () => {
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 80 }), (steps) => {
      const { ledger, model } = run(steps, () => {});
      for (const hold of [...model.openHolds]) applyLedgerOp(ledger, { op: 'void', id: hold.id });
      for (const account of ledger.accounts.values()) {
        assert.equal(account.debitsPending, 0, account.id);
        assert.equal(account.creditsPending, 0, account.id);
      }
      for (const w of WALLETS) {
        const account = ledger.accounts.get(w.id)!;
        assert.equal(availableMinor(account), balanceMinor(account));
      }
      assert.deepEqual(ledgerViolations(ledger, totalsOf(ledger)), []);
    }), RUNS);
  });

  it('random sequences then a debit of available + 1: canDebit → false, and applying it throws', () => {
    fc.assert(fc.property(fc.array(stepArb, { maxLength: 60 }), fc.nat({ max: WALLETS.length - 1 }), fc.boolean(), (steps, wi, asHold) => {
      const { ledger } = run(steps, () => {});
      const w = WALLETS[wi]!;
      const account = ledger.accounts.get(w.id)!;
      const over = availableMinor(account) + 1;
      assert.equal(canDebit(account, over), false);
      assert.equal(canDebit(account, over - 1), true);
      const sink = systemAccountId('merchant_payable', w.currency);
      assert.throws(() => applyLedgerOp(ledger, { op: asHold ? 'hold' : 'post', id: 'over', txn: 'over', dr: w.id, cr: sink, amt: over, cur: w.currency }), /below zero/);
    }), RUNS);
  });
});
