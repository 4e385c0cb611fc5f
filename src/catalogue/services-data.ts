// Loads and cross-checks the services reference data (data/reference/services/*.json) into frozen
// per-country markets: offered services with state and limits, operators, plans, variants, fees,
// promotions, eligibility and maintenance windows. Any thread; pure data, built once at module load.
// Invariant: data that contradicts itself or data/reference/services.json stops the process at load,
// never at the first request that touches it.
import Type, { type Static, type TSchema } from 'typebox';
import definitionsData from '../../data/reference/services/definitions.json' with { type: 'json' };
import marketsData from '../../data/reference/services/markets.json' with { type: 'json' };
import operatorsData from '../../data/reference/services/operators.json' with { type: 'json' };
import plansData from '../../data/reference/services/plans.json' with { type: 'json' };
import feesData from '../../data/reference/services/fees.json' with { type: 'json' };
import promotionsData from '../../data/reference/services/promotions.json' with { type: 'json' };
import eligibilityData from '../../data/reference/services/eligibility.json' with { type: 'json' };
import { countryContext, findCountry, listCountries } from './countries.ts';
import type { CountryService, Operator, Plan, ServiceCode, Variant } from './services.ts';
import { FeeRuleSchema, type FeeRule } from '../money/fee.ts';
import { parseReference } from './reference.ts';

export const SERVICE_CODES = [
  'airtime', 'data', 'electricity', 'water', 'internet', 'tv', 'betting', 'gift_cards', 'education', 'insurance',
] as const satisfies readonly ServiceCode[];

/** The methods a service can be paid with at all; each country's fee table picks from these. */
export const SERVICE_PAYMENT_METHODS = ['wallet', 'card', 'bank_transfer'] as const;
export type ServicePaymentMethod = (typeof SERVICE_PAYMENT_METHODS)[number];

export const OPEN_AMOUNT_PLAN_CODE = 'open_amount';
export const PLAN_CATEGORIES = ['daily', 'weekly', 'monthly', 'others'] as const;
export type PlanKind = 'plans' | 'packages';
export type Step = 'operator' | 'plan' | 'variant' | 'phone' | 'account_ref' | 'email' | 'amount';

const Code = Type.Union(SERVICE_CODES.map((code) => Type.Literal(code)));
const CountryKey = Type.String({ pattern: '^[A-Z]{2}$' });
const Minor = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });
const OperatorCode = Type.String({ pattern: '^[A-Z0-9][A-Z0-9_]{1,19}$' });
const State = Type.Union([Type.Literal('active'), Type.Literal('coming_soon'), Type.Literal('maintenance'), Type.Literal('unavailable')]);
const StepSchema = Type.Union([
  Type.Literal('operator'), Type.Literal('plan'), Type.Literal('variant'), Type.Literal('phone'),
  Type.Literal('account_ref'), Type.Literal('email'), Type.Literal('amount'),
]);

const DefinitionSchema = Type.Object({
  category: Type.Union([Type.Literal('mobile'), Type.Literal('utilities'), Type.Literal('entertainment'), Type.Literal('education'), Type.Literal('finance')]),
  pricing: Type.Union([Type.Literal('fixed'), Type.Literal('open')]),
  recipient: Type.Union([
    Type.Literal('phone'), Type.Literal('meter'), Type.Literal('account'), Type.Literal('smartcard'),
    Type.Literal('email'), Type.Literal('candidate'), Type.Literal('policy'),
  ]),
  steps: Type.Array(StepSchema, { minItems: 1 }),
  requires_validation: Type.Boolean(),
}, { additionalProperties: false });

const AccountRuleSchema = Type.Object({
  pattern: Type.String({ minLength: 2 }),
  label: Type.String({ minLength: 1 }),
  hint: Type.String({ minLength: 1 }),
}, { additionalProperties: false });

const ActionSchema = Type.Object({
  type: Type.Literal('interest_signup'),
  label: Type.String({ minLength: 1 }),
  campaign: Type.String({ pattern: '^[a-z0-9-]{1,64}$' }),
}, { additionalProperties: false });

const PresentationSchema = Type.Object({
  badge: Type.Optional(Type.Object({
    label: Type.String({ minLength: 1 }),
    tone: Type.Union([Type.Literal('info'), Type.Literal('neutral'), Type.Literal('warning'), Type.Literal('success')]),
  }, { additionalProperties: false })),
}, { additionalProperties: false });

