// Request and response schemas of the services catalogue endpoints (catalogue, definition,
// availability, payment methods, operators, plans, variants, validate) and the rail-down test helper.
// Any thread. Query values arrive as strings; a query country is case-insensitive (like path codes).
// Invariant: validate's country_code and account_ref are optional here so that their absence is the
// spec's 422 VALIDATION_ERROR, decided by the handler, not the schema's 400.
import Type, { type Static } from 'typebox';
import { CountryCode, Nullable, SafeText, Ulid } from './common.schema.ts';

const QueryCountry = Type.String({ pattern: '^[A-Za-z]{2}$', description: 'Service country, ISO 3166-1 alpha-2' });
const QueryCustomer = Type.Optional(Ulid);
const ServiceCodeSchema = Type.Union([
  Type.Literal('airtime'), Type.Literal('data'), Type.Literal('electricity'), Type.Literal('water'), Type.Literal('internet'),
  Type.Literal('tv'), Type.Literal('betting'), Type.Literal('gift_cards'), Type.Literal('education'), Type.Literal('insurance'),
]);
const OperatorCodeInput = Type.String({ pattern: '^[A-Za-z0-9_]{1,20}$' });
const Loose = { additionalProperties: true } as const;

export const ServiceCountryQuery = Type.Object({ country: QueryCountry, customer_id: QueryCustomer }, { additionalProperties: false });
export type ServiceCountryQuery = Static<typeof ServiceCountryQuery>;

/** `country` is optional here: without it every eligible service country is listed; with it, that one is selected. */
export const ServiceAvailabilityQuery = Type.Object({ country: Type.Optional(QueryCountry), customer_id: QueryCustomer }, { additionalProperties: false });

/** validate takes its country and customer in the body; the query forms every other services endpoint takes work too. */
export const ServiceValidateQuery = Type.Object({ country: Type.Optional(QueryCountry), customer_id: QueryCustomer }, { additionalProperties: false });

export const ServicePaymentMethodsQuery = Type.Object({
  country: QueryCountry,
  customer_id: QueryCustomer,
  amount_minor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,14}$', description: 'provider_cost_minor to price the fee of each method' })),
}, { additionalProperties: false });

export const ServicePlansQuery = Type.Object({
  country: QueryCountry,
  customer_id: QueryCustomer,
  operator: Type.Optional(OperatorCodeInput),
  /** The spec's prose sends the operators listing's code as operator_code; its plans table names it operator. Both are taken. */
  operator_code: Type.Optional(OperatorCodeInput),
  kind: Type.Optional(Type.Union([Type.Literal('plans'), Type.Literal('packages'), Type.Literal('rates')])),
  phone: Type.Optional(SafeText({ minLength: 1, maxLength: 32, description: 'Destination number (escape + as %2B)' })),
  account_ref: Type.Optional(SafeText({ minLength: 1, maxLength: 64 })),
}, { additionalProperties: false });

export const ServiceValidateBody = Type.Object({
  country_code: Type.Optional(CountryCode),
  account_ref: Type.Optional(SafeText({ maxLength: 254 })),
  operator_code: Type.Optional(OperatorCodeInput),
  product_code: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' })),
  meter_type: Type.Optional(Type.String({ pattern: '^[a-z_]{1,20}$' })),
  phone: Type.Optional(SafeText({ minLength: 1, maxLength: 32 })),
  customer_id: Type.Optional(Ulid),
}, { additionalProperties: false });
export type ServiceValidateBody = Static<typeof ServiceValidateBody>;

export const RailSwitchBody = Type.Object({ service_code: ServiceCodeSchema, country: CountryCode, down: Type.Boolean() }, { additionalProperties: false });
export type RailSwitchBody = Static<typeof RailSwitchBody>;

export const RailSwitch = Type.Object({ service_code: ServiceCodeSchema, country: CountryCode, down: Type.Boolean() });

const AccessSchema = Type.Object({ visible: Type.Boolean(), executable: Type.Boolean() });
const AvailabilitySchema = Type.Object({ status: Type.String(), reason: Nullable(Type.String()) });

export const CatalogueItem = Type.Object({
  service_code: ServiceCodeSchema,
  title: Type.String(),
  description: Type.String(),
  icon: Type.String(),
  icon_url: Nullable(Type.String()),
  category: Type.String(),
  sort_order: Type.Integer(),
  state: Type.Union([Type.Literal('active'), Type.Literal('coming_soon'), Type.Literal('maintenance'), Type.Literal('unavailable')]),
  access: AccessSchema,
  availability: AvailabilitySchema,
  presentation: Type.Object({}, Loose),
  actions: Type.Array(Type.Object({ type: Type.String(), label: Type.String() }, Loose)),
});

