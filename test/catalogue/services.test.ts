// The services catalogue as a pure module: per-country offers, operators by number prefix, plans and
// the open_amount plan, variants, fees and promotions in integer arithmetic, eligibility, maintenance
// windows, customer resolution, phone checks and the deterministic sandbox rail.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import servicesJson from '../../data/reference/services.json' with { type: 'json' };
import operatorsJson from '../../data/reference/services/operators.json' with { type: 'json' };
import {
  acceptedPaymentMethods,
  countryService,
  eligibleServiceCountries,
  findOperator,
  findPlan,
  inMaintenance,
  isServiceCode,
  maintenanceEndsAtMs,
  marketService,
  nextMaintenanceStartMs,
  operatorForPhone,
  operatorsOf,
  plansOf,
  plansOfKind,
  promotionDiscountMinor,
  serviceEligible,
  serviceFeeMinor,
  variantsOf,
  SERVICE_CODES,
  type ServiceCode,
} from '../../src/catalogue/services.ts';
import { catalogueFor, pickerFor, purchaseRejection, resolveAccess } from '../../src/catalogue/services-resolve.ts';
import { validatePhone } from '../../src/catalogue/services-phone.ts';
import { fulfilmentOutcome, fulfilmentSnapshot, lookupAccount, railDown, requeryOutcome, setRailDown, RAIL_SWITCHES_MAX } from '../../src/rails/sandbox-services.ts';

const MARKETS = ['NG', 'GH', 'KE', 'ZA', 'UG', 'US', 'GB'] as const;
const offered = (country: string): string[] => SERVICE_CODES.filter((code) => countryService(country, code) !== undefined);
const at = (hh: number, mm: number, ss = 0): number => Date.UTC(2025, 5, 10, hh, mm, ss);

describe('catalogue per country', () => {
  it('countryService: every market → exactly the services data/reference/services.json lists for it', () => {
    const listed = servicesJson as Record<string, Array<{ service_code: string }>>;
    for (const country of MARKETS) {
      assert.deepEqual(offered(country).sort(), (listed[country] ?? []).map((s) => s.service_code).sort(), country);
    }
  });

  it('countryService: the five African markets → five different service sets', () => {
    const sets = ['NG', 'GH', 'KE', 'ZA', 'UG'].map((c) => offered(c).sort().join(','));
    assert.equal(new Set(sets).size, 5, sets.join(' | '));
    assert.equal(countryService('KE', 'education'), undefined, 'KE sells no exam PINs');
    assert.equal(countryService('UG', 'betting'), undefined);
    assert.equal(countryService('ZA', 'water'), undefined);
    assert.equal(countryService('NG', 'insurance')?.currency, 'NGN');
  });

  it('countryService: spec pricing and recipient per service → open for airtime/electricity/water/betting, fixed otherwise', () => {
    const open = new Set(['airtime', 'electricity', 'water', 'betting']);
    for (const code of offered('NG')) {
      const svc = countryService('NG', code)!;
      assert.equal(svc.pricing, open.has(code) ? 'open' : 'fixed', code);
      assert.ok(Number.isSafeInteger(svc.minAmountMinor) && svc.minAmountMinor >= 1 && svc.minAmountMinor <= svc.maxAmountMinor, code);
    }
    assert.equal(countryService('NG', 'airtime')!.recipient, 'phone');
    assert.equal(countryService('NG', 'electricity')!.recipient, 'meter');
    assert.equal(countryService('NG', 'tv')!.recipient, 'smartcard');
    assert.equal(countryService('NG', 'gift_cards')!.recipient, 'email');
  });

  it('countryService: states → KE insurance coming_soon, GH betting maintenance, US airtime unavailable, NG airtime active', () => {
    assert.equal(countryService('KE', 'insurance')!.state, 'coming_soon');
    assert.equal(countryService('GH', 'betting')!.state, 'maintenance');
    assert.equal(countryService('US', 'airtime')!.state, 'unavailable');
    assert.equal(countryService('NG', 'airtime')!.state, 'active');
  });

  it('isServiceCode: the ten spec codes → true; anything else → false', () => {
    for (const code of SERVICE_CODES) assert.ok(isServiceCode(code));
    for (const code of ['Airtime', 'gift-cards', 'quote', '']) assert.equal(isServiceCode(code), false, code);
  });

  it('steps: NG electricity → operator, variant, account_ref, amount; NG water (no meter types) → no variant step', () => {
    assert.deepEqual(marketService('NG', 'electricity')!.steps, ['operator', 'variant', 'account_ref', 'amount']);
    assert.deepEqual(marketService('NG', 'water')!.steps, ['operator', 'account_ref', 'amount']);
    assert.deepEqual(marketService('KE', 'water')!.steps, ['operator', 'variant', 'account_ref', 'amount']);
    assert.deepEqual(marketService('NG', 'airtime')!.steps, ['operator', 'phone', 'amount']);
    assert.deepEqual(marketService('NG', 'tv')!.steps, ['operator', 'plan', 'account_ref']);
  });
});