const MarketServiceSchema = Type.Object({
  state: State,
  availability_reason: Type.Optional(Type.String({ pattern: '^[a-z_]{1,40}$' })),
  requires_validation: Type.Optional(Type.Boolean()),
  min_amount_minor: Minor,
  max_amount_minor: Minor,
  kyc_level_min: Type.Optional(Type.Integer({ minimum: 0, maximum: 3 })),
  audience: Type.Optional(Type.Union([Type.Literal('everyone'), Type.Literal('residents')])),
  account: Type.Optional(AccountRuleSchema),
  presentation: Type.Optional(PresentationSchema),
  actions: Type.Optional(Type.Array(ActionSchema, { maxItems: 4 })),
}, { additionalProperties: false });

const VariantSchema = Type.Object({ code: Type.String({ pattern: '^[a-z_]{1,20}$' }), title: Type.String({ minLength: 1 }) }, { additionalProperties: false });
const WindowSchema = Type.Object({
  start_utc: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' }),
  end_utc: Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' }),
  reason: Type.String({ minLength: 1 }),
}, { additionalProperties: false });

const MarketSchema = Type.Object({
  maintenance_windows: Type.Array(WindowSchema, { maxItems: 8 }),
  variants: Type.Record(Type.String(), Type.Array(VariantSchema, { maxItems: 8 })),
  services: Type.Record(Type.String(), MarketServiceSchema),
}, { additionalProperties: false });

const OperatorSchema = Type.Object({
  code: OperatorCode,
  title: Type.String({ minLength: 1 }),
  prefixes: Type.Optional(Type.Array(Type.String({ pattern: '^0[0-9]{1,5}$' }), { minItems: 1, maxItems: 64 })),
}, { additionalProperties: false });

const CountryOperatorsSchema = Type.Object({
  networks: Type.Array(OperatorSchema),
  services: Type.Record(Type.String(), Type.Union([Type.Literal('networks'), Type.Array(OperatorSchema, { minItems: 1, maxItems: 64 })])),
}, { additionalProperties: false });

const PlanSchema = Type.Object({
  code: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,63}$' }),
  title: Type.String({ minLength: 1, maxLength: 80 }),
  amount_minor: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  validity: Type.String({ minLength: 1, maxLength: 40 }),
  category: Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly'), Type.Literal('others')]),
  kind: Type.Optional(Type.Union([Type.Literal('plans'), Type.Literal('packages')])),
}, { additionalProperties: false });

const MethodFeesSchema = Type.Record(Type.String(), FeeRuleSchema);
const CountryFeesSchema = Type.Object({ default: MethodFeesSchema, services: Type.Record(Type.String(), MethodFeesSchema) }, { additionalProperties: false });

const PromotionSchema = Type.Object({
  code: Type.String({ pattern: '^[A-Z0-9]{3,20}$' }),
  title: Type.String({ minLength: 1 }),
  percent_bps: Type.Integer({ minimum: 1, maximum: 10_000 }),
  services: Type.Array(Code, { minItems: 1 }),
  cap_minor: Type.Record(Type.String(), Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
}, { additionalProperties: false });

export type AccountRule = Static<typeof AccountRuleSchema>;
export type Presentation = Static<typeof PresentationSchema>;
export type Action = Static<typeof ActionSchema>;

/** A country's offer of one service, with everything the catalogue and the purchase checks need. */
export interface MarketService extends CountryService {
  category: string;
  steps: readonly Step[];
  kycLevelMin: number;
  audience: 'everyone' | 'residents';
  availabilityReason: string | null;
  account: AccountRule | null;
  accountPattern: RegExp | null;
  presentation: Presentation;
  actions: readonly Action[];
}

export interface OperatorRecord extends Operator {
  /** National-format number prefixes (trunk 0 included); empty for operators that are not networks. */
  prefixes: readonly string[];
}

export interface PlanRecord extends Plan {
  kind: PlanKind;
}

export interface MaintenanceWindow {
  startMinute: number;
  endMinute: number;
  reason: string;
}

export interface Market {
  country: string;
  currency: string;
  services: ReadonlyMap<ServiceCode, MarketService>;
  operators: ReadonlyMap<ServiceCode, readonly OperatorRecord[]>;
  plans: ReadonlyMap<ServiceCode, readonly PlanRecord[]>;
  variants: ReadonlyMap<ServiceCode, readonly Variant[]>;
  fees: ReadonlyMap<ServiceCode, ReadonlyMap<string, FeeRule>>;
  windows: readonly MaintenanceWindow[];
}

export interface Promotion {
  code: string;
  title: string;
  percentBps: number;
  services: ReadonlySet<ServiceCode>;
  capMinor: ReadonlyMap<string, number>;
}

/** Service reference files live in data/reference/services/. */
const parse = <const S extends TSchema>(file: string, schema: S, value: unknown): Static<S> => parseReference(`services/${file}`, schema, value);

function fail(where: string, problem: string): never {
  throw new Error(`data/reference/services: ${where}: ${problem}`);
}

function withoutComment(data: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(data).filter(([key]) => key !== '_comment'));
}

