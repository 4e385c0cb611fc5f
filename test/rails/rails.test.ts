// The one rail interface: rails.ts chooses the sandbox rail for sandbox owners and a covering connector
// for live ones (never the sandbox for live money); the sandbox rail answers every kind purely, with the
// magic values of the README. Pure unit tests (no server).
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setConnectors } from '../../src/rails/coverage.ts';
import { answerAtOnce, collectionOpening, railFor, screenedBySandbox, SANDBOX_RAIL } from '../../src/rails/rails.ts';
import { sandboxRail } from '../../src/rails/sandbox-rail.ts';
import type { RailRequest } from '../../src/rails/rail.ts';

const AT_MS = Date.UTC(2026, 0, 2, 3, 4, 5);
const ORDER_ID = '01JHMKX8JD0500000000000015';
const ask = (kind: RailRequest['kind'], op: RailRequest['op'], payload: Record<string, unknown>, reference = `${ORDER_ID}:1`) =>
  sandboxRail.call({ kind, op, reference, payload, atMs: AT_MS });

describe('rails.ts: which rail serves an owner', () => {
  after(() => setConnectors([]));

  it('railFor: sandbox owner → sandbox; live owner without a connector → null; with a covering one → its name', () => {
    setConnectors([]);
    assert.equal(railFor('test:acme', 'payout', { method: 'bank_account', country: 'NG', currency: 'NGN' }), SANDBOX_RAIL);
    assert.equal(railFor('live:acme', 'payout', { method: 'bank_account', country: 'NG', currency: 'NGN' }), null);
    setConnectors([
      { name: 'gh-only', rails: ['payout'], methods: [], countries: ['GH'], currencies: [], services: [] },
      { name: 'ng-bank', rails: ['payout', 'collection'], methods: ['bank_account', 'card'], countries: ['NG'], currencies: [], services: [] },
    ]);
    assert.equal(railFor('live:acme', 'payout', { method: 'bank_account', country: 'NG', currency: 'NGN' }), 'ng-bank');
    assert.equal(railFor('live:acme', 'payout', { method: 'mobile_money', country: 'NG', currency: 'NGN' }), null);
    assert.equal(railFor('live:acme', 'fulfilment', { service: 'airtime', country: 'NG' }), null);
  });

  it('railFor fx: a connector must list both currencies of the pair', () => {
    setConnectors([{ name: 'fx', rails: ['fx'], methods: [], countries: [], currencies: ['NGN', 'USD'], services: [] }]);
    assert.equal(railFor('live:acme', 'fx', { currency: 'NGN' }, { currency: 'USD' }), 'fx');
    assert.equal(railFor('live:acme', 'fx', { currency: 'NGN' }, { currency: 'GBP' }), null);
  });

  it('sandbox-only answers: a connector is never answered inline; no screening or opening for live owners', () => {
    assert.equal(answerAtOnce({ rail: 'ng-bank', kind: 'payout', op: 'submit', reference: `${ORDER_ID}:1`, payload: {} }, AT_MS), null);
    assert.deepEqual(answerAtOnce({ rail: SANDBOX_RAIL, kind: 'payout', op: 'submit', reference: `${ORDER_ID}:1`, payload: { beneficiary: { account_number: '0123451234' } } }, AT_MS), { outcome: 'settled', providerReference: null, detail: null });
    assert.equal(screenedBySandbox('test:acme', 'transfer', 666), true);
    assert.equal(screenedBySandbox('live:acme', 'transfer', 666), false);
    assert.equal(screenedBySandbox('test:acme', 'order', 665), false);
    const opening = { paymentId: ORDER_ID, method: 'bank_transfer', customerName: 'Ada Obi', nowMs: AT_MS, ttlMs: 1000, mintId: () => ORDER_ID };
    assert.equal(collectionOpening('live:acme', opening), null);
    assert.equal(collectionOpening('test:acme', opening)?.instructions?.bankName, 'Kobo Sandbox Bank');
  });
});

describe('the sandbox rail', () => {
  it('payout: …9999 failed (PROVIDER_ERROR, with its message); …9998 unknown on submit, settled on requery; others settled', () => {
    const payout = (account: string, op: RailRequest['op'] = 'submit') => ask('payout', op, { beneficiary: { account_number: account } });
    assert.deepEqual(payout('0123459999'), { outcome: 'failed', providerReference: null, failureCode: 'PROVIDER_ERROR', message: 'The payout rail rejected the transfer.' });
    assert.deepEqual(payout('0123459998'), { outcome: 'unknown' });
    assert.equal(payout('0123459998', 'requery').outcome, 'settled');
    assert.equal(payout('0123451234').outcome, 'settled');
  });

  it('fulfilment: 0000 failed, 0001 unknown then delivered on requery (stamped with the request instant), 0003 funding failure, 0004 manual review, 0005 retry then delivered', () => {
    const purchase = (phone: string, op: RailRequest['op'] = 'submit', attempt = 1) =>
      ask('fulfilment', op, { service_code: 'airtime', country_code: 'NG', operator_code: 'MTN', product_code: null, meter_type: null, recipient: phone, amount_minor: 20_000, currency: 'NGN' }, `${ORDER_ID}:${attempt}`);
    assert.deepEqual(purchase('+2348031000000'), { outcome: 'failed', providerReference: null, failureCode: 'PROVIDER_ERROR', message: 'The fulfilment rail refused the purchase.' });
    assert.deepEqual(purchase('+2348031000001'), { outcome: 'unknown' });
    const found = purchase('+2348031000001', 'requery');
    assert.equal(found.outcome, 'settled');
    assert.equal(found.outcome === 'settled' ? found.detail?.delivered_at : null, new Date(AT_MS).toISOString());
    assert.deepEqual(purchase('+2348031000003'), { outcome: 'failed', providerReference: null, failureCode: 'provider_funding_failure', message: 'The rail could not fund the purchase.' });
    assert.deepEqual(purchase('+2348031000004'), { outcome: 'accepted', providerReference: null, checkoutUrl: null, manualReview: true });
    assert.deepEqual(purchase('+2348031000005'), { outcome: 'failed', providerReference: null, failureCode: 'retry_required' });
    assert.equal(purchase('+2348031000005', 'submit', 2).outcome, 'settled');
  });

  it('resolve: 0000000000 fails verification; a service recipient ending 0002 is not found; fx: a mid rate from the reference table', () => {
    assert.equal(ask('resolve', 'submit', { account: { account_number: '0000000000' } }).outcome, 'failed');
    const named = ask('resolve', 'submit', { account: { account_number: '0123456789' } });
    assert.equal(named.outcome === 'settled' && typeof named.detail?.account_name, 'string');
    assert.deepEqual(ask('resolve', 'submit', { account: { type: 'service', service_code: 'electricity', country: 'NG', operator_code: 'IKEDC', account_ref: '45012340002', meter_type: 'prepaid' } }), { outcome: 'failed', providerReference: null, failureCode: 'account_not_found' });
    const rate = ask('fx', 'submit', { from_currency: 'NGN', to_currency: 'USD' });
    assert.equal(rate.outcome, 'settled');
    assert.match(String(rate.outcome === 'settled' ? rate.detail?.mid_rate : ''), /^\d+\.\d+$/);
  });
});
