// The stored form of a finished entity's whole body in the cold table: its JSON deflated with a preset
// dictionary of its kind (a typical body of that kind: the keys and common values), ~90-160 B where the
// JSON is 400-1,400 B. Store layer; runs in the shard worker (and the CLI) that owns the file.
// Invariant: a dictionary, once a version is written to disk, never changes (a test pins each one's
// digest); a new dictionary is a new version byte. Rows stored as plain JSON text (earlier builds, or a
// body the codec would not shrink) are read as they are.
import assert from 'node:assert/strict';
import zlib from 'node:zlib';
import type { EntityKind } from './tiers.ts';

/** The first byte of a deflated body: the codec's version (which dictionaries it used). */
export const COLD_CODEC_VERSION = 1;
/** A 2 KiB window holds the largest dictionary (an order's) and the body that follows it. */
const WINDOW_BITS = 11;
// Level 1 and the smallest memLevel: a body is short, and with its dictionary level 6 saved ~4 B a body
// for twice the time (~8 µs a body at level 1).
const DEFLATE_OPTIONS = { windowBits: WINDOW_BITS, memLevel: 1, level: 1 } as const;

/** Version 1 dictionaries, one per entity kind: typical bodies with their ids and times blanked. */
export const COLD_DICTIONARIES_V1: Readonly<Record<EntityKind, string>> = {
  txn: '{"owner":"test:acct_","customerId":"","type":"payment","amountMinor":500000,"feeMinor":5000,"currency":"NGN","reference":null,"paymentId":"","transferId":null,"id":"","status":"completed","failure":null,"holdId":null,"holdStatus":"none","attempt":1,"history":[{"status":"pending","atMs":1795000000000,"attempt":1,"failureCode":null},{"status":"completed","atMs":1795000000000,"attempt":1,"failureCode":null}],"createdAtMs":1795000000000,"updatedAtMs":1795000000000,"awaitsPayer":true}',
  payment: '{"id":"","owner":"test:acct_","customerId":"","transactionId":"","method":"bank_transfer","status":"completed","amountMinor":500000,"feeMinor":5000,"currency":"NGN","reference":null,"walletId":"","instructions":{"bankName":"Kobo Sandbox Bank","bankCode":"999","accountNumber":"9983903372","accountName":"KOBO/Ada Obi","reference":"KOBO-EZDZXAAB4C","expiresAtMs":1795000000000},"createdAtMs":1795000000000,"updatedAtMs":1795000000000}',
  transfer: '{"id":"","owner":"test:acct_","customerId":"","beneficiaryId":"","transactionId":"","status":"completed","amountMinor":10000,"feeMinor":1075,"currency":"NGN","narration":null,"quoteId":null,"destinationAmountMinor":10000,"destinationCurrency":"NGN","providerReference":"PAYOUT-53SNSMCZH3RT-1","createdAtMs":1795000000000,"updatedAtMs":1795000000000}',
  order: '{"id":"","owner":"test:acct_","customerId":"","transactionId":"","paymentId":"","paymentTransactionId":"","countryCode":"NG","serviceCode":"airtime","status":"completed","customerAmountMinor":30450,"feeMinor":450,"providerCostMinor":30000,"currency":"NGN","destinationCurrency":"NGN","operatorCode":"MTN","meterType":null,"accountRef":null,"phone":"+2348031101010","productCode":null,"providerReference":"SVC-65ZQYJD9RBVQ-1","idempotencyKey":"order-1795000000000-36-ab31b19f","quoteId":null,"fulfillmentSnapshot":{"service_code":"airtime","country_code":"NG","operator_code":"MTN","product_code":null,"amount_minor":30000,"currency":"NGN","receipt_number":"RCPT-822921557951","delivered_at":"2026-11-26T18:52:59.459Z","phone":"+2348031101010"},"pricingSnapshot":{"source_currency":"NGN","destination_currency":"NGN","fx_rate":null,"converted_amount_minor":30000,"fee_minor":450,"promotion_discount_minor":0,"promotion_code":null,"cross_currency":false},"metadata":null,"dispatchAttempt":1,"history":[{"status":"pending","atMs":1795000000000},{"status":"awaiting_payment","atMs":1795000000000},{"status":"failed","atMs":1795000000000},{"status":"awaiting_payment","atMs":1795000000000},{"status":"fulfilling","atMs":1795000000000},{"status":"completed","atMs":1795000000000}],"createdAtMs":1795000000000,"updatedAtMs":1795000000000}',
  exchange: '{"id":"","owner":"test:acct_","customerId":"","quoteId":"","transactionId":"","fromCurrency":"KWD","fromAmountMinor":1959,"fromWalletId":"","toCurrency":"NGN","toAmountMinor":969828,"toWalletId":"","rate":"4950.6301837697","createdAtMs":1795000000000}',
  credit: '{"transferId":"","walletId":"","transactionId":"","amountMinor":123456,"currency":"NGN","atMs":1795000000000}',
  fx_quote: '{"id":"","owner":"test:acct_","customerId":"","fromCurrency":"KWD","toCurrency":"NGN","fromAmountMinor":1959,"toAmountMinor":969828,"rate":"4950.6301837697","midRate":"5026.0204911367","spreadBps":150,"expiresAtMs":1795000000000,"usedBy":"","createdAtMs":1795000000000}',
  service_quote: '{"id":"","owner":"test:acct_","customerId":"","countryCode":"NG","serviceCode":"airtime","providerCostMinor":50000,"destinationCurrency":"NGN","sourceCurrency":"NGN","convertedAmountMinor":50000,"feeMinor":0,"customerAmountMinor":50000,"fxRate":null,"promotionCode":null,"promotionDiscountMinor":0,"paymentMethod":"wallet","productCode":null,"phone":"+2348031131013","accountRef":null,"expiresAtMs":1795000000000,"usedBy":"","createdAtMs":1795000000000}',
};

/** The deflate options of each kind, its dictionary in them (made once: options are built per body otherwise). */
const optionsByKind = new Map<EntityKind, zlib.ZlibOptions>(Object.entries(COLD_DICTIONARIES_V1).map(([kind, text]) => [kind as EntityKind, Object.assign({}, DEFLATE_OPTIONS, { dictionary: Buffer.from(text) })]));

/** The stored form of `json`: deflated with its kind's dictionary when that is shorter, else the text itself. */
export function encodeColdBody(kind: EntityKind, json: string): Buffer | string {
  const deflated = zlib.deflateRawSync(json, optionsByKind.get(kind)!);
  if (deflated.length + 1 >= Buffer.byteLength(json)) return json;
  const stored = Buffer.allocUnsafe(deflated.length + 1);
  stored[0] = COLD_CODEC_VERSION;
  deflated.copy(stored, 1);
  return stored;
}

/** The JSON of a stored body (text as it is; a deflated one inflated with its version's dictionary). */
export function decodeColdBody(kind: EntityKind, stored: string | Buffer): string {
  if (typeof stored === 'string') return stored;
  assert(stored.length > 1 && stored[0] === COLD_CODEC_VERSION, `cold body of a ${kind}: unknown codec version ${stored[0]}`);
  return zlib.inflateRawSync(stored.subarray(1), { windowBits: WINDOW_BITS, dictionary: optionsByKind.get(kind)!.dictionary }).toString();
}