function isCode(code: string): code is ServiceCode {
  return (SERVICE_CODES as readonly string[]).includes(code);
}

function minuteOf(hhmm: string): number {
  const [h, m] = hhmm.split(':');
  return Number(h) * 60 + Number(m);
}

const DEFINITIONS = parse('definitions.json', Type.Record(Type.String(), DefinitionSchema), withoutComment(definitionsData));
for (const code of SERVICE_CODES) if (DEFINITIONS[code] === undefined) fail('definitions.json', `${code} is not defined`);
for (const code of Object.keys(DEFINITIONS)) if (!isCode(code)) fail('definitions.json', `${code} is not a service code`);

const MARKETS_FILE = parse('markets.json', Type.Record(CountryKey, MarketSchema), withoutComment(marketsData));
const OPERATORS_FILE = parse('operators.json', Type.Record(CountryKey, CountryOperatorsSchema), withoutComment(operatorsData));
const PLANS_FILE = parse('plans.json', Type.Record(CountryKey, Type.Record(Type.String(), Type.Record(Type.String(), Type.Array(PlanSchema, { maxItems: 64 })))), withoutComment(plansData));
const FEES_FILE = parse('fees.json', Type.Record(CountryKey, CountryFeesSchema), withoutComment(feesData));
const PROMOTIONS_FILE = parse('promotions.json', Type.Object({ promotions: Type.Array(PromotionSchema) }), withoutComment(promotionsData));
const ELIGIBILITY_FILE = parse('eligibility.json', Type.Record(CountryKey, Type.Array(CountryKey, { minItems: 1 })), withoutComment(eligibilityData));

/** One code, one title: an operator code means the same operator in every country and service. */
const OPERATOR_TITLES = new Map<string, string>();

function buildOperators(country: string, code: ServiceCode, recipient: CountryService['recipient']): readonly OperatorRecord[] {
  const file = OPERATORS_FILE[country] ?? fail(country, 'operators.json has no entry');
  const listed = file.services[code] ?? fail(`${country}.${code}`, 'operators.json lists no operators');
  const entries = listed === 'networks' ? file.networks : listed;
  if (entries.length === 0) fail(`${country}.${code}`, 'no operators');
  const seen = new Set<string>();
  const records = entries.map((entry) => {
    if (seen.has(entry.code)) fail(`${country}.${code}`, `operator ${entry.code} listed twice`);
    seen.add(entry.code);
    const title = OPERATOR_TITLES.get(entry.code);
    if (title !== undefined && title !== entry.title) fail(`${country}.${code}`, `operator ${entry.code} is titled both "${title}" and "${entry.title}"`);
    OPERATOR_TITLES.set(entry.code, entry.title);
    if (entry.prefixes !== undefined && recipient !== 'phone') fail(`${country}.${code}`, 'only services sold to a phone carry number prefixes');
    return Object.freeze({ code: entry.code, title: entry.title, service_code: code, country, prefixes: Object.freeze([...(entry.prefixes ?? [])]) });
  });
  const prefixOwner = new Map<string, string>();
  for (const record of records) {
    for (const prefix of record.prefixes) {
      const owner = prefixOwner.get(prefix);
      if (owner !== undefined) fail(`${country}.${code}`, `prefix ${prefix} belongs to both ${owner} and ${record.code}`);
      prefixOwner.set(prefix, record.code);
    }
  }
  return Object.freeze(records);
}

function buildPlans(country: string, currency: string, service: MarketService, operators: readonly OperatorRecord[]): readonly PlanRecord[] {
  const where = `${country}.${service.code}`;
  const byOperator = PLANS_FILE[country]?.[service.code] ?? {};
  if (service.pricing === 'open') {
    if (Object.keys(byOperator).length > 0) fail(where, 'open-amount services have no plans (they answer open_amount)');
    return Object.freeze([]);
  }
  const codes = new Set<string>();
  const plans: PlanRecord[] = [];
  for (const [operatorCode, rows] of Object.entries(byOperator)) {
    if (!operators.some((o) => o.code === operatorCode)) fail(where, `plans for unknown operator ${operatorCode}`);
    for (const row of rows) {
      if (codes.has(row.code)) fail(where, `plan ${row.code} listed twice`);
      codes.add(row.code);
      if (row.amount_minor < service.minAmountMinor || row.amount_minor > service.maxAmountMinor) {
        fail(where, `plan ${row.code} costs ${row.amount_minor}, outside the service limits`);
      }
      plans.push(Object.freeze({
        code: row.code, title: row.title, operator_code: operatorCode, service_code: service.code, country,
        amount_minor: row.amount_minor, currency, validity: row.validity, category: row.category, pricing: 'fixed', kind: row.kind ?? 'plans',
      }));
    }
  }
  for (const operator of operators) {
    if (!plans.some((p) => p.operator_code === operator.code && p.kind === 'plans')) fail(where, `operator ${operator.code} sells no plans`);
  }
  return Object.freeze(plans);
}

