// Owns the market catalogue: served countries, their flags, payment-method rules and static services.
// Any thread; pure data, computed once at module load and frozen.
// Invariant: names, currencies and calling codes come from the ISO/libphonenumber packages, never
// from data/reference; a configuration that contradicts itself stops the process at load, not
// at the first request that happens to touch it.
import countryNames from 'i18n-iso-countries';
import englishNames from 'i18n-iso-countries/langs/en.json' with { type: 'json' };
import currencyCodes from 'currency-codes';
import { getCountryCallingCode, isSupportedCountry } from 'libphonenumber-js';
import Type, { type Static } from 'typebox';
import countriesData from '../../data/reference/countries.json' with { type: 'json' };
import servicesData from '../../data/reference/services.json' with { type: 'json' };
import { isCurrencyCode } from './currencies.ts';
import { parseReference } from './reference.ts';

export interface Country {
  code: string;
  name: string;
  currency_code: string;
  currency_symbol: string;
  phone_code: string;
  locale: string;
  flag_emoji: string;
  registration_enabled: boolean;
  exchange_enabled: boolean;
  payments_enabled: boolean;
  services_enabled: boolean;
  timezone: string;
  default_language_code: string;
}

export interface PaymentMethodOption {
  method: string;
  enabled: boolean;
  min_amount_minor: number | null;
  max_amount_minor: number | null;
}

export interface CountryContext extends Country {
  services: Array<{ service_code: string; title: string; description: string; icon: string; sort_order: number }>;
  payment_methods: PaymentMethodOption[];
  supported_language_codes: string[];
}

export interface MethodRule extends PaymentMethodOption {
  kyc_level_min: number;
  selectable: boolean;
}

const PAYMENT_METHODS = ['card', 'bank_transfer', 'wallet', 'virtual_account', 'mobile_money'] as const;

const CountryCodeSchema = Type.String({ pattern: '^[A-Z]{2}$' });
const LanguageCodeSchema = Type.String({ pattern: '^[a-z]{2,3}$' });
const BoundSchema = Type.Union([Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), Type.Null()]);

const MethodRuleSchema = Type.Object(
  {
    method: Type.Union([
      Type.Literal('card'), Type.Literal('bank_transfer'), Type.Literal('wallet'),
      Type.Literal('virtual_account'), Type.Literal('mobile_money'),
    ]),
    enabled: Type.Boolean(),
    min_amount_minor: BoundSchema,
    max_amount_minor: BoundSchema,
    kyc_level_min: Type.Integer({ minimum: 0, maximum: 3 }),
    selectable: Type.Boolean(),
  },
  { additionalProperties: false },
);

const CountryConfigSchema = Type.Object(
  {
    code: CountryCodeSchema,
    enabled: Type.Boolean(),
    locale: Type.String({ minLength: 2 }),
    timezone: Type.String({ minLength: 1 }),
    default_language_code: LanguageCodeSchema,
    supported_language_codes: Type.Array(LanguageCodeSchema, { minItems: 1 }),
    registration_enabled: Type.Boolean(),
    exchange_enabled: Type.Boolean(),
    payments_enabled: Type.Boolean(),
    services_enabled: Type.Boolean(),
    payment_methods: Type.Array(MethodRuleSchema),
  },
  { additionalProperties: false },
);

