// Examples for the OpenAPI document: a sample value of any response schema (realistic values chosen by
// field name), the documented form of a schema (unions of constants become enums), and a curl command.
// Main thread, at start. Invariant: every sample satisfies its schema (openapi.ts asserts it).
import { SAFE_TEXT_PATTERN, SAFE_TEXT_RULE } from '../schemas/common.schema.ts';
import { EXAMPLE_IDS } from './openapi-operations.ts';

export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minimum?: number;
  minItems?: number;
  minLength?: number;
  maxLength?: number;
  [keyword: string]: unknown;
}

const DEPTH_MAX = 8;
const SAMPLE_TIME = '2026-11-26T09:30:00.000Z';

/** Sample ids by the `object` constant of the resource that carries them. */
const ID_BY_OBJECT: Record<string, string> = {
  customer: EXAMPLE_IDS.customer, wallet: EXAMPLE_IDS.wallet, transaction: EXAMPLE_IDS.transaction, payment: EXAMPLE_IDS.payment,
  transfer: EXAMPLE_IDS.transfer, beneficiary: EXAMPLE_IDS.beneficiary, exchange_quote: EXAMPLE_IDS.quote, exchange: EXAMPLE_IDS.exchange,
  service_order: EXAMPLE_IDS.order, webhook_subscription: EXAMPLE_IDS.subscription, webhook_delivery: EXAMPLE_IDS.delivery, event: EXAMPLE_IDS.event,
  // The same by the name of the field or path that holds a resource without an `object` field.
  order: EXAMPLE_IDS.order, quote: EXAMPLE_IDS.quote, subscription: EXAMPLE_IDS.subscription, delivery: EXAMPLE_IDS.delivery, redeliver: EXAMPLE_IDS.delivery,
  settle: EXAMPLE_IDS.payment, fail: EXAMPLE_IDS.payment, cancel: EXAMPLE_IDS.transaction, retry: EXAMPLE_IDS.transaction,
};

/** Realistic values by field name, used when they satisfy the field's schema. */
const VALUE_BY_NAME: Record<string, unknown> = {
  customer_id: EXAMPLE_IDS.customer, wallet_id: EXAMPLE_IDS.wallet, transaction_id: EXAMPLE_IDS.transaction, payment_id: EXAMPLE_IDS.payment,
  payment_transaction_id: EXAMPLE_IDS.transaction, transfer_id: EXAMPLE_IDS.transfer, beneficiary_id: EXAMPLE_IDS.beneficiary, quote_id: EXAMPLE_IDS.quote,
  exchange_id: EXAMPLE_IDS.exchange, order_id: EXAMPLE_IDS.order, subscription_id: EXAMPLE_IDS.subscription, event_id: EXAMPLE_IDS.event, object_id: EXAMPLE_IDS.payment,
  currency: 'NGN', from_currency: 'NGN', source_currency: 'NGN', to_currency: 'USD', destination_currency: 'NGN',
  country: 'NG', country_code: 'NG', code: 'NG', name: 'Ada Obi', account_name: 'ADA OBI', email: 'ada.obi@example.com', phone: '+2348031234567',
  amount_minor: 150000, fee_minor: 1500, net_amount_minor: 148500, from_amount_minor: 1500000, to_amount_minor: 98000, provider_cost_minor: 100000,
  customer_amount_minor: 101500, available_minor: 1250000, held_minor: 0, balance_minor: 1250000, min_amount_minor: 10000, max_amount_minor: 50000000,
  method: 'bank_transfer', payment_method: 'wallet', service_code: 'airtime', operator_code: 'MTN', operator: 'MTN', event_type: 'payment.completed',
  event_key: `payment.completed:${EXAMPLE_IDS.transaction}`, url: 'https://example.com/hooks/kobo', reference: 'invoice-2231', narration: 'Rent for December',
  bank_code: '058', account_number: '0123456789', account_ref: '45012345678', provider_reference: 'SBX-4F2A91', rate: '0.000653', fx_rate: '0.000653',
  secret: 'whsec_3b1f0c9a7d5e4b2a8c6e0f1d9b7a5c3e', tier: 'tier_1', type: 'payment', stage: 'provider', message: 'The provider rejected the request.',
  status: 'pending', meter_type: 'prepaid', idempotency_key: '7c1e9a52-5f0d-4c1b-9a77-2f4e1d8b6c30', title: 'Airtime', description: 'Top up any mobile number',
  id: EXAMPLE_IDS.event, failure_code: 'PROVIDER_ERROR', last_error: 'HTTP 503', language_code: 'en', icon: 'phone', label: 'Prepaid',
  currency_code: 'NGN', paying_currency: 'NGN', icon_url: '/static/icons/airtime.svg', category: 'telecom', categories: 'telecom', reason: 'kyc_level_too_low',
  steps: 'recipient', rule: 'min_amount', flag_emoji: '🇳🇬', state: 'available', kind: 'airtime', validity: '30 days', product_code: 'mtn-1gb-30d',
  customer_name: 'ADA OBI', address: '12 Allen Avenue, Ikeja', normalized: '+2348031234567', number_type: 'MOBILE', carrier: 'MTN', promotion_code: 'WELCOME10',
  checkout_url: 'https://pay.example.com/checkout/5f1c2a9e', reported_by: 'acme-pay', bank_name: 'Guaranty Trust Bank', mid_rate: '0.000663', events: 'payment.completed',
  error: 'HTTP 503', now: SAMPLE_TIME, consecutive_failures: 0, attempts: 1, attempt: 1,
};