function buildFees(country: string, offered: readonly ServiceCode[]): ReadonlyMap<ServiceCode, ReadonlyMap<string, FeeRule>> {
  const file = FEES_FILE[country] ?? fail(country, 'fees.json has no entry');
  for (const code of Object.keys(file.services)) {
    if (!isCode(code) || !offered.includes(code)) fail(`fees.json ${country}.${code}`, 'not a service the country offers');
  }
  const fees = new Map<ServiceCode, ReadonlyMap<string, FeeRule>>();
  for (const code of offered) {
    const table = file.services[code] ?? file.default;
    const methods = Object.keys(table);
    if (methods.length === 0) fail(`fees.json ${country}.${code}`, 'accepts no payment method');
    for (const method of methods) {
      if (!(SERVICE_PAYMENT_METHODS as readonly string[]).includes(method)) fail(`fees.json ${country}.${code}`, `${method} is not a service payment method`);
    }
    // Stored in the canonical method order so listings are stable.
    fees.set(code, new Map(SERVICE_PAYMENT_METHODS.flatMap((m) => (table[m] === undefined ? [] : [[m, Object.freeze({ ...table[m] })] as const]))));
  }
  return fees;
}

function buildService(country: string, currency: string, code: ServiceCode, raw: Static<typeof MarketServiceSchema>, hasVariants: boolean): MarketService {
  const definition = DEFINITIONS[code] ?? fail(code, 'no definition');
  const where = `${country}.${code}`;
  if (raw.min_amount_minor < 1 || raw.min_amount_minor > raw.max_amount_minor) fail(where, 'min_amount_minor must be ≥ 1 and ≤ max_amount_minor');
  const needsAccount = definition.steps.includes('account_ref');
  if (needsAccount !== (raw.account !== undefined)) fail(where, needsAccount ? 'an account_ref step needs an account rule' : 'account rule without an account_ref step');
  let accountPattern: RegExp | null = null;
  if (raw.account !== undefined) {
    if (!raw.account.pattern.startsWith('^') || !raw.account.pattern.endsWith('$')) fail(where, 'account pattern must be anchored');
    accountPattern = new RegExp(raw.account.pattern);
  }
  const actions = Object.freeze((raw.actions ?? []).map((a) => Object.freeze({ ...a })));
  if (actions.length > 0 && raw.state !== 'coming_soon') fail(where, 'campaign actions belong to coming_soon services');
  return Object.freeze({
    code, country, currency,
    pricing: definition.pricing,
    state: raw.state,
    requiresValidation: raw.requires_validation ?? definition.requires_validation,
    minAmountMinor: raw.min_amount_minor,
    maxAmountMinor: raw.max_amount_minor,
    recipient: definition.recipient,
    category: definition.category,
    steps: Object.freeze(definition.steps.filter((step) => step !== 'variant' || hasVariants)),
    kycLevelMin: raw.kyc_level_min ?? 0,
    audience: raw.audience ?? 'everyone',
    availabilityReason: raw.availability_reason ?? null,
    account: raw.account === undefined ? null : Object.freeze({ ...raw.account }),
    accountPattern,
    presentation: Object.freeze(raw.presentation ?? {}),
    actions,
  });
}