export const Catalogue = Type.Object({ country_code: CountryCode, items: Type.Array(CatalogueItem) });

export const ServiceDefinition = Type.Object({
  service_code: ServiceCodeSchema,
  country_code: CountryCode,
  pricing: Type.Union([Type.Literal('fixed'), Type.Literal('open')]),
  currency: Type.String(),
  steps: Type.Array(Type.String()),
  requires_validation: Type.Boolean(),
  limits: Type.Object({ min_amount_minor: Type.Integer(), max_amount_minor: Type.Integer(), currency: Type.String() }, Loose),
  country_context: Type.Object({}, Loose),
  form_schema: Type.Object({}, Loose),
  rules: Type.Array(Type.Object({ rule: Type.String() }, Loose)),
}, Loose);

export const ServiceAvailability = Type.Object({
  service_code: ServiceCodeSchema,
  customer_id: Ulid,
  home_country: CountryCode,
  requested_country_code: Nullable(CountryCode),
  requested_available: Nullable(Type.Boolean({ description: 'Whether the customer may buy the service in the requested country now' })),
  default_country_code: Nullable(CountryCode),
  items: Type.Array(Type.Object({
    country_code: CountryCode,
    name: Type.String(),
    flag_emoji: Type.String(),
    currency: Type.String(),
    state: Type.String(),
    access: AccessSchema,
    availability: AvailabilitySchema,
  })),
});

export const ServicePaymentMethods = Type.Object({
  service_code: ServiceCodeSchema,
  country_code: CountryCode,
  customer_id: Ulid,
  paying_currency: Type.String(),
  currency: Type.String({ description: 'Currency of provider_cost_minor and of the fee rules' }),
  items: Type.Array(Type.Object({
    method: Type.String(),
    selectable: Type.Boolean(),
    reason: Nullable(Type.String()),
    min_amount_minor: Nullable(Type.Integer()),
    max_amount_minor: Nullable(Type.Integer()),
    fee: Type.Object({ flat_minor: Type.Integer(), percent_bps: Type.Integer(), cap_minor: Nullable(Type.Integer()), currency: Type.String() }),
    fee_minor: Nullable(Type.Integer()),
  })),
});

const OperatorItem = Type.Object({ code: Type.String(), title: Type.String(), service_code: Type.String(), country: CountryCode });
export const OperatorList = Type.Object({ service_code: ServiceCodeSchema, country_code: CountryCode, items: Type.Array(OperatorItem) });

const PlanItem = Type.Object({
  code: Type.String(),
  title: Type.String(),
  operator_code: Nullable(Type.String()),
  service_code: Type.String(),
  country: CountryCode,
  amount_minor: Nullable(Type.Integer()),
  currency: Type.String(),
  validity: Nullable(Type.String()),
  category: Type.Union([Type.Literal('daily'), Type.Literal('weekly'), Type.Literal('monthly'), Type.Literal('others')]),
  pricing: Type.Union([Type.Literal('fixed'), Type.Literal('open')]),
});
export const PlanList = Type.Object({
  service_code: ServiceCodeSchema,
  country_code: CountryCode,
  operator_code: Nullable(Type.String()),
  kind: Type.String(),
  presentation: Type.Object({ picker: Type.Union([Type.Literal('tabs'), Type.Literal('select')]), categories: Type.Array(Type.String()) }),
  items: Type.Array(PlanItem),
});

export const VariantList = Type.Object({
  service_code: ServiceCodeSchema,
  country_code: CountryCode,
  items: Type.Array(Type.Object({ code: Type.String(), title: Type.String() })),
});

export const PhoneValidation = Type.Object({
  valid: Type.Boolean(),
  normalized: Nullable(Type.String()),
  country_code: Nullable(Type.String()),
  number_type: Nullable(Type.String()),
  carrier: Nullable(Type.String()),
  messages: Type.Array(Type.String()),
});

export const ValidationResult = Type.Object({
  service_code: ServiceCodeSchema,
  country_code: CountryCode,
  account_ref: Type.String(),
  operator_code: Nullable(Type.String()),
  meter_type: Nullable(Type.String()),
  product_code: Nullable(Type.String()),
  valid: Type.Boolean(),
  customer_name: Type.String(),
  address: Type.String(),
  serviceability: Type.Object({ serviceable: Type.Boolean(), reason: Nullable(Type.String()) }),
  phone_validation: Nullable(PhoneValidation),
  validated_at: Type.String({ format: 'date-time' }),
});
