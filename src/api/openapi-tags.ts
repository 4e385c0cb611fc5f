// The OpenAPI document's tags: one per endpoint family, in the order the API contract presents its
// sections (countries first, then services, ... webhooks), kobo's own additions after them.
// Any thread; pure data. Invariant: every operation's tag is one of these (test/http/openapi-*.test.ts).

export interface TagDoc {
  name: string;
  /** Route families (RouteDef.family) whose operations default to this tag. */
  families: readonly string[];
  description: string;
}

export const TAGS: readonly TagDoc[] = [
  { name: 'Countries', families: ['countries'], description: 'Public, no key needed: the enabled countries and the boot context of one (its services, payment methods with their limits, languages).' },
  { name: 'Services', families: ['services'], description: 'Bill payments and top-ups: the catalogue of a service country, each service definition, the operators, plans and variants to pick from, recipient validation and the quote.' },
  { name: 'Service orders', families: [], description: 'Buy a service: create the order (it opens its payment), read it, poll its compact status while the customer pays.' },
  { name: 'Transactions', families: ['transactions'], description: 'Every money-moving attempt is a transaction with a status history, a hold and a failure when it fails; cancel a pending one, retry one that failed for a retryable reason.' },
  { name: 'Payments', families: ['payments'], description: "Collections into a customer's wallet (bank transfer, card, mobile money) or inline wallet debits; the methods a customer may select." },
  { name: 'Transfers', families: ['transfers'], description: 'Payouts to a beneficiary: amount plus fee held at once, settled by the payout rail.' },
  { name: 'Beneficiaries', families: ['beneficiaries'], description: 'Payout destinations whose account name the rail has resolved and verified.' },
  { name: 'Customers', families: ['customers'], description: 'The people money moves for. Creating one opens its home-currency wallet.' },
  { name: 'Exchange', families: ['exchange'], description: 'Quote a currency conversion (rate after spread, expiry), then execute it: both ledger legs post atomically.' },
  { name: 'Wallets', families: ['wallets'], description: "A customer's balance in one currency: available and held amounts." },
  { name: 'Webhooks', families: ['webhooks'], description: 'Subscribe an HTTPS URL to event types, list subscriptions and delivery attempts, redeliver an event. Deliveries are signed (X-Service-Signature).' },
  { name: 'Events', families: ['events'], description: 'What webhooks carry: one object per event, deduplicated on event_key. The payload of each event type is under Webhooks in this document.' },
  { name: 'Keys', families: ['keys'], description: "Beyond the contract: the account's API keys over HTTP (what `kobo keys` does): list, create, revoke, rotate. A secret is answered once. Account keys only." },
  { name: 'Checkout', families: ['checkout'], description: 'Sandbox hosted card checkout: the page a payment.provider.redirect_url points to, and the payer completing or declining there.' },
  { name: 'Test helpers', families: ['test_helpers'], description: 'Sandbox keys only: settle or fail a payment as the rail would, move the account clock, take a service rail down.' },
  { name: 'Connectors', families: ['connectors'], description: 'Live rails report outcomes here, signed with their connector secret.' },
  { name: 'OpenAPI', families: ['docs'], description: 'This document, for code generators and reference renderers.' },
];

/** The tag of a family's operations (undefined: a family no tag claims, which the document tests reject). */
export function tagOfFamily(family: string): string | undefined {
  return TAGS.find((t) => t.families.includes(family))?.name;
}

/** A tag's position in the contract's order (tags not listed sort last). */
export function tagRank(name: string): number {
  const rank = TAGS.findIndex((t) => t.name === name);
  return rank === -1 ? TAGS.length : rank;
}
