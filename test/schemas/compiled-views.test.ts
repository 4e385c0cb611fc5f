// The payment and transaction replies are written by serialisers compiled from their response schemas.
// For random entities of every shape (methods, live and test owners, refunds, reconciliations, exchanges,
// text with quotes and non-ASCII) their bytes must equal what the hand-written views gave before (stored
// replies are rebuilt from views, so a changed byte would change an idempotent replay), the view must
// print the same JSON, and it must satisfy the schema.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { customerJson, customerView, paymentJson, paymentView, transactionJson, transactionView, setPublicUrl, walletJson, walletView } from '../../src/shard/views.ts';
import { Customer as CustomerSchema, Wallet as WalletSchema } from '../../src/schemas/customer.schema.ts';
import { Transfer as TransferSchema } from '../../src/schemas/transfer.schema.ts';
import { transferJson, transferView } from '../../src/shard/handlers/transfers.ts';
import { Payment as PaymentSchema, Transaction as TransactionSchema } from '../../src/schemas/transaction.schema.ts';
import { compileView } from '../../src/schemas/compile-serialiser.ts';
import type { Customer, Payment, Transaction, Transfer, Wallet } from '../../src/shard/state.ts';
import { isoTime as iso } from '../../src/iso-time.ts';
import Type, { type TSchema } from 'typebox';

const ulid = fc.stringMatching(/^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
const ms = fc.integer({ min: 0, max: 4_102_444_800_000 });
const minor = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });
const text = fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('quote " and \\ back', 'naïve €', 'line\u2028sep', '😀'));

const paymentArb: fc.Arbitrary<Payment> = fc.record({
  id: ulid, owner: fc.constantFrom('test:acct_1', 'live:acct_2'), customerId: ulid, transactionId: ulid,
  method: fc.constantFrom('card', 'bank_transfer', 'wallet', 'mobile_money', 'virtual_account'),
  status: fc.constantFrom('pending', 'processing', 'completed', 'failed'), amountMinor: minor, feeMinor: minor, currency: fc.constantFrom('NGN', 'GHS'),
  reference: fc.option(text, { nil: null }), walletId: ulid,
  instructions: fc.option(fc.record({ bankName: text, bankCode: text, accountNumber: text, accountName: text, reference: text, expiresAtMs: ms }), { nil: null }),
  checkoutToken: fc.option(text, { nil: undefined }), promptPhone: fc.option(text, { nil: undefined }),
  rail: fc.option(fc.record({ providerReference: fc.option(text, { nil: null }), payUrl: fc.option(text, { nil: null }) }), { nil: undefined }),
  createdAtMs: ms, updatedAtMs: ms,
}, { requiredKeys: ['id', 'owner', 'customerId', 'transactionId', 'method', 'status', 'amountMinor', 'feeMinor', 'currency', 'reference', 'walletId', 'instructions', 'createdAtMs', 'updatedAtMs'] }) as fc.Arbitrary<Payment>;