describe('operators', () => {
  it('operatorsOf: NG airtime → MTN, AIRTEL, GLO, 9MOBILE; NG tv → DSTV, GOTV, STARTIMES; no prefixes leak', () => {
    assert.deepEqual(operatorsOf('NG', 'airtime').map((o) => o.code), ['MTN', 'AIRTEL', 'GLO', '9MOBILE']);
    assert.deepEqual(operatorsOf('NG', 'tv').map((o) => o.code), ['DSTV', 'GOTV', 'STARTIMES']);
    assert.deepEqual(Object.keys(operatorsOf('NG', 'airtime')[0]!).sort(), ['code', 'country', 'service_code', 'title']);
    assert.deepEqual(operatorsOf('ZA', 'electricity').map((o) => o.code), ['ESKOM', 'CITYPOWER', 'CAPETOWN']);
    assert.deepEqual(operatorsOf('NG', 'education').map((o) => o.code), ['WAEC', 'NECO', 'JAMB']);
  });

  it('operators: one code → one title in every country and service', () => {
    const titles = new Map<string, Set<string>>();
    for (const country of MARKETS) {
      for (const code of offered(country)) {
        for (const op of operatorsOf(country, code as ServiceCode)) titles.set(op.code, (titles.get(op.code) ?? new Set()).add(op.title));
      }
    }
    for (const [code, seen] of titles) assert.equal(seen.size, 1, `${code}: ${[...seen].join(' / ')}`);
    assert.equal(findOperator('GH', 'internet', 'TELECEL')?.title, findOperator('GH', 'airtime', 'TELECEL')?.title);
  });

  it('operatorForPhone: NG numbers by prefix → MTN 0803, AIRTEL 0802, GLO 0805, 9MOBILE 0809', () => {
    const cases: Array<[string, string]> = [['+2348031234567', 'MTN'], ['+2348021234567', 'AIRTEL'], ['+2348051234567', 'GLO'], ['+2348091234567', '9MOBILE'], ['+2349161234567', 'MTN'], ['+2349071234567', 'AIRTEL']];
    for (const [phone, op] of cases) assert.equal(operatorForPhone('NG', 'airtime', phone)?.code, op, phone);
  });

  it('operatorForPhone: five-digit prefix 07025 → MTN, while unallocated 07021 → undefined', () => {
    assert.equal(operatorForPhone('NG', 'data', '+2347025123456')?.code, 'MTN');
    assert.equal(operatorForPhone('NG', 'data', '+2347021123456'), undefined);
  });

  it('operatorForPhone: other markets → GH TELECEL 020, KE SAFARICOM 0110 and AIRTEL 0100, UG AIRTEL 070, ZA VODACOM 082 and TELKOM 0811', () => {
    assert.equal(operatorForPhone('GH', 'airtime', '+233201234567')?.code, 'TELECEL');
    assert.equal(operatorForPhone('GH', 'airtime', '+233271234567')?.code, 'AT');
    assert.equal(operatorForPhone('KE', 'airtime', '+254110123456')?.code, 'SAFARICOM');
    assert.equal(operatorForPhone('KE', 'airtime', '+254100123456')?.code, 'AIRTEL');
    assert.equal(operatorForPhone('KE', 'airtime', '+254771234567')?.code, 'TELKOM');
    assert.equal(operatorForPhone('UG', 'airtime', '+256701234567')?.code, 'AIRTEL');
    assert.equal(operatorForPhone('UG', 'airtime', '+256772123456')?.code, 'MTN');
    assert.equal(operatorForPhone('ZA', 'airtime', '+27821234567')?.code, 'VODACOM');
    assert.equal(operatorForPhone('ZA', 'airtime', '+27811234567')?.code, 'TELKOM');
  });

  it('operatorForPhone: a number of another country, or a service without networks → undefined', () => {
    assert.equal(operatorForPhone('NG', 'airtime', '+233241234567'), undefined);
    assert.equal(operatorForPhone('NG', 'electricity', '+2348031234567'), undefined);
    assert.equal(operatorForPhone('US', 'airtime', '+12025550123'), undefined);
  });

  it('network prefixes: no prefix belongs to two networks of one country', () => {
    const file = operatorsJson as unknown as Record<string, { networks: Array<{ code: string; prefixes?: string[] }> }>;
    for (const [country, entry] of Object.entries(file)) {
      if (country === '_comment') continue;
      const { networks } = entry;
      const all = networks.flatMap((n) => n.prefixes ?? []);
      assert.equal(new Set(all).size, all.length, country);
    }
  });
});