const ServiceEntrySchema = Type.Object(
  {
    service_code: Type.Union([
      Type.Literal('airtime'), Type.Literal('data'), Type.Literal('electricity'), Type.Literal('water'),
      Type.Literal('internet'), Type.Literal('tv'), Type.Literal('betting'), Type.Literal('gift_cards'),
      Type.Literal('education'), Type.Literal('insurance'),
    ]),
    title: Type.String({ minLength: 1 }),
    description: Type.String({ minLength: 1 }),
    icon: Type.String({ minLength: 1 }),
    sort_order: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

const CountriesFileSchema = Type.Array(CountryConfigSchema);
const ServicesFileSchema = Type.Record(Type.String(), Type.Array(ServiceEntrySchema));

type CountryConfig = Static<typeof CountryConfigSchema>;
type ServiceEntry = Static<typeof ServiceEntrySchema>;


function fail(code: string, problem: string): never {
  throw new Error(`data/reference (countries.json, services.json): ${code}: ${problem}`);
}

countryNames.registerLocale(englishNames);

// ISO 4217 spells the United Kingdom "United Kingdom of Great Britain and Northern Ireland (The)",
// which i18n-iso-countries does not list, and lists the USN funds code against the United States
// beside USD; everywhere else the package's own country list decides.
const CURRENCY_OVERRIDES: Readonly<Record<string, string>> = { GB: 'GBP', US: 'USD' };

function normaliseName(name: string): string {
  return name.replace(/\s*\(the\)\s*$/i, '').trim().toLowerCase();
}

function currencyFor(code: string): string {
  const override = CURRENCY_OVERRIDES[code];
  if (override !== undefined) {
    if (!isCurrencyCode(override)) fail(code, `override currency ${override} is not an ISO 4217 code`);
    return override;
  }
  const names = new Set((countryNames.getName(code, 'en', { select: 'all' }) ?? []).map(normaliseName));
  const candidates = currencyCodes.data
    .filter((record) => isCurrencyCode(record.code) && record.countries.some((c) => names.has(normaliseName(c))))
    .map((record) => record.code);
  const [only, ...rest] = candidates;
  if (only === undefined || rest.length > 0) {
    fail(code, `ISO 4217 gives ${candidates.length === 0 ? 'no currency' : candidates.join(', ')}; add an override`);
  }
  return only;
}

function currencySymbol(locale: string, currency: string): string {
  const parts = new Intl.NumberFormat(locale, { style: 'currency', currency, currencyDisplay: 'narrowSymbol' })
    .formatToParts(0);
  return parts.find((part) => part.type === 'currency')?.value ?? currency;
}

function flagEmoji(code: string): string {
  // Regional indicator symbols A..Z start at U+1F1E6; a pair of them renders as the flag.
  return String.fromCodePoint(...[...code].map((letter) => 0x1f1e6 + letter.charCodeAt(0) - 0x41));
}

function checkConfig(config: CountryConfig): void {
  const { code } = config;
  if (countryNames.getName(code, 'en') === undefined) fail(code, 'not an ISO 3166-1 alpha-2 code');
  if (!isSupportedCountry(code)) fail(code, 'libphonenumber-js has no calling code');
  try {
    Intl.getCanonicalLocales(config.locale);
    new Intl.DateTimeFormat('en', { timeZone: config.timezone });
  } catch (error) {
    fail(code, `bad locale or timezone: ${String(error)}`);
  }
  if (!config.supported_language_codes.includes(config.default_language_code)) {
    fail(code, 'default_language_code is not among supported_language_codes');
  }
  const methods = config.payment_methods.map((rule) => rule.method);
  if (methods.length !== PAYMENT_METHODS.length || PAYMENT_METHODS.some((m) => !methods.includes(m))) {
    fail(code, `payment_methods must list each of ${PAYMENT_METHODS.join(', ')} exactly once`);
  }
  for (const rule of config.payment_methods) {
    if (rule.min_amount_minor !== null && rule.max_amount_minor !== null && rule.min_amount_minor > rule.max_amount_minor) {
      fail(code, `${rule.method}: min_amount_minor exceeds max_amount_minor`);
    }
    if (rule.enabled && !config.payments_enabled) fail(code, `${rule.method} enabled while payments are off`);
  }
  if (!config.enabled && (config.registration_enabled || config.exchange_enabled || config.payments_enabled || config.services_enabled)) {
    fail(code, 'a disabled country must have every market flag off');
  }
}

function checkServices(code: string, entries: readonly ServiceEntry[]): void {
  const seen = new Set<string>();
  let previous = -1;
  for (const entry of entries) {
    if (seen.has(entry.service_code)) fail(code, `service ${entry.service_code} listed twice`);
    seen.add(entry.service_code);
    // Stored in display order so the array can be served as is.
    if (entry.sort_order <= previous) fail(code, 'services must be in strictly increasing sort_order');
    previous = entry.sort_order;
  }
}

interface Market {
  country: Country;
  context: CountryContext;
  rules: readonly MethodRule[];
}

// Every configured country is validated, enabled or not, so switching one on cannot surface a
// data error in production; only enabled ones are kept.
function buildEnabledMarkets(): ReadonlyMap<string, Market> {
  const configs = parseReference('countries.json', CountriesFileSchema, countriesData);
  const services = parseReference('services.json', ServicesFileSchema, servicesData);
  const configured = new Set<string>();
  const markets = new Map<string, Market>();
  for (const config of configs) {
    const { code } = config;
    if (configured.has(code)) fail(code, 'listed twice');
    configured.add(code);
    checkConfig(config);
    const currency = currencyFor(code);
    const country: Country = Object.freeze({
      code,
      name: countryNames.getName(code, 'en') ?? fail(code, 'no English name'),
      currency_code: currency,
      currency_symbol: currencySymbol(config.locale, currency),
      phone_code: `+${isSupportedCountry(code) ? getCountryCallingCode(code) : fail(code, 'no calling code')}`,
      locale: config.locale,
      flag_emoji: flagEmoji(code),
      registration_enabled: config.registration_enabled,
      exchange_enabled: config.exchange_enabled,
      payments_enabled: config.payments_enabled,
      services_enabled: config.services_enabled,
      timezone: config.timezone,
      default_language_code: config.default_language_code,
    });
    const catalogue = services[code] ?? [];
    checkServices(code, catalogue);
    if (config.services_enabled && catalogue.length === 0) {
      fail(code, 'services are enabled but services.json lists none');
    }
    const rules: readonly MethodRule[] = Object.freeze(config.payment_methods.map((rule) => Object.freeze({ ...rule })));
    const context: CountryContext = Object.freeze({
      ...country,
      // The flag, not the presence of catalogue rows, decides whether a market sells services.
      services: freezeAll(config.services_enabled ? catalogue : []),
      payment_methods: freezeAll(
        rules.map(({ method, enabled, min_amount_minor, max_amount_minor }) => ({
          method, enabled, min_amount_minor, max_amount_minor,
        })),
      ),
      supported_language_codes: Object.freeze([...config.supported_language_codes]) as string[],
    });
    if (config.enabled) markets.set(code, { country, context, rules });
  }
  for (const code of Object.keys(services)) {
    if (!configured.has(code)) fail(code, 'services.json lists a country that countries.json does not configure');
  }
  return markets;
}

// The public types are mutable (they are response shapes); freezing still makes a caller's write
// throw instead of silently changing what every other request sees.
function freezeAll<T extends object>(items: readonly T[]): T[] {
  return Object.freeze(items.map((item) => Object.freeze({ ...item }))) as T[];
}

const ENABLED = buildEnabledMarkets();
const COUNTRY_LIST: readonly Country[] = Object.freeze(
  [...ENABLED.values()].map((market) => market.country).sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0)),
);

/** Enabled countries, sorted by code; the same frozen array on every call. */
export function listCountries(): readonly Country[] {
  return COUNTRY_LIST;
}

/** An enabled country by exact upper-case code; disabled and unknown countries are undefined. */
export function findCountry(code: string): Country | undefined {
  return ENABLED.get(code)?.country;
}

/** The static market context of an enabled country (not resolved for any customer). */
export function countryContext(code: string): CountryContext | undefined {
  return ENABLED.get(code)?.context;
}

/** Syntax only: two upper-case ASCII letters. Whether kobo serves the country is findCountry's question. */
export function isCountryCode(code: string): boolean {
  return /^[A-Z]{2}$/.test(code);
}

/** Payment-method rules of an enabled country; [] for unknown and disabled countries. */
export function methodRules(countryCode: string): readonly MethodRule[] {
  return ENABLED.get(countryCode)?.rules ?? [];
}