const transactionArb: fc.Arbitrary<Transaction> = fc.record({
  id: ulid, owner: fc.constant('test:acct_1'), customerId: ulid,
  type: fc.constantFrom('payment', 'transfer', 'exchange', 'funding', 'service'), status: fc.constantFrom('pending', 'processing', 'completed', 'failed', 'unknown'),
  amountMinor: minor, feeMinor: minor, currency: fc.constantFrom('NGN', 'KES'), reference: fc.option(text, { nil: null }),
  failure: fc.option(fc.record({ code: text, stage: text, message: text }), { nil: null }),
  holdId: fc.option(ulid, { nil: null }), holdStatus: fc.constantFrom('none', 'held', 'captured', 'released'), attempt: fc.integer({ min: 1, max: 9 }),
  history: fc.array(fc.record({ status: fc.constantFrom('pending', 'processing', 'completed', 'failed'), atMs: ms, attempt: fc.integer({ min: 1, max: 9 }), failureCode: fc.option(text, { nil: null }) }), { maxLength: 4 }),
  paymentId: fc.option(ulid, { nil: null }), transferId: fc.option(ulid, { nil: null }),
  exchange: fc.option(fc.record({ id: ulid, toAmountMinor: minor, toCurrency: fc.constant('USD') }), { nil: undefined }),
  refund: fc.option(fc.record({ status: fc.constantFrom('pending', 'completed'), amountMinor: minor, currency: fc.constant('NGN'), createdAtMs: ms, completedAtMs: fc.option(ms, { nil: null }) }), { nil: undefined }),
  reconciliation: fc.option(fc.record({
    status: fc.constantFrom('required', 'resolved'), recorded: fc.constantFrom('completed', 'failed'), reported: fc.constantFrom('completed', 'failed'),
    kind: fc.constantFrom('payout', 'collection', 'fulfilment'), entityId: ulid, attempt: fc.integer({ min: 1, max: 9 }), rail: text,
    providerReference: fc.option(text, { nil: null }), failureCode: fc.option(text, { nil: null }), reportedAtMs: ms,
    resolution: fc.option(fc.constantFrom('recorded', 'reported'), { nil: undefined }), resolvedAtMs: fc.option(ms, { nil: undefined }),
  }, { requiredKeys: ['status', 'recorded', 'reported', 'kind', 'entityId', 'attempt', 'rail', 'providerReference', 'failureCode', 'reportedAtMs'] }), { nil: undefined }),
  createdAtMs: ms, updatedAtMs: ms,
}, { requiredKeys: ['id', 'owner', 'customerId', 'type', 'status', 'amountMinor', 'feeMinor', 'currency', 'reference', 'failure', 'holdId', 'holdStatus', 'attempt', 'history', 'paymentId', 'transferId', 'createdAtMs', 'updatedAtMs'] }) as unknown as fc.Arbitrary<Transaction>;

const customerArb: fc.Arbitrary<Customer> = fc.record({
  id: ulid, owner: fc.constant('test:acct_1'), name: text, email: text, phone: text, countryCode: fc.constantFrom('NG', 'KE'), tier: fc.constantFrom('tier_1', 'tier_2', 'tier_3'),
  kycLevel: fc.integer({ min: 0, max: 3 }), pinHash: fc.option(text, { nil: null }), wallets: fc.dictionary(fc.constantFrom('NGN', 'USD', 'KES'), ulid),
  usageDay: fc.nat(), usageMinor: fc.constant({}), createdAtMs: ms, updatedAtMs: ms,
}) as fc.Arbitrary<Customer>;

const walletArb: fc.Arbitrary<Wallet> = fc.record({
  id: ulid, kind: fc.constant('wallet'), currency: fc.constantFrom('NGN', 'USD'), debitsPending: minor, debitsPosted: minor, creditsPending: minor, creditsPosted: minor,
  customerId: ulid, owner: fc.constant('test:acct_1'), createdAtMs: ms, updatedAtMs: ms,
}) as fc.Arbitrary<Wallet>;

const transferArb: fc.Arbitrary<Transfer> = fc.record({
  id: ulid, owner: fc.constant('test:acct_1'), customerId: ulid, beneficiaryId: ulid, transactionId: ulid,
  status: fc.constantFrom('pending', 'processing', 'completed', 'failed', 'unknown'), amountMinor: minor, feeMinor: minor, currency: fc.constantFrom('NGN', 'USD'),
  narration: fc.option(text, { nil: null }), quoteId: fc.option(ulid, { nil: null }), destinationAmountMinor: minor, destinationCurrency: fc.constantFrom('NGN', 'GHS'),
  providerReference: fc.option(text, { nil: null }), createdAtMs: ms, updatedAtMs: ms,
}) as fc.Arbitrary<Transfer>;