describe('plans and variants', () => {
  it('plansOf: open-amount services (airtime, electricity, water, betting) → the single open_amount plan, amount null', () => {
    for (const [code, operator] of [['airtime', 'MTN'], ['electricity', 'IKEDC'], ['water', 'LSWC'], ['betting', 'BET9JA']] as const) {
      const plans = plansOf('NG', code, operator);
      assert.equal(plans.length, 1, code);
      assert.deepEqual({ ...plans[0] }, {
        code: 'open_amount', title: 'Enter an amount', operator_code: operator, service_code: code, country: 'NG',
        amount_minor: null, currency: 'NGN', validity: null, category: 'others', pricing: 'open',
      });
    }
    assert.equal(findPlan('NG', 'airtime', 'open_amount')?.pricing, 'open');
    assert.equal(findPlan('NG', 'data', 'open_amount'), undefined, 'fixed-price services have no open_amount');
  });

  it('plansOf: fixed-price plans → integer amounts within the service limits, country currency, one operator each', () => {
    for (const country of MARKETS) {
      for (const code of offered(country)) {
        const svc = countryService(country, code)!;
        if (svc.pricing === 'open') continue;
        const plans = plansOf(country, code as ServiceCode, null);
        assert.ok(plans.length > 0, `${country} ${code}`);
        assert.equal(new Set(plans.map((p) => p.code)).size, plans.length, `${country} ${code}: plan codes unique`);
        for (const plan of plans) {
          assert.ok(Number.isSafeInteger(plan.amount_minor) && plan.amount_minor! >= svc.minAmountMinor && plan.amount_minor! <= svc.maxAmountMinor, plan.code);
          assert.equal(plan.currency, svc.currency);
          assert.equal(plan.pricing, 'fixed');
          assert.ok(plan.operator_code !== null && findOperator(country, code as ServiceCode, plan.operator_code), plan.code);
        }
      }
    }
  });

  it('plansOf: operator filter → only that operator; kind packages → add-ons, absent from plans', () => {
    assert.ok(plansOf('NG', 'data', 'GLO').every((p) => p.operator_code === 'GLO'));
    const packages = plansOfKind('NG', 'tv', 'DSTV', 'packages').map((p) => p.code);
    assert.deepEqual(packages, ['dstv-xtraview', 'dstv-french-touch']);
    assert.ok(!plansOf('NG', 'tv', 'DSTV').some((p) => packages.includes(p.code)));
    assert.equal(findPlan('NG', 'tv', 'dstv-xtraview')?.amount_minor, 600000, 'a package is still a product_code');
  });

  it('pickerFor: NG MTN data (14 plans, 4 categories) → tabs in daily, weekly, monthly, others order; 9MOBILE (5) → select', () => {
    assert.deepEqual(pickerFor(plansOf('NG', 'data', 'MTN')), { picker: 'tabs', categories: ['daily', 'weekly', 'monthly', 'others'] });
    assert.deepEqual(pickerFor(plansOf('NG', 'data', '9MOBILE')), { picker: 'select', categories: ['daily', 'monthly'] });
    assert.equal(pickerFor(plansOf('ZA', 'tv', 'DSTV')).picker, 'select', 'one category is never tabs');
  });

  it('variantsOf: NG electricity → prepaid, postpaid; UG → prepaid only; NG water → []; airtime → []', () => {
    assert.deepEqual(variantsOf('NG', 'electricity').map((v) => v.code), ['prepaid', 'postpaid']);
    assert.deepEqual(variantsOf('UG', 'electricity').map((v) => v.code), ['prepaid']);
    assert.deepEqual(variantsOf('NG', 'water'), []);
    assert.deepEqual(variantsOf('KE', 'water').map((v) => v.code), ['prepaid', 'postpaid']);
    assert.deepEqual(variantsOf('NG', 'airtime'), []);
  });
});