/** Optional response fields a typical answer carries (the signing secret of a new subscription). */
const OPTIONAL_SHOWN: ReadonlySet<string> = new Set(['secret']);
const NULL_BY_DEFAULT: ReadonlySet<string> = new Set(['transfer_id', 'reason', 'failure', 'failure_code', 'last_error', 'error', 'resolution', 'resolved_at', 'completed_at', 'next_attempt_at']);

/** Field values that depend on the resource holding them (a country's name is not a person's). */
const VALUE_BY_RESOURCE: Record<string, Record<string, unknown>> = {
  country: { name: 'Nigeria', code: 'NG' },
  operator: { code: 'MTN', title: 'MTN' },
  variant: { code: 'prepaid', title: 'Prepaid meter' },
  plan: { code: 'mtn-1gb-30d', title: '1 GB, 30 days' },
  beneficiary: { name: 'ADA OBI' },
};

/** A union of constants (`anyOf: [{const}, …]`) as one enum, which generators and renderers read better. */
function enumOf(schema: JsonSchema): JsonSchema | null {
  const options = schema.anyOf;
  if (options === undefined || options.length === 0 || !options.every((o) => o.const !== undefined && typeof o.const === typeof options[0]?.const)) return null;
  const { anyOf: _unused, ...rest } = schema;
  return { ...rest, type: typeof options[0]?.const === 'number' ? 'number' : 'string', enum: options.map((o) => o.const) };
}

/**
 * A schema as the document shows it, recursively (the input is not changed): unions of constants as
 * enums; the safe-text rule in words rather than as its pattern, whose \p{…} classes need the `u` flag
 * that validators of the document (Spectral's among them) do not all apply.
 */
export function documented(schema: JsonSchema): JsonSchema {
  const asEnum = enumOf(schema);
  if (asEnum !== null) return asEnum;
  const out: JsonSchema = { ...schema };
  if (schema.pattern === SAFE_TEXT_PATTERN) {
    delete out.pattern;
    out.description = `${schema.description === undefined ? '' : `${schema.description}; `}${SAFE_TEXT_RULE}`;
  }
  if (schema.properties !== undefined) out.properties = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, documented(v)]));
  if (schema.items !== undefined) out.items = documented(schema.items);
  if (schema.anyOf !== undefined) out.anyOf = schema.anyOf.map(documented);
  return out;
}

