// The operator's connector list (KOBO_CONNECTORS_FILE): which live rails each connector serves, where
// it listens and the secret both sides sign with. Read once by src/config.ts at start-up.
// Invariant: a file that does not parse or check stops start-up with a message naming the problem.
import fs from 'node:fs';
import Type, { type Static } from 'typebox';
import { Compile } from 'typebox/compile';
import { findCountry } from '../catalogue/countries.ts';
import { isCurrencyCode } from '../catalogue/currencies.ts';
import { SERVICE_CODES } from '../catalogue/services-data.ts';

const RailName = Type.Union([Type.Literal('collection'), Type.Literal('payout'), Type.Literal('resolve'), Type.Literal('fulfilment'), Type.Literal('fx')]);
const Codes = Type.Array(Type.String({ minLength: 1, maxLength: 32 }), { maxItems: 256 });

export const ConnectorSchema = Type.Object({
  name: Type.String({ pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' }),
  url: Type.String({ pattern: '^https?://[^\\s]+$' }),
  secret: Type.String({ minLength: 16, maxLength: 256 }),
  rails: Type.Array(RailName, { minItems: 1 }),
  methods: Type.Optional(Codes),
  countries: Type.Optional(Codes),
  currencies: Type.Optional(Codes),
  services: Type.Optional(Codes),
  /** A request unanswered after this is `unknown` and requeried later. */
  timeout_ms: Type.Optional(Type.Integer({ minimum: 50, maximum: 120_000 })),
}, { additionalProperties: false });
export type ConnectorConfig = Static<typeof ConnectorSchema>;

const FileSchema = Type.Array(ConnectorSchema, { maxItems: 64 });
const checkFile = Compile(FileSchema);

export const CONNECTOR_TIMEOUT_MS_DEFAULT = 10_000;

/** Collection methods a connector can take payments by, and payout types it can pay out to. */
const CONNECTOR_METHODS: readonly string[] = ['card', 'bank_transfer', 'mobile_money', 'virtual_account', 'bank_account'];

// A misspelt code (`NGN` under countries, `banktransfer`) would otherwise make a connector silently
// cover nothing: the operator would see live methods "unavailable" with no hint why.
const CODE_CHECKS = {
  methods: { known: (code: string) => CONNECTOR_METHODS.includes(code), what: `a method (${CONNECTOR_METHODS.join(', ')})` },
  countries: { known: (code: string) => findCountry(code) !== undefined, what: 'the ISO 3166 alpha-2 code of a country in the reference data' },
  currencies: { known: isCurrencyCode, what: 'an ISO 4217 currency code' },
  services: { known: (code: string) => (SERVICE_CODES as readonly string[]).includes(code), what: `a service code (${SERVICE_CODES.join(', ')})` },
} as const;

function unknownCodeOf(c: ConnectorConfig): string | undefined {
  for (const [field, check] of Object.entries(CODE_CHECKS)) {
    const bad = (c[field as keyof typeof CODE_CHECKS] ?? []).find((code) => !check.known(code));
    if (bad !== undefined) return `connector ${c.name}: ${field} has "${bad}", which is not ${check.what}`;
  }
  return undefined;
}

export function loadConnectorsFile(file: string): ConnectorConfig[] {
  if (file === '') return [];
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    // A missing file is the usual mistake (a wrong path, a volume not mounted): say so, not "bad JSON".
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`config: KOBO_CONNECTORS_FILE ${file} does not exist`, { cause: error });
    throw new Error(`config: KOBO_CONNECTORS_FILE ${file} cannot be read (${code ?? (error as Error).message})`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`config: KOBO_CONNECTORS_FILE ${file} is not valid JSON (${(error as Error).message})`, { cause: error });
  }
  if (!checkFile.Check(parsed)) {
    const first = [...checkFile.Errors(parsed)][0];
    throw new Error(`config: KOBO_CONNECTORS_FILE ${file}: ${first?.instancePath ?? ''} ${first?.message ?? 'invalid'}`);
  }
  const names = new Set<string>();
  for (const c of parsed) {
    if (names.has(c.name)) throw new Error(`config: KOBO_CONNECTORS_FILE ${file}: connector name ${c.name} appears twice`);
    names.add(c.name);
    const problem = unknownCodeOf(c);
    if (problem !== undefined) throw new Error(`config: KOBO_CONNECTORS_FILE ${file}: ${problem}`);
  }
  return parsed;
}

export function coverageOf(c: ConnectorConfig): { name: string; rails: ConnectorConfig['rails']; methods: string[]; countries: string[]; currencies: string[]; services: string[] } {
  return { name: c.name, rails: c.rails, methods: c.methods ?? [], countries: c.countries ?? [], currencies: c.currencies ?? [], services: c.services ?? [] };
}
