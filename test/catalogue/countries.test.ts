// Covers the market catalogue: package-derived country fields, enabled/disabled markets,
// country context and payment-method rules.
// Runs under node:test on the main thread; pure data, no I/O beyond module load.
// Invariant checked: what the API would serve matches real ISO/libphonenumber values.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  countryContext,
  findCountry,
  isCountryCode,
  listCountries,
  methodRules,
  type Country,
} from '../../src/catalogue/countries.ts';
import { currencyExponent } from '../../src/catalogue/currencies.ts';

const REQUIRED = ['GB', 'GH', 'KE', 'NG', 'UG', 'US', 'ZA'];

describe('listCountries', () => {
  it('listCountries: default data → every required market, sorted by code', () => {
    const codes = listCountries().map((c) => c.code);
    for (const code of REQUIRED) assert.ok(codes.includes(code), `${code} missing`);
    assert.deepEqual(codes, [...codes].sort());
  });

  it('listCountries: disabled country CM → absent', () => {
    assert.ok(!listCountries().some((c) => c.code === 'CM'));
  });

  it('listCountries: called twice → the same frozen array', () => {
    assert.equal(listCountries(), listCountries());
    assert.ok(Object.isFrozen(listCountries()));
  });

  it('listCountries: every country → ISO currency with a known exponent and a +digits phone code', () => {
    for (const c of listCountries()) {
      assert.notEqual(currencyExponent(c.currency_code), undefined, c.code);
      assert.match(c.phone_code, /^\+\d{1,3}$/, c.code);
      assert.ok(!('services' in c), 'list items carry no context fields');
    }
  });
});

describe('findCountry', () => {
  it('findCountry: NG → Nigeria, NGN, ₦, +234, Africa/Lagos, 🇳🇬', () => {
    const ng = findCountry('NG');
    assert.ok(ng);
    assert.equal(ng.name, 'Nigeria');
    assert.equal(ng.currency_code, 'NGN');
    assert.match(ng.currency_symbol, /₦/);
    assert.equal(ng.phone_code, '+234');
    assert.equal(ng.timezone, 'Africa/Lagos');
    assert.equal(ng.locale, 'en-NG');
    assert.equal(ng.flag_emoji, '\u{1F1F3}\u{1F1EC}');
    assert.equal(ng.default_language_code, 'en');
    assert.equal(ng.payments_enabled, true);
  });

  it('findCountry: each required market → its legal tender and calling code', () => {
    const expected: Record<string, [string, string]> = {
      GB: ['GBP', '+44'], GH: ['GHS', '+233'], KE: ['KES', '+254'], NG: ['NGN', '+234'],
      UG: ['UGX', '+256'], US: ['USD', '+1'], ZA: ['ZAR', '+27'],
    };
    for (const [code, [currency, phone]] of Object.entries(expected)) {
      const country = findCountry(code);
      assert.equal(country?.currency_code, currency, code);
      assert.equal(country?.phone_code, phone, code);
    }
  });

  it('findCountry: GB and US → £ and $ symbols', () => {
    assert.equal(findCountry('GB')?.currency_symbol, '£');
    assert.equal(findCountry('US')?.currency_symbol, '$');
  });

  it('findCountry: disabled CM → undefined', () => {
    assert.equal(findCountry('CM'), undefined);
  });

  it('findCountry: unknown ZZ or lower-case ng → undefined', () => {
    assert.equal(findCountry('ZZ'), undefined);
    assert.equal(findCountry('ng'), undefined);
  });

  it('findCountry: write to a returned field → TypeError, shared data unchanged', () => {
    const ng = findCountry('NG') as Country;
    assert.throws(() => { ng.currency_code = 'USD'; }, TypeError);
    assert.equal(findCountry('NG')?.currency_code, 'NGN');
  });
});