describe('fees and promotions', () => {
  it('serviceFeeMinor: NG electricity by card → ₦100 flat + 1.5% rounded down, capped at ₦2,000', () => {
    assert.equal(serviceFeeMinor('NG', 'electricity', 'card', 1_000_000), 10_000 + 15_000);
    assert.equal(serviceFeeMinor('NG', 'electricity', 'card', 1_000_033), 10_000 + 15_000, '1.5% of 1,000,033 is 15,000.495 → 15,000');
    assert.equal(serviceFeeMinor('NG', 'electricity', 'card', 10_000_000), 10_000 + 150_000);
    assert.equal(serviceFeeMinor('NG', 'electricity', 'card', 20_000_000), 200_000, '₦100 + ₦3,000 is capped at ₦2,000');
    assert.equal(serviceFeeMinor('NG', 'airtime', 'wallet', 50_000), 0);
    assert.equal(serviceFeeMinor('KE', 'electricity', 'card', 100_000), 1_000 + 2_900);
  });

  it('serviceFeeMinor: any amount → a non-negative integer, never above the cap, never decreasing as the amount grows', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 ** 12 }), fc.integer({ min: 1, max: 10 ** 12 }), (a, b) => {
      const [lo, hi] = a <= b ? [a, b] : [b, a];
      const feeLo = serviceFeeMinor('NG', 'tv', 'bank_transfer', lo);
      const feeHi = serviceFeeMinor('NG', 'tv', 'bank_transfer', hi);
      return Number.isSafeInteger(feeLo) && feeLo >= 0 && feeHi <= 100_000 && feeLo <= feeHi;
    }), { seed: 20250610, numRuns: 500 });
  });

  it('serviceFeeMinor: a method the service does not accept (NG betting by card) or a bad amount → RangeError', () => {
    assert.deepEqual(acceptedPaymentMethods('NG', 'betting'), ['wallet', 'bank_transfer']);
    assert.deepEqual(acceptedPaymentMethods('NG', 'airtime'), ['wallet', 'card', 'bank_transfer']);
    assert.throws(() => serviceFeeMinor('NG', 'betting', 'card', 10_000), RangeError);
    assert.throws(() => serviceFeeMinor('NG', 'airtime', 'wallet', 1.5), RangeError);
    assert.throws(() => serviceFeeMinor('NG', 'airtime', 'wallet', 0), RangeError);
  });

  it('promotionDiscountMinor: WELCOME10 → 10% rounded down, capped per country, case-insensitive', () => {
    assert.equal(promotionDiscountMinor('WELCOME10', 'NG', 'airtime', 50_005), 5_000);
    assert.equal(promotionDiscountMinor('welcome10', 'NG', 'airtime', 5_000_000), 100_000, 'NG cap ₦1,000');
    assert.equal(promotionDiscountMinor('WELCOME10', 'GH', 'electricity', 50_000), 1_000, 'GH cap GH₵10');
  });

  it('promotionDiscountMinor: unknown code, service outside the promotion, or a country without a cap → undefined', () => {
    assert.equal(promotionDiscountMinor('NOPE', 'NG', 'airtime', 10_000), undefined);
    assert.equal(promotionDiscountMinor('DATA5', 'NG', 'airtime', 10_000), undefined);
    assert.equal(promotionDiscountMinor('DATA5', 'NG', 'data', 100_000), 5_000);
    assert.equal(promotionDiscountMinor('DATA5', 'ZA', 'data', 100_000), undefined);
    assert.equal(promotionDiscountMinor('LIGHTS20', 'ZA', 'electricity', 10_000), 2_000);
  });

  it('promotionDiscountMinor: any amount → an integer between 0 and both the amount and the cap', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 10 ** 13 }), (amount) => {
      const discount = promotionDiscountMinor('WELCOME10', 'KE', 'tv', amount)!;
      return Number.isSafeInteger(discount) && discount >= 0 && discount <= amount && discount <= 10_000;
    }), { seed: 7, numRuns: 500 });
  });
});

