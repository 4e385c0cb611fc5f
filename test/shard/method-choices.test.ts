// methodsFor keeps one answer per (country, KYC level, live or test): the answer must still be exactly
// what the rules and the live coverage say, for each key, and a change of connectors must show at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { methodsFor } from '../../src/shard/lifecycle/rail-requests.ts';
import { setConnectors } from '../../src/rails/coverage.ts';
import { methodRules } from '../../src/catalogue/countries.ts';
import type { Customer } from '../../src/shard/state.ts';

function customer(owner: string, countryCode: string, kycLevel: number): Customer {
  return { id: 'c', owner: owner as Customer['owner'], name: 'N', email: 'n@example.com', phone: '+2348030000000', countryCode, tier: 'tier_1' as Customer['tier'], kycLevel, pinHash: null, wallets: {}, usageDay: 0, usageMinor: {}, createdAtMs: 0, updatedAtMs: 0 };
}

const reasonOf = (c: Customer, method: string): string | null | undefined => methodsFor(c).find((m) => m.method === method)?.reason;

test('method choices: same country and KYC level, test then live owner → each gets its own answer', () => {
  setConnectors([]);
  assert.equal(reasonOf(customer('test:acct_1', 'NG', 3), 'bank_transfer'), null);
  assert.equal(reasonOf(customer('live:acct_1', 'NG', 3), 'bank_transfer'), 'no_live_connector', 'a live owner with no connector is not served');
  assert.equal(reasonOf(customer('test:acct_1', 'NG', 3), 'bank_transfer'), null, 'the live answer did not replace the test one');
});

test('method choices: connectors set after a first answer → the next answer follows them', () => {
  setConnectors([]);
  const live = customer('live:acct_2', 'NG', 3);
  assert.equal(reasonOf(live, 'bank_transfer'), 'no_live_connector');
  setConnectors([{ name: 'bank', rails: ['collection'], methods: ['bank_transfer'], countries: ['NG'], currencies: [], services: [] }]);
  assert.equal(reasonOf(live, 'bank_transfer'), null);
  assert.equal(reasonOf(live, 'card'), 'no_live_connector', 'a method the connector does not declare stays unserved');
  setConnectors([]);
  assert.equal(reasonOf(live, 'bank_transfer'), 'no_live_connector');
});

test('method choices: every country and KYC level 0–3 → the rules of that country, with the KYC reason where it applies', () => {
  setConnectors([]);
  for (const country of ['NG', 'GH', 'KE', 'ZA', 'UG', 'EG']) {
    const rules = methodRules(country);
    for (let kyc = 0; kyc <= 3; kyc += 1) {
      const choices = methodsFor(customer('test:acct_3', country, kyc));
      assert.deepEqual(choices.map((c) => c.method), rules.map((r) => r.method));
      for (const [i, rule] of rules.entries()) {
        const expected = !rule.selectable ? 'funding_instrument' : !rule.enabled ? 'not_enabled_in_country' : kyc < rule.kyc_level_min ? 'kyc_level_too_low' : null;
        assert.equal(choices[i]!.reason, expected, `${country} kyc ${kyc} ${rule.method}`);
        assert.equal(choices[i]!.selectable, expected === null);
      }
    }
  }
  assert.ok(methodRules('NG').some((r) => r.kyc_level_min > 0), 'the fixture has a method that needs KYC, so the KYC reason is exercised');
});

test('method choices: an answer is frozen → a caller cannot change what the next customer is told', () => {
  const choices = methodsFor(customer('test:acct_4', 'NG', 1));
  assert.throws(() => (choices as unknown as Array<unknown>).push({}), TypeError);
  assert.throws(() => { (choices[0] as { selectable: boolean }).selectable = !choices[0]!.selectable; }, TypeError);
});
