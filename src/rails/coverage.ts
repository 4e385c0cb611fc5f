// Which rails exist for an owner: the sandbox simulates every rail; live money moves only through an
// operator's connector that declares the rail, country, currency and service. Any thread (the main
// thread and every shard set the same connector list at start-up, from config).
// Invariant: a live owner is never served by a sandbox rail; no connector means "not offered".

import type { RailKind } from './rail.ts';

export type { RailKind };

/** What one connector declares it serves (an empty list = any value of that dimension). */
export interface ConnectorCoverage {
  name: string;
  rails: readonly RailKind[];
  /** Collection methods (card, bank_transfer, mobile_money) or payout types (bank_account, mobile_money). */
  methods: readonly string[];
  countries: readonly string[];
  currencies: readonly string[];
  services: readonly string[];
}

export interface RailScope {
  method?: string;
  country?: string;
  currency?: string;
  service?: string;
}

/** The reason a live method, payout or service shows as unavailable when no connector serves it. */
export const NO_LIVE_CONNECTOR = 'no_live_connector';

let connectors: readonly ConnectorCoverage[] = [];
/** Bumped by every setConnectors: what was computed from the coverage before is stale. */
let generation = 0;

export function setConnectors(list: readonly ConnectorCoverage[]): void {
  connectors = Object.freeze([...list]);
  generation += 1;
}

/** Changes whenever the connectors change (a cache of coverage answers compares it). */
export function coverageGeneration(): number {
  return generation;
}

const covers = (allowed: readonly string[], value: string | undefined): boolean =>
  allowed.length === 0 || value === undefined || allowed.includes(value);

/** The connector serving this live rail in every scope given (an FX pair: both currencies), or undefined. */
export function liveConnectorFor(kind: RailKind, ...scopes: RailScope[]): ConnectorCoverage | undefined {
  return connectors.find((c) => c.rails.includes(kind) && scopes.every((scope) =>
    covers(c.methods, scope.method)
    && covers(c.countries, scope.country)
    && covers(c.currencies, scope.currency)
    && covers(c.services, scope.service)));
}

export function isLiveOwner(owner: string): boolean {
  return owner.startsWith('live:');
}

/** True when `owner` may use this rail: always in the sandbox, only through a connector in live. */
export function railServes(owner: string, kind: RailKind, scope: RailScope): boolean {
  return !isLiveOwner(owner) || liveConnectorFor(kind, scope) !== undefined;
}

/** What the catalogue asks about a service (see CustomerProfile.unservedReason): NO_LIVE_CONNECTOR, or null when served. */
export function fulfilmentGap(owner: string): (scope: RailScope) => string | null {
  return (scope) => (railServes(owner, 'fulfilment', scope) ? null : NO_LIVE_CONNECTOR);
}