describe('eligibility and maintenance', () => {
  it('serviceEligible: NG ↔ GH, KE ↔ UG, ZA only ZA, diaspora US and GB → NG, GH, KE', () => {
    assert.deepEqual(eligibleServiceCountries('NG'), ['NG', 'GH']);
    assert.deepEqual(eligibleServiceCountries('GH'), ['GH', 'NG']);
    assert.deepEqual(eligibleServiceCountries('KE'), ['KE', 'UG']);
    assert.deepEqual(eligibleServiceCountries('UG'), ['UG', 'KE']);
    assert.deepEqual(eligibleServiceCountries('ZA'), ['ZA']);
    for (const home of ['US', 'GB']) for (const c of ['NG', 'GH', 'KE']) assert.ok(serviceEligible(home, c), `${home} → ${c}`);
    assert.equal(serviceEligible('NG', 'KE'), false);
    assert.equal(serviceEligible('ZA', 'NG'), false);
    assert.equal(serviceEligible('US', 'ZA'), false);
    assert.equal(serviceEligible('CM', 'NG'), false, 'a disabled home country buys nowhere');
  });

  it('inMaintenance: UG 02:00–02:30 UTC daily → in at the start and the last second, out at 01:59:59 and 02:30', () => {
    assert.equal(inMaintenance('UG', at(1, 59, 59)), false);
    assert.equal(inMaintenance('UG', at(2, 0)), true);
    assert.equal(inMaintenance('UG', at(2, 29, 59)), true);
    assert.equal(inMaintenance('UG', at(2, 30)), false);
    assert.equal(inMaintenance('NG', at(2, 10)), false, 'NG has no window');
  });

  it('nextMaintenanceStartMs and maintenanceEndsAtMs: around the UG window → next 02:00, end 02:30; none for NG', () => {
    assert.equal(nextMaintenanceStartMs('UG', at(1, 0)), at(2, 0));
    assert.equal(nextMaintenanceStartMs('UG', at(3, 0)), at(2, 0) + 86_400_000);
    assert.equal(maintenanceEndsAtMs('UG', at(2, 10)), at(2, 30));
    assert.equal(maintenanceEndsAtMs('UG', at(3, 0)), null);
    assert.equal(nextMaintenanceStartMs('NG', at(1, 0)), null);
  });
});