function matches(schema: JsonSchema, value: string): boolean {
  if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) return false;
  return value.length >= (schema.minLength ?? 0) && value.length <= (schema.maxLength ?? Infinity);
}

function sampleString(schema: JsonSchema, name: string): string {
  if (schema.format === 'date-time' || name.endsWith('_at')) return SAMPLE_TIME;
  // An array's items are sampled under the singular (steps → step): both spellings are looked up.
  const named = VALUE_BY_NAME[name] ?? VALUE_BY_NAME[`${name}s`];
  if (typeof named === 'string' && matches(schema, named)) return named;
  const candidates = ['sample', 'NGN', 'NG', '1', 'a', EXAMPLE_IDS.transaction];
  return candidates.find((c) => matches(schema, c)) ?? 'sample';
}

/**
 * A sample value of `schema`: constants and enums take their first value, a nullable field its non-null
 * form (some stay null, NULL_BY_DEFAULT), an array one item, an object its required properties. `resolve` follows components $refs.
 */
export function sampleOf(schema: JsonSchema, resolve: (ref: string) => JsonSchema, name = '', depth = 0): unknown {
  if (schema.$ref !== undefined) return sampleOf(resolve(schema.$ref), resolve, name, depth);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum !== undefined) return schema.enum[0];
  if (schema.anyOf !== undefined) {
    // Nullable fields that are null in the usual case (no failure yet, nothing to explain) stay null.
    if (NULL_BY_DEFAULT.has(name) && schema.anyOf.some((s) => s.type === 'null')) return null;
    const nonNull = schema.anyOf.find((s) => s.type !== 'null') ?? schema.anyOf[0];
    return nonNull === undefined ? null : sampleOf(nonNull, resolve, name, depth);
  }
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (depth > DEPTH_MAX) return type === 'array' ? [] : type === 'object' ? {} : null;
  switch (type) {
    case 'object': {
      const properties = schema.properties ?? {};
      // The resource: its `object` constant, else the name of the field (or path) that holds it.
      const object = typeof properties.object?.const === 'string' ? properties.object.const : name;
      const out: Record<string, unknown> = {};
      const required = new Set(schema.required ?? []);
      for (const [key, field] of Object.entries(properties)) {
        // Optional fields appear only where a typical answer has them.
        if (!required.has(key) && !OPTIONAL_SHOWN.has(key)) continue;
        const id = key === 'id' ? ID_BY_OBJECT[object] : undefined;
        const own = VALUE_BY_RESOURCE[object]?.[key];
        if (own !== undefined) out[key] = own;
        // A list's `items` are of the list's resource (GET …/operators: items are operators).
        else out[key] = id !== undefined && matches(field, id) ? id : sampleOf(field, resolve, key === 'items' ? object : key, depth + 1);
      }
      return out;
    }
    case 'array': {
      const item = schema.items === undefined ? 'sample' : sampleOf(schema.items, resolve, name.replace(/s$/, ''), depth + 1);
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'integer':
    case 'number': {
      const named = VALUE_BY_NAME[name];
      if (typeof named === 'number') return named;
      return Math.max(schema.minimum ?? 0, name.endsWith('_minor') ? 100000 : 1);
    }
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'string':
      return sampleString(schema, name);
    default:
      return {};
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export interface CurlInput {
  method: string;
  /** The path with its parameters filled in and the query string appended. */
  url: string;
  authenticated: boolean;
  idempotent: boolean;
  body: unknown;
}

/** A curl command a reader can paste (KOBO_URL and KOBO_KEY from the environment). */
export function curlOf(input: CurlInput): string {
  const lines = [`curl -X ${input.method} "$KOBO_URL${input.url}"`];
  if (input.authenticated) lines.push('-H "Authorization: Bearer $KOBO_KEY"');
  if (input.idempotent) lines.push('-H "Idempotency-Key: $(uuidgen)"');
  if (input.body !== undefined) lines.push("-H 'Content-Type: application/json'", `-d ${shellQuote(JSON.stringify(input.body, null, 2))}`);
  return lines.join(' \\\n  ');
}
