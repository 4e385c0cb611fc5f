// The lists (beyond the contract): customers, transactions, payments, transfers, service orders,
// beneficiaries and events, newest first with cursor paging and filters; one event by id; a wallet's
// ledger entries. Main thread: checks the query, asks each shard that may hold rows for its top
// `limit + 1` from its index, and merges them (cost O(shards × limit), whatever the row count).
// Invariant: a list shows only the asking owner's rows, and a customer-scoped key only its customer's.
import { encodeTime } from 'ulid';
import type { TSchema } from 'typebox';
import { reject, type Rejection } from '../errors.ts';
import { isUlid } from '../ids.ts';
import type { Reply, RequestContext, RouteDef } from '../http/types.ts';
import type { ListAnswer, ShardListQuery } from '../shard/protocol.ts';
import type { ListKind } from '../store/list-index.ts';
import { seqOfEntryId } from '../shard/list-pages.ts';
import { ORDER_STATUSES } from '../../machines/order.machine.ts';
import { PAYMENT_STATUSES } from '../../machines/payment.machine.ts';
import { TRANSACTION_STATUSES } from '../../machines/transaction.machine.ts';
import { TRANSFER_STATUSES } from '../../machines/transfer.machine.ts';
import { Customer } from '../schemas/customer.schema.ts';
import { Transaction, Payment } from '../schemas/transaction.schema.ts';
import { Transfer, Beneficiary } from '../schemas/transfer.schema.ts';
import { ServiceOrder } from '../schemas/service-order.schema.ts';
import { EntryListQuery, Event, EventListQuery, LedgerEntry, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, ListQuerySchema } from '../schemas/list.schema.ts';
import { errorOf, isRejection, partitionOf, type ApiDeps } from './deps.ts';

interface ListSpec {
  path: string;
  kind: ListKind;
  family: string;
  what: string;
  statuses: readonly string[] | null;
  response: TSchema;
  /** One row as the example page shows it (the OpenAPI document). */
  example: Record<string, unknown>;
}

const AT = '2026-01-31T10:00:00.000Z';
const CUSTOMER_ID = '01KG3N8Z6Q0C6J6Y3N2W9V4T7R';
const TXN_ID = '01KG3N9A2B0C8D3E5F7G9H1J3K';
const EVENT_EXAMPLE = { id: '01KG3N9B4C0CAE7G9H1J3K5M7N', event_type: 'payment.completed', event_key: `payment.completed:${TXN_ID}`, occurred_at: AT, data: { transaction_id: TXN_ID, amount_minor: 500000, currency: 'NGN', customer_id: CUSTOMER_ID } };
const ENTRY_EXAMPLE = { id: 'le_0000000000012288', object: 'ledger_entry', wallet_id: '01KG3N8Z6Q0C0W1A2L3L4E5T6X', transaction_id: TXN_ID, amount_minor: 495000, balance_after_minor: 495000, currency: 'NGN', created_at: AT };
const page = (row: unknown): object => ({ data: [row], has_more: true });

const LISTS: readonly ListSpec[] = [
  { path: '/v1/customers', kind: 'customer', example: { id: CUSTOMER_ID, object: 'customer', name: 'Ada Obi', email: 'ada@example.com', phone: '+2348031234567', country_code: 'NG', tier: 'tier_1', kyc_level: 0, pin_set: false, wallets: [{ id: '01KG3N8Z6Q0C0W1A2L3L4E5T6X', currency: 'NGN' }], created_at: AT, updated_at: AT }, family: 'customers', what: 'customers', statuses: null, response: Customer },
  { path: '/v1/transactions', kind: 'transaction', example: { id: TXN_ID, object: 'transaction', type: 'payment', status: 'completed', customer_id: CUSTOMER_ID, amount_minor: 500000, fee_minor: 5000, currency: 'NGN', created_at: AT }, family: 'transactions', what: 'transactions', statuses: TRANSACTION_STATUSES, response: Transaction },
  { path: '/v1/payments', kind: 'payment', example: { id: '01KG3N9A2B0C7P8Q9R1S2T3U4V', object: 'payment', transaction_id: TXN_ID, customer_id: CUSTOMER_ID, method: 'bank_transfer', status: 'completed', amount_minor: 500000, currency: 'NGN', created_at: AT }, family: 'payments', what: 'payments', statuses: PAYMENT_STATUSES, response: Payment },
  { path: '/v1/transfers', kind: 'transfer', example: { id: '01KG3NA0B1C0C2D3E4F5G6H7J8', object: 'transfer', customer_id: CUSTOMER_ID, status: 'completed', amount_minor: 10000, currency: 'NGN', created_at: AT }, family: 'transfers', what: 'transfers', statuses: TRANSFER_STATUSES, response: Transfer },
  { path: '/v1/services/orders', kind: 'order', example: { id: '01KG3NA1C2D0C3E4F5G6H7J8K9', object: 'service_order', customer_id: CUSTOMER_ID, service_code: 'airtime', status: 'completed', customer_amount_minor: 50750, currency: 'NGN', created_at: AT }, family: 'services', what: 'service orders', statuses: ORDER_STATUSES, response: ServiceOrder },
  { path: '/v1/beneficiaries', kind: 'beneficiary', example: { id: '01KG3NA2D3E0C4F5G6H7J8K9M1', object: 'beneficiary', customer_id: CUSTOMER_ID, type: 'bank_account', bank_code: '058', account_number: '0123456789', account_name: 'ADA OBI', currency: 'NGN', created_at: AT }, family: 'beneficiaries', what: 'beneficiaries', statuses: null, response: Beneficiary },
];