describe('customer resolution', () => {
  const ng0 = { homeCountry: 'NG', kycLevel: 0 };
  const ng1 = { homeCountry: 'NG', kycLevel: 1 };
  const gh1 = { homeCountry: 'GH', kycLevel: 1 };

  it('resolveAccess: NG betting → KYC 0 restricted, KYC 1 executable, a GH resident hidden (residents only)', () => {
    const betting = marketService('NG', 'betting')!;
    assert.deepEqual(resolveAccess(betting, ng0), { visible: true, executable: false, availability: { status: 'restricted', reason: 'kyc_level_required' } });
    assert.equal(resolveAccess(betting, ng1).executable, true);
    assert.equal(resolveAccess(betting, gh1).visible, false);
  });

  it('catalogueFor: NG for a GH customer → betting omitted; for an NG customer → display order kept', () => {
    assert.ok(!catalogueFor('NG', gh1).some((i) => i.service_code === 'betting'));
    const items = catalogueFor('NG', ng1);
    assert.ok(items.some((i) => i.service_code === 'betting'));
    assert.deepEqual(items.map((i) => i.sort_order), [...items.map((i) => i.sort_order)].sort((a, b) => a - b));
    assert.ok(!catalogueFor('US', { homeCountry: 'US', kycLevel: 1 }).some((i) => i.service_code === 'airtime'), 'unavailable is hidden');
  });

  it('purchaseRejection: each gate → its code, in order', () => {
    const now = at(12, 0);
    const code = (country: string, service: string, customer = ng1, nowMs = now) => purchaseRejection({ country, code: service, customer, nowMs })?.code ?? null;
    assert.equal(code('NG', 'airtime'), null);
    assert.equal(code('ZA', 'airtime'), 'SERVICE_COUNTRY_NOT_ELIGIBLE');
    assert.equal(code('FR', 'airtime'), 'SERVICE_UNAVAILABLE');
    assert.equal(code('GH', 'insurance'), 'SERVICE_UNAVAILABLE', 'GH does not offer insurance');
    assert.equal(code('GH', 'betting'), 'SERVICE_UNAVAILABLE', 'residents only, before its maintenance state');
    assert.equal(code('GH', 'betting', { homeCountry: 'GH', kycLevel: 1 }), 'SERVICE_NOT_EXECUTABLE', 'maintenance');
    assert.equal(code('KE', 'insurance', { homeCountry: 'KE', kycLevel: 1 }), 'SERVICE_NOT_EXECUTABLE', 'coming_soon');
    assert.equal(code('NG', 'betting', ng0), 'SERVICE_NOT_EXECUTABLE', 'KYC');
    assert.equal(code('UG', 'airtime', { homeCountry: 'KE', kycLevel: 0 }, at(2, 5)), 'MAINTENANCE');
    assert.equal(code('UG', 'airtime', { homeCountry: 'KE', kycLevel: 0 }, at(2, 35)), null);
  });
});

describe('phone validation', () => {
  it('validatePhone: NG national MTN number → valid, E.164, MOBILE, carrier MTN', () => {
    assert.deepEqual(validatePhone('0803 123 4567', 'NG', 'airtime'), {
      valid: true, normalized: '+2348031234567', country_code: 'NG', number_type: 'MOBILE', carrier: 'MTN', messages: [],
    });
    assert.equal(validatePhone(' 2348021234567', 'NG', 'data').normalized, '+2348021234567', 'a query-decoded + (space) is read as +');
  });

  it('validatePhone: impossible, foreign, fixed-line → invalid with no normalized number', () => {
    for (const [input, pattern] of [['0803123', /Impossible/], ['+233241234567', /belongs to GH/], ['+2342012345678', /Not a mobile/], ['hello', /Not a phone/]] as const) {
      const result = validatePhone(input, 'NG', 'airtime');
      assert.equal(result.valid, false, input);
      assert.equal(result.normalized, null, input);
      assert.match(result.messages.join(' '), pattern, input);
    }
  });
});