// The views as they were written by hand before they were compiled: the bytes clients were sent.
function providerBefore(p: Payment): object {
  const expires = iso(p.instructions?.expiresAtMs ?? p.createdAtMs + 86_400_000);
  if (p.owner.startsWith('live:') && p.method !== 'wallet') return { type: p.method, checkout_url: p.rail?.payUrl ?? null, provider_reference: p.rail?.providerReference ?? null };
  if (p.method === 'card') return { type: 'card', checkout_url: `http://127.0.0.1:8080/v1/checkout/${p.id}?token=${p.checkoutToken ?? ''}`, expires_at: expires };
  if (p.method === 'mobile_money') return { type: 'mobile_money', instructions: { phone: p.promptPhone ?? null, message: 'Approve the payment prompt sent to this phone.', expires_at: expires } };
  if (p.instructions !== null) {
    const i = p.instructions;
    return { type: 'bank_transfer', instructions: { bank_name: i.bankName, bank_code: i.bankCode, account_number: i.accountNumber, account_name: i.accountName, reference: i.reference, amount_minor: p.amountMinor, currency: p.currency, expires_at: iso(i.expiresAtMs) } };
  }
  return { type: p.method, wallet_id: p.walletId };
}

function paymentBefore(p: Payment): object {
  return {
    id: p.id, object: 'payment', transaction_id: p.transactionId, customer_id: p.customerId, method: p.method, status: p.status,
    amount_minor: p.amountMinor, fee_minor: p.feeMinor, net_amount_minor: p.method === 'wallet' ? p.amountMinor : p.amountMinor - p.feeMinor,
    currency: p.currency, reference: p.reference, wallet_id: p.walletId, provider: providerBefore(p), created_at: iso(p.createdAtMs), updated_at: iso(p.updatedAtMs),
  };
}

function transactionBefore(t: Transaction): object {
  const held = t.holdStatus === 'none' ? 0 : t.type === 'transfer' ? t.amountMinor + t.feeMinor : t.amountMinor;
  const r = t.reconciliation;
  const entity = { payout: 'transfer', collection: 'payment', fulfilment: 'service_order' } as const;
  return {
    id: t.id, object: 'transaction', type: t.type, status: t.status, customer_id: t.customerId, amount_minor: t.amountMinor, fee_minor: t.feeMinor,
    currency: t.currency, reference: t.reference, failure: t.failure, hold: { status: t.holdStatus, amount_minor: held }, attempt: t.attempt,
    status_history: t.history.map((h) => ({ status: h.status, at: iso(h.atMs), attempt: h.attempt, failure_code: h.failureCode })),
    payment_id: t.paymentId, transfer_id: t.transferId,
    ...(t.refund === undefined ? {} : { refund: { status: t.refund.status, amount_minor: t.refund.amountMinor, currency: t.refund.currency, created_at: iso(t.refund.createdAtMs), completed_at: t.refund.completedAtMs === null ? null : iso(t.refund.completedAtMs) } }),
    ...(r === undefined ? {} : { reconciliation: { status: r.status, recorded_outcome: r.recorded, reported_outcome: r.reported, object: entity[r.kind], object_id: r.entityId, attempt: r.attempt, reported_by: r.rail, provider_reference: r.providerReference, reported_at: iso(r.reportedAtMs), resolution: r.resolution ?? null, resolved_at: r.resolvedAtMs === undefined ? null : iso(r.resolvedAtMs) } }),
    ...(t.exchange === undefined ? {} : { exchange_id: t.exchange.id, from_amount_minor: t.amountMinor, from_currency: t.currency, to_amount_minor: t.exchange.toAmountMinor, to_currency: t.exchange.toCurrency }),
    created_at: iso(t.createdAtMs), updated_at: iso(t.updatedAtMs),
  };
}

/**
 * For entities from `arb`: the compiled JSON has the bytes of the view as it was written by hand, the
 * compiled view prints that same JSON, and the JSON satisfies the response schema.
 */
function holds<E>(arb: fc.Arbitrary<E>, compiled: { json: (e: E) => string; view: (e: E) => object }, before: (e: E) => object, schema: TSchema, numRuns: number): void {
  fc.assert(fc.property(arb, (e) => {
    const json = compiled.json(e);
    assert.equal(json, JSON.stringify(before(e)));
    assert.equal(JSON.stringify(compiled.view(e)), json);
    assert.ok(Value.Check(schema, JSON.parse(json)), json);
  }), { numRuns });
}

test('payment reply: any payment → the compiled JSON is the hand-written view\'s bytes, and its view fits the schema', () => {
  setPublicUrl('http://127.0.0.1:8080');
  holds(paymentArb, { json: paymentJson, view: paymentView }, paymentBefore, PaymentSchema, 500);
});