describe('isCountryCode', () => {
  it('isCountryCode: two upper-case letters → true, whether served or not', () => {
    assert.equal(isCountryCode('NG'), true);
    assert.equal(isCountryCode('ZZ'), true);
  });

  it('isCountryCode: lower case, three letters, digits or empty → false', () => {
    for (const code of ['ng', 'Ng', 'NGA', 'N1', '', ' NG']) assert.equal(isCountryCode(code), false, code);
  });
});

describe('countryContext', () => {
  it('countryContext: NG → all ten services incl. education and betting, in sort_order', () => {
    const ng = countryContext('NG');
    assert.ok(ng);
    const codes = ng.services.map((s) => s.service_code);
    assert.equal(codes.length, 10);
    assert.ok(codes.includes('education') && codes.includes('betting'));
    const orders = ng.services.map((s) => s.sort_order);
    assert.deepEqual(orders, [...orders].sort((a, b) => a - b));
  });

  it('countryContext: KE → no education; ZA → its six services with prepaid electricity first', () => {
    assert.ok(!countryContext('KE')?.services.some((s) => s.service_code === 'education'));
    const za = countryContext('ZA');
    assert.deepEqual(
      za?.services.map((s) => s.service_code).sort(),
      ['airtime', 'data', 'electricity', 'gift_cards', 'insurance', 'tv'],
    );
    assert.equal(za?.services[0]?.title, 'Prepaid electricity');
  });

  it('countryContext: GB and US → gift cards on offer, no utilities', () => {
    for (const code of ['GB', 'US']) {
      const codes = countryContext(code)?.services.map((s) => s.service_code) ?? [];
      assert.ok(codes.includes('gift_cards'), code);
      assert.ok(!codes.includes('electricity'), code);
    }
  });

  it('countryContext: any country → method options without kyc or selectable fields', () => {
    const options = countryContext('NG')?.payment_methods ?? [];
    assert.equal(options.length, 5);
    for (const option of options) assert.deepEqual(Object.keys(option).sort(), ['enabled', 'max_amount_minor', 'method', 'min_amount_minor']);
  });

  it('countryContext: mobile_money → enabled in GH, KE and UG only', () => {
    const enabledIn = listCountries()
      .filter((c) => countryContext(c.code)?.payment_methods.some((m) => m.method === 'mobile_money' && m.enabled))
      .map((c) => c.code);
    assert.deepEqual(enabledIn, ['GH', 'KE', 'UG']);
  });

  it('countryContext: any country → default language among supported ones', () => {
    for (const c of listCountries()) {
      const context = countryContext(c.code);
      assert.ok(context?.supported_language_codes.includes(context.default_language_code), c.code);
    }
  });

  it('countryContext: disabled CM or unknown ZZ → undefined', () => {
    assert.equal(countryContext('CM'), undefined);
    assert.equal(countryContext('ZZ'), undefined);
  });
});

describe('methodRules', () => {
  it('methodRules: any country → only virtual_account is not selectable', () => {
    for (const c of listCountries()) {
      for (const rule of methodRules(c.code)) {
        assert.equal(rule.selectable, rule.method !== 'virtual_account', `${c.code} ${rule.method}`);
      }
    }
  });

  it('methodRules: any rule → integer kyc 0..3 and min not above max', () => {
    for (const c of listCountries()) {
      for (const rule of methodRules(c.code)) {
        assert.ok(Number.isInteger(rule.kyc_level_min) && rule.kyc_level_min >= 0 && rule.kyc_level_min <= 3);
        if (rule.min_amount_minor !== null && rule.max_amount_minor !== null) {
          assert.ok(rule.min_amount_minor <= rule.max_amount_minor, `${c.code} ${rule.method}`);
        }
      }
    }
  });

  it('methodRules: NG virtual_account → enabled, needs KYC level 1', () => {
    const rule = methodRules('NG').find((r) => r.method === 'virtual_account');
    assert.equal(rule?.enabled, true);
    assert.equal(rule?.kyc_level_min, 1);
  });

  it('methodRules: unknown ZZ or disabled CM → empty', () => {
    assert.deepEqual(methodRules('ZZ'), []);
    assert.deepEqual(methodRules('CM'), []);
  });
});