describe('sandbox fulfilment rail', () => {
  it('fulfilmentOutcome: ending 0000 → failed, 0001 → timeout, else delivered; requery → delivered', () => {
    assert.equal(fulfilmentOutcome('45012340000'), 'failed');
    assert.equal(fulfilmentOutcome('+234 803 000 0000'), 'failed');
    assert.equal(fulfilmentOutcome('45012340001'), 'timeout');
    assert.equal(fulfilmentOutcome('45012340002'), 'delivered');
    assert.equal(requeryOutcome('45012340001'), 'delivered');
  });

  it('lookupAccount: ending 0002 → not valid; 0003 → valid but not serviceable; else a stable name', () => {
    const base = { service: 'electricity' as const, country: 'NG', operatorCode: 'IKEDC', meterType: 'prepaid' };
    assert.deepEqual(lookupAccount({ ...base, accountRef: '45012340002' }), { valid: false, customerName: '', address: '', serviceable: false, reason: 'account_not_found' });
    assert.deepEqual({ ...lookupAccount({ ...base, accountRef: '45012340003' }), customerName: '', address: '' }, { valid: true, customerName: '', address: '', serviceable: false, reason: 'meter_blocked' });
    const found = lookupAccount({ ...base, accountRef: '45012345678' });
    assert.equal(found.valid && found.serviceable, true);
    assert.match(found.customerName, /^[A-Z]+ [A-Z]+$/);
    assert.deepEqual(lookupAccount({ ...base, accountRef: '45012345678' }), found);
  });

  it('fulfilmentSnapshot: NG prepaid electricity → 20-digit token, kWh at the tariff, receipt; same order id → same snapshot', () => {
    const input = { service: 'electricity' as const, country: 'NG', operatorCode: 'IKEDC', orderId: '01JXA0000000000000000000AA', recipient: '45012345678', providerCostMinor: 1_000_000, currency: 'NGN', meterType: 'prepaid', planCode: null, atMs: at(9, 0) };
    const snapshot = fulfilmentSnapshot(input);
    assert.match(String(snapshot.token), /^\d{4}(-\d{4}){4}$/);
    assert.equal(snapshot.units_kwh, '47.7', '₦10,000 at ₦209.50/kWh = 47.73 → 47.7');
    assert.match(String(snapshot.receipt_number), /^RCPT-\d{12}$/);
    assert.equal(snapshot.delivered_at, new Date(at(9, 0)).toISOString());
    assert.deepEqual(fulfilmentSnapshot(input), snapshot);
    assert.notEqual(fulfilmentSnapshot({ ...input, orderId: '01JXA0000000000000000000AB' }).token, snapshot.token);
    assert.equal(fulfilmentSnapshot({ ...input, meterType: 'postpaid' }).token, undefined, 'postpaid pays a bill, no token');
  });

  it('fulfilmentSnapshot: education → exam PIN and serial; gift_cards → voucher code and expiry a year on', () => {
    const common = { country: 'NG', orderId: '01JXA0000000000000000000AC', providerCostMinor: 350_000, currency: 'NGN', meterType: null, atMs: at(9, 0) };
    const exam = fulfilmentSnapshot({ ...common, service: 'education', operatorCode: 'WAEC', recipient: '1234567890', planCode: 'waec-result-checker' });
    assert.match(String(exam.pin), /^\d{12}$/);
    assert.match(String(exam.serial), /^WAEC\d{9}$/);
    const gift = fulfilmentSnapshot({ ...common, service: 'gift_cards', operatorCode: 'JUMIA', recipient: 'a@example.com', planCode: 'jumia-5000' });
    assert.match(String(gift.voucher_code), /^[A-Z2-9]{4}(-[A-Z2-9]{4}){3}$/);
    assert.equal(gift.expires_at, new Date(at(9, 0) + 365 * 86_400_000).toISOString());
  });

  it('setRailDown: down for one owner, service and country → railDown true there only; up again → false', () => {
    setRailDown('test:a', 'electricity', 'NG', true);
    assert.equal(railDown('test:a', 'electricity', 'NG'), true);
    assert.equal(railDown('test:b', 'electricity', 'NG'), false);
    assert.equal(railDown('test:a', 'electricity', 'GH'), false);
    assert.equal(railDown('test:a', 'airtime', 'NG'), false);
    setRailDown('test:a', 'electricity', 'NG', false);
    assert.equal(railDown('test:a', 'electricity', 'NG'), false);
  });

  it('setRailDown: RAIL_SWITCHES_MAX switches held, one more → the oldest is dropped (that rail is up again)', () => {
    for (let i = 0; i < RAIL_SWITCHES_MAX; i += 1) setRailDown(`test:bound-${i}`, 'airtime', 'NG', true);
    assert.equal(railDown('test:bound-0', 'airtime', 'NG'), true, 'at the bound nothing is dropped');
    setRailDown('test:bound-extra', 'airtime', 'NG', true);
    assert.equal(railDown('test:bound-0', 'airtime', 'NG'), false);
    assert.equal(railDown('test:bound-1', 'airtime', 'NG'), true);
    assert.equal(railDown('test:bound-extra', 'airtime', 'NG'), true);
    for (let i = 0; i < RAIL_SWITCHES_MAX; i += 1) setRailDown(`test:bound-${i}`, 'airtime', 'NG', false);
    setRailDown('test:bound-extra', 'airtime', 'NG', false);
  });
});