test('transaction reply: any transaction (refund, reconciliation, exchange or none) → the hand-written view\'s bytes, and the schema holds', () => {
  holds(transactionArb, { json: transactionJson, view: transactionView }, transactionBefore, TransactionSchema, 500);
});

function customerBefore(c: Customer): object {
  return {
    id: c.id, object: 'customer', name: c.name, email: c.email, phone: c.phone, country_code: c.countryCode, tier: c.tier, kyc_level: c.kycLevel,
    pin_set: c.pinHash !== null, wallets: Object.entries(c.wallets).map(([currency, id]) => ({ id, currency })), created_at: iso(c.createdAtMs), updated_at: iso(c.updatedAtMs),
  };
}

function walletBefore(w: Wallet): object {
  return {
    id: w.id, object: 'wallet', customer_id: w.customerId, currency: w.currency, balance_minor: w.creditsPosted - w.debitsPosted,
    available_minor: w.creditsPosted - w.debitsPosted - w.debitsPending, held_minor: w.debitsPending, incoming_minor: w.creditsPending,
    created_at: iso(w.createdAtMs), updated_at: iso(w.updatedAtMs),
  };
}

test('customer and wallet replies: any customer or wallet → the hand-written views\' bytes, and the schemas hold', () => {
  holds(customerArb, { json: customerJson, view: customerView }, customerBefore, CustomerSchema, 300);
  holds(walletArb, { json: walletJson, view: walletView }, walletBefore, WalletSchema, 300);
});

function transferBefore(t: Transfer): object {
  return {
    id: t.id, object: 'transfer', transaction_id: t.transactionId, status: t.status, customer_id: t.customerId, beneficiary_id: t.beneficiaryId,
    amount_minor: t.amountMinor, fee_minor: t.feeMinor, currency: t.currency, destination_amount_minor: t.destinationAmountMinor,
    destination_currency: t.destinationCurrency, quote_id: t.quoteId, narration: t.narration, provider_reference: t.providerReference,
    created_at: iso(t.createdAtMs), updated_at: iso(t.updatedAtMs),
  };
}

test('transfer reply: any transfer → the hand-written view\'s bytes, and the schema holds', () => {
  holds(transferArb, { json: transferJson, view: transferView }, transferBefore, TransferSchema, 300);
});

test('compileView: a schema property without a source, or a source the schema lacks → refused when compiled', () => {
  const schema = Type.Object({ id: Type.String(), n: Type.Integer() });
  assert.throws(() => compileView<{ id: string }>('t', schema, { id: (e) => e.id }), /no source for n/);
  assert.throws(() => compileView<{ id: string }>('t', schema, { id: (e) => e.id, n: () => 1, extra: () => 2 }), /extra is not a property/);
  const optionalFirst = Type.Object({ id: Type.Optional(Type.String()) });
  assert.throws(() => compileView<{ id: string }>('t', optionalFirst, { id: (e) => e.id }), /first property must be required/);
});

test('compileView: nullable, optional, boolean and literal properties → the same JSON as the view', () => {
  const schema = Type.Object({ id: Type.String(), kind: Type.Literal('thing'), ok: Type.Boolean(), at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]), note: Type.Optional(Type.String()), n: Type.Optional(Type.Integer()) });
  interface Thing { id: string; ok: boolean; atMs: number | null; note?: string; n?: number }
  const compiled = compileView<Thing>('thing', schema, { id: (e) => e.id, ok: (e) => e.ok, at: { ms: (e) => e.atMs }, note: (e) => e.note, n: (e) => e.n });
  for (const thing of [{ id: 'a"b', ok: true, atMs: 0 }, { id: 'c', ok: false, atMs: null, note: 'é', n: 0 }, { id: 'd', ok: true, atMs: 1_700_000_000_123, n: -5 }] as Thing[]) {
    assert.equal(compiled.json(thing), JSON.stringify(compiled.view(thing)));
  }
  assert.equal(compiled.json({ id: 'x', ok: false, atMs: null }), '{"id":"x","kind":"thing","ok":false,"at":null}');
});