function buildMarket(country: string, raw: Static<typeof MarketSchema>): Market {
  const served = findCountry(country);
  if (served === undefined || !served.services_enabled) fail(country, 'not an enabled country with services');
  const listed = (countryContext(country)?.services ?? []).map((s) => s.service_code);
  const offered = Object.keys(raw.services);
  if ([...listed].sort().join(',') !== [...offered].sort().join(',')) {
    fail(country, `offers ${offered.join(', ')} but data/reference/services.json lists ${listed.join(', ')}`);
  }
  const codes = offered.filter(isCode);
  for (const code of Object.keys(raw.variants)) {
    if (!isCode(code) || !codes.includes(code)) fail(`${country} variants`, `${code} is not offered`);
    if (new Set((raw.variants[code] ?? []).map((v) => v.code)).size !== (raw.variants[code] ?? []).length) fail(`${country}.${code}`, 'duplicate variant');
  }
  const services = new Map<ServiceCode, MarketService>();
  const operators = new Map<ServiceCode, readonly OperatorRecord[]>();
  const plans = new Map<ServiceCode, readonly PlanRecord[]>();
  const variants = new Map<ServiceCode, readonly Variant[]>();
  for (const code of codes) {
    const own = raw.variants[code] ?? [];
    const hasVariantStep = DEFINITIONS[code]?.steps.includes('variant') ?? false;
    if (own.length > 0 && !hasVariantStep) fail(`${country}.${code}`, 'variants on a service without a variant step');
    const service = buildService(country, served.currency_code, code, raw.services[code] ?? fail(country, code), own.length > 0);
    services.set(code, service);
    const ops = buildOperators(country, code, service.recipient);
    operators.set(code, ops);
    plans.set(code, buildPlans(country, served.currency_code, service, ops));
    variants.set(code, Object.freeze(own.map((v) => Object.freeze({ ...v }))));
  }
  for (const code of Object.keys(PLANS_FILE[country] ?? {})) if (!isCode(code) || !codes.includes(code)) fail(`plans.json ${country}.${code}`, 'not offered');
  for (const code of Object.keys(OPERATORS_FILE[country]?.services ?? {})) if (!isCode(code) || !codes.includes(code)) fail(`operators.json ${country}.${code}`, 'not offered');
  const windows = raw.maintenance_windows.map((w) => {
    const window = { startMinute: minuteOf(w.start_utc), endMinute: minuteOf(w.end_utc), reason: w.reason };
    if (window.startMinute === window.endMinute) fail(`${country} maintenance`, 'a window must not be empty');
    return Object.freeze(window);
  });
  return Object.freeze({ country, currency: served.currency_code, services, operators, plans, variants, fees: buildFees(country, codes), windows: Object.freeze(windows) });
}

function buildMarkets(): ReadonlyMap<string, Market> {
  const markets = new Map<string, Market>();
  for (const [country, raw] of Object.entries(MARKETS_FILE)) markets.set(country, buildMarket(country, raw));
  for (const country of listCountries()) {
    if (country.services_enabled && !markets.has(country.code)) fail(country.code, 'services are enabled but markets.json has no entry');
  }
  for (const file of [OPERATORS_FILE, PLANS_FILE, FEES_FILE]) {
    for (const country of Object.keys(file)) if (!markets.has(country)) fail(country, 'reference rows for a country that is no market');
  }
  return markets;
}

function buildPromotions(markets: ReadonlyMap<string, Market>): ReadonlyMap<string, Promotion> {
  const promotions = new Map<string, Promotion>();
  for (const raw of PROMOTIONS_FILE.promotions) {
    if (promotions.has(raw.code)) fail('promotions.json', `${raw.code} listed twice`);
    for (const country of Object.keys(raw.cap_minor)) if (!markets.has(country)) fail(`promotions.json ${raw.code}`, `${country} is no market`);
    promotions.set(raw.code, Object.freeze({
      code: raw.code, title: raw.title, percentBps: raw.percent_bps,
      services: new Set(raw.services), capMinor: new Map(Object.entries(raw.cap_minor)),
    }));
  }
  return promotions;
}

function buildEligibility(markets: ReadonlyMap<string, Market>): ReadonlyMap<string, readonly string[]> {
  const eligibility = new Map<string, readonly string[]>();
  for (const [home, targets] of Object.entries(ELIGIBILITY_FILE)) {
    if (findCountry(home) === undefined) fail(`eligibility.json ${home}`, 'not an enabled country');
    if (new Set(targets).size !== targets.length) fail(`eligibility.json ${home}`, 'a service country listed twice');
    for (const target of targets) if (!markets.has(target)) fail(`eligibility.json ${home}`, `${target} is no services market`);
    eligibility.set(home, Object.freeze([...targets]));
  }
  for (const country of listCountries()) {
    if (country.registration_enabled && !eligibility.has(country.code)) fail(`eligibility.json ${country.code}`, 'customers can register here but may buy nowhere');
  }
  return eligibility;
}

export const MARKETS = buildMarkets();
export const PROMOTIONS = buildPromotions(MARKETS);
export const ELIGIBILITY = buildEligibility(MARKETS);