/** The page size asked for, or why it is refused. */
function limitOf(query: URLSearchParams): number | Rejection {
  const raw = query.get('limit');
  if (raw === null) return LIST_LIMIT_DEFAULT;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) return reject('VALIDATION', `limit must be an integer from 1 to ${LIST_LIMIT_MAX}.`);
  return limit;
}

/** An ISO 8601 instant as the 10-character time part of a ULID (ids are minted at their creation time). */
function timePrefix(query: URLSearchParams, name: string): string | null | Rejection {
  const raw = query.get(name);
  if (raw === null) return null;
  const ms = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (!Number.isFinite(ms) || ms < 0) return reject('VALIDATION', `${name} must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z.`);
  return encodeTime(ms, 10);
}

/** The id bounds and order a page's query asks for: cursors and the created range both bound the id. */
function bounds(query: URLSearchParams, validCursor: (id: string) => boolean): { idAbove: string; idBelow: string; order: 'desc' | 'asc' } | Rejection {
  const after = query.get('starting_after');
  const before = query.get('ending_before');
  if (after !== null && before !== null) return reject('VALIDATION', 'Send starting_after or ending_before, not both.');
  const cursor = after ?? before;
  if (cursor !== null && !validCursor(cursor)) return reject('VALIDATION', `${after !== null ? 'starting_after' : 'ending_before'} is not an id of this list.`);
  const gte = timePrefix(query, 'created[gte]');
  if (isRejection(gte)) return gte;
  const lt = timePrefix(query, 'created[lt]');
  if (isRejection(lt)) return lt;
  // An id minted at instant T starts with T's prefix, so it sorts above that prefix alone.
  let idAbove = gte ?? '';
  let idBelow = lt ?? '~';
  if (after !== null && after < idBelow) idBelow = after;
  if (before !== null && before > idAbove) idAbove = before;
  return { idAbove, idBelow, order: before !== null ? 'asc' : 'desc' };
}

/**
 * The customer a list is narrowed to: the key's own for a customer-scoped key (naming another is
 * 403), else the `customer_id` asked for, else none.
 */
function customerOf(ctx: RequestContext): string | null | Rejection {
  const named = ctx.query.get('customer_id');
  const scoped = ctx.key?.customerId ?? null;
  if (scoped !== null && named !== null && named !== scoped) return reject('FORBIDDEN', 'This key acts for one customer only.');
  return scoped ?? named;
}

/** Merges the shards' answers (each in the page's order) into one page, newest first. */
export function mergePage(answers: readonly ListAnswer[], limit: number, order: 'desc' | 'asc'): Reply {
  const failed = answers.find((a) => a.error !== undefined)?.error;
  if (failed !== undefined) return { status: failed.status, error: { code: failed.code, message: failed.message } };
  const rows = answers.flatMap((a) => a.rows);
  rows.sort((a, b) => (a.key < b.key ? 1 : a.key > b.key ? -1 : 0) * (order === 'desc' ? 1 : -1));
  const page = rows.slice(0, limit);
  if (order === 'asc') page.reverse();
  return { status: 200, json: `{"data":[${page.map((r) => r.json).join(',')}],"has_more":${rows.length > limit}}` };
}

const EMPTY_PAGE: Reply = { status: 200, json: '{"data":[],"has_more":false}' };

async function listRows(deps: ApiDeps, ctx: RequestContext, kind: ListKind): Promise<Reply> {
  const limit = limitOf(ctx.query);
  if (isRejection(limit)) return errorOf(limit);
  const range = bounds(ctx.query, isUlid);
  if (isRejection(range)) return errorOf(range);
  const customerId = customerOf(ctx);
  if (isRejection(customerId)) return errorOf(customerId);
  let shards: number[] | null = null;
  if (customerId !== null) {
    // A customer's resources all live in its partition: one shard holds every row of the page.
    const partition = partitionOf(customerId, 'customer');
    if (isRejection(partition)) return partition.code === 'NOT_FOUND' ? EMPTY_PAGE : errorOf(partition);
    shards = [deps.pool.shardOfPartition(partition)];
  }
  const status = kind === 'event' ? ctx.query.get('type') : ctx.query.get('status');
  const query: ShardListQuery = {
    what: 'rows',
    nowMs: ctx.nowMs,
    customerScope: ctx.key?.customerId ?? null,
    q: { owner: ctx.owner, kind, customerId, status, ...range, rows: limit + 1 },
  };
  return mergePage(await deps.pool.list(query, shards), limit, range.order);
}

async function listEntries(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const walletId = ctx.params.id ?? '';
  const partition = partitionOf(walletId, 'wallet');
  if (isRejection(partition)) return errorOf(partition);
  const limit = limitOf(ctx.query);
  if (isRejection(limit)) return errorOf(limit);
  const after = ctx.query.get('starting_after');
  const before = ctx.query.get('ending_before');
  if (after !== null && before !== null) return errorOf(reject('VALIDATION', 'Send starting_after or ending_before, not both.'));
  const cursor = after ?? before;
  const seq = cursor === null ? null : seqOfEntryId(cursor);
  if (cursor !== null && seq === null) return errorOf(reject('VALIDATION', `${after !== null ? 'starting_after' : 'ending_before'} is not a ledger entry id.`));
  const q = { walletId, seqAbove: before !== null ? seq! : -1, seqBelow: after !== null ? seq! : Number.MAX_SAFE_INTEGER, order: before !== null ? ('asc' as const) : ('desc' as const), rows: limit + 1 };
  const answers = await deps.pool.list({ what: 'entries', owner: ctx.owner, nowMs: ctx.nowMs, customerScope: ctx.key?.customerId ?? null, q }, [deps.pool.shardOfPartition(partition)]);
  return mergePage(answers, limit, q.order);
}

async function oneEvent(deps: ApiDeps, ctx: RequestContext): Promise<Reply> {
  const id = ctx.params.id ?? '';
  const partition = partitionOf(id, 'event');
  if (isRejection(partition)) return errorOf(partition);
  const [answer] = await deps.pool.list({ what: 'event', owner: ctx.owner, id, nowMs: ctx.nowMs, customerScope: ctx.key?.customerId ?? null }, [deps.pool.shardOfPartition(partition)]);
  if (answer === undefined || answer.error !== undefined) return answer?.error === undefined ? errorOf(reject('NOT_FOUND', 'No such event.')) : { status: answer.error.status, error: { code: answer.error.code, message: answer.error.message } };
  return { status: 200, json: `{"data":${answer.rows[0]!.json}}` };
}

const LIST_ERRORS = ['VALIDATION', 'FORBIDDEN'] as const;

export function listRoutes(deps: ApiDeps): RouteDef[] {
  const lists: RouteDef[] = LISTS.map((spec) => ({
    method: 'GET',
    path: spec.path,
    summary: `List ${spec.what}, newest first`,
    description: `The account's ${spec.what}, newest first, ${LIST_LIMIT_DEFAULT} a page by default; page with starting_after (older) or ending_before (newer), narrow with customer_id${spec.statuses === null ? '' : ', status'} and created[gte] / created[lt]. A customer-scoped key sees only its customer's ${spec.what}.`,
    operationId: `list${spec.what.replace(/(^|\s)(\w)/g, (_m, _s: string, c: string) => c.toUpperCase())}`,
    auth: 'key',
    family: spec.family,
    query: ListQuerySchema(spec.statuses),
    response: spec.response,
    list: true,
    example: page(spec.example),
    errors: LIST_ERRORS,
    handle: (ctx) => listRows(deps, ctx, spec.kind),
  }));
  return [
    ...lists,
    {
      method: 'GET',
      path: '/v1/events',
      summary: "List the account's events, newest first",
      description: 'The events webhooks deliver, as they deliver them, newest first; narrow with type, customer_id and created[gte] / created[lt]. Kept at least 30 days.',
      operationId: 'listEvents',
      auth: 'key',
      family: 'events',
      query: EventListQuery,
      response: Event,
      list: true,
      example: page(EVENT_EXAMPLE),
      errors: LIST_ERRORS,
      handle: (ctx) => listRows(deps, ctx, 'event'),
    },
    {
      method: 'GET',
      path: '/v1/events/:id',
      summary: 'Retrieve an event',
      description: 'One event, the same object its webhook delivered.',
      operationId: 'getEvent',
      auth: 'key',
      family: 'events',
      response: Event,
      example: { data: EVENT_EXAMPLE },
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => oneEvent(deps, ctx),
    },
    {
      method: 'GET',
      path: '/v1/wallets/:id/entries',
      summary: "A wallet's statement: its ledger entries, newest first",
      description: 'Each posting that moved the balance, with its transaction, the signed amount and the balance it left.',
      operationId: 'listWalletEntries',
      auth: 'key',
      family: 'wallets',
      query: EntryListQuery,
      response: LedgerEntry,
      list: true,
      example: page(ENTRY_EXAMPLE),
      errors: ['VALIDATION', 'NOT_FOUND', 'FORBIDDEN'],
      handle: (ctx) => listEntries(deps, ctx),
    },
  ];
}
