// The console's read pages: customers (list and find), a customer with its wallets, a wallet's
// statement, payments, transfers, service orders (with resolve), events. Main thread; each page is
// one or a few calls to the public API with the session's key. Invariant: every value shown is escaped.
import { ApiClient, errorMessage, rowsOf, type ApiAnswer } from './api-client.ts';
import { badge, code, form, html, money, pager, table, when, type Column, type Html } from './html.ts';
import type { Session } from './session.ts';
import { ORDER_STATUSES } from '../../machines/order.machine.ts';
import { PAYMENT_STATUSES } from '../../machines/payment.machine.ts';
import { TRANSFER_STATUSES } from '../../machines/transfer.machine.ts';
import { EVENT_TYPES } from '../schemas/event-type.schema.ts';

export interface PageCtx {
  api: ApiClient;
  session: Session;
  query: URLSearchParams;
  params: Record<string, string>;
}

export type PageResult = { title: string; section: string; body: Html } | { redirect: string };
type Row = Record<string, unknown>;

/** Query parameters a list page passes on to its API list (anything else is dropped). */
const LIST_PARAMS = ['starting_after', 'ending_before', 'status', 'customer_id', 'type'] as const;
export const PAGE_ROWS = 20;

function listQuery(query: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams({ limit: String(PAGE_ROWS) });
  for (const name of LIST_PARAMS) {
    const value = query.get(name);
    if (value !== null && value !== '') out.set(name, value);
  }
  return out;
}

function failure(answer: ApiAnswer): Html {
  return html`<div class="flash bad" role="alert">${errorMessage(answer)}</div>`;
}

/** A list page's table and pager, or the API's error. */
async function listing(ctx: PageCtx, apiPath: string, consolePath: string, columns: readonly Column<Row>[], empty: string): Promise<Html> {
  const asked = listQuery(ctx.query);
  const answer = await ctx.api.get(apiPath, asked);
  if (answer.status !== 200) return failure(answer);
  const { rows, hasMore } = rowsOf(answer);
  const kept = new URLSearchParams(asked);
  kept.delete('limit');
  const direction = asked.has('starting_after') ? 'after' : asked.has('ending_before') ? 'before' : 'none';
  const first = rows[0]?.id;
  const last = rows[rows.length - 1]?.id;
  return html`${table(rows, columns, empty)}${pager(consolePath, kept, { ...(typeof first === 'string' ? { first } : {}), ...(typeof last === 'string' ? { last } : {}), hasMore, asked: direction })}`;
}

function statusFilter(path: string, query: URLSearchParams, statuses: readonly string[], extra?: Html): Html {
  const current = query.get('status') ?? '';
  return html`<form method="get" action="${path}" class="toolbar">
<label>Status<select name="status"><option value="">any</option>${statuses.map((s) => html`<option value="${s}"${s === current ? html` selected` : ''}>${s.replace(/_/g, ' ')}</option>`)}</select></label>
<label>Customer id<input name="customer_id" value="${query.get('customer_id') ?? ''}" placeholder="01K…" size="28"></label>${extra ?? ''}
<button type="submit" class="ghost">Filter</button></form>`;
}

/** A customer in a table: the id's last characters (the whole id on hover), linking to its page. */
const customerLink = (id: unknown): Html => (typeof id === 'string' ? html`<a href="/console/customers/${id}" title="${id}"><code>…${id.slice(-8)}</code></a>` : code(null));

const CUSTOMER_COLUMNS: readonly Column<Row>[] = [
  { head: 'Name', cell: (r) => html`<a href="/console/customers/${String(r.id)}">${r.name}</a>` },
  { head: 'Email', cell: (r) => String(r.email ?? '') },
  { head: 'Phone', cell: (r) => String(r.phone ?? '') },
  { head: 'Country', cell: (r) => String(r.country_code ?? '') },
  { head: 'Tier', cell: (r) => badge(r.tier) },
  { head: 'Created', cell: (r) => when(r.created_at) },
];

export async function customersPage(ctx: PageCtx): Promise<PageResult> {
  const q = (ctx.query.get('q') ?? '').trim();
  const finder = html`<form method="get" action="/console/customers" class="toolbar"><label>Find by email, phone or id<input name="q" value="${q}" placeholder="ada@example.com, +234…, 01K…" size="40" autofocus></label><button type="submit">Find</button>${q === '' ? '' : html`<a class="button ghost" href="/console/customers">Clear</a>`}</form>`;
  if (q === '') {
    return { title: 'Customers', section: 'customers', body: html`${finder}${await listing(ctx, '/v1/customers', '/console/customers', CUSTOMER_COLUMNS, 'No customers yet. Customers created through the API appear here.')}` };
  }
  if (/^[0-9A-HJKMNP-TV-Z]{26}$/i.test(q)) {
    const found = await ctx.api.get(`/v1/customers/${encodeURIComponent(q.toUpperCase())}`);
    if (found.status === 200) return { redirect: `/console/customers/${q.toUpperCase()}` };
    return { title: 'Customers', section: 'customers', body: html`${finder}<div class="empty"><p>No customer with id <code>${q}</code> in this account.</p></div>` };
  }
  const search = new URLSearchParams(q.includes('@') ? { email: q } : { phone: q });
  const answer = await ctx.api.get('/v1/search/customers', search);
  if (answer.status !== 200) return { title: 'Customers', section: 'customers', body: html`${finder}${failure(answer)}` };
  return { title: 'Customers', section: 'customers', body: html`${finder}${table(rowsOf(answer).rows, CUSTOMER_COLUMNS, `No customer with ${q.includes('@') ? 'email' : 'phone'} ${q}.`)}` };
}

function walletCard(w: Row): Html {
  return html`<div class="card"><h3>${w.currency} wallet</h3><div class="big">${money(w.balance_minor, w.currency)}</div>
<dl><dt>Available</dt><dd>${money(w.available_minor, w.currency)}</dd><dt>Held</dt><dd>${money(w.held_minor, w.currency)}</dd><dt>Incoming</dt><dd>${money(w.incoming_minor, w.currency)}</dd></dl>
<p><a href="/console/wallets/${String(w.id)}">Statement →</a></p></div>`;
}

export async function customerPage(ctx: PageCtx): Promise<PageResult> {
  const id = ctx.params.id ?? '';
  const answer = await ctx.api.get(`/v1/customers/${encodeURIComponent(id)}`);
  if (answer.status !== 200) return { title: 'Customer', section: 'customers', body: failure(answer) };
  const c = answer.body.data as Row;
  const walletIds = Array.isArray(c.wallets) ? (c.wallets as Row[]).map((w) => String(w.id)) : [];
  const wallets = await Promise.all(walletIds.map((w) => ctx.api.get(`/v1/wallets/${encodeURIComponent(w)}`)));
  const byCustomer = new URLSearchParams({ customer_id: id, limit: '5' });
  const [payments, orders] = await Promise.all([ctx.api.get('/v1/payments', byCustomer), ctx.api.get('/v1/services/orders', byCustomer)]);
  const body = html`<p class="subtitle"><code>${id}</code></p>
<dl class="facts"><dt>Email</dt><dd>${c.email}</dd><dt>Phone</dt><dd>${c.phone}</dd><dt>Country</dt><dd>${c.country_code}</dd><dt>Tier</dt><dd>${badge(c.tier)}</dd><dt>KYC level</dt><dd>${c.kyc_level}</dd><dt>PIN set</dt><dd>${c.pin_set === true ? 'yes' : 'no'}</dd><dt>Created</dt><dd>${when(c.created_at)}</dd></dl>
<h2>Wallets</h2><div class="cards">${wallets.map((w) => (w.status === 200 ? walletCard(w.body.data as Row) : failure(w)))}</div>
<h2>Recent payments</h2>${payments.status === 200 ? table(rowsOf(payments).rows, PAYMENT_COLUMNS, 'No payments yet.') : failure(payments)}
<p><a href="/console/payments?customer_id=${id}">All payments of this customer →</a></p>
<h2>Recent service orders</h2>${orders.status === 200 ? table(rowsOf(orders).rows, ORDER_COLUMNS_READ, 'No service orders yet.') : failure(orders)}`;
  return { title: String(c.name ?? 'Customer'), section: 'customers', body };
}

export async function walletPage(ctx: PageCtx): Promise<PageResult> {
  const id = ctx.params.id ?? '';
  const wallet = await ctx.api.get(`/v1/wallets/${encodeURIComponent(id)}`);
  if (wallet.status !== 200) return { title: 'Wallet statement', section: 'customers', body: failure(wallet) };
  const w = wallet.body.data as Row;
  const columns: Column<Row>[] = [
    { head: 'When', cell: (r) => when(r.created_at) },
    { head: 'Transaction', cell: (r) => code(r.transaction_id) },
    { head: 'Amount', cell: (r) => money(r.amount_minor, r.currency), className: 'num' },
    { head: 'Balance after', cell: (r) => money(r.balance_after_minor, r.currency), className: 'num' },
  ];
  const entries = await listing(ctx, `/v1/wallets/${encodeURIComponent(id)}/entries`, `/console/wallets/${id}`, columns, 'No entries yet: nothing has moved through this wallet.');
  const body = html`<p class="subtitle"><code>${id}</code> · customer ${customerLink(w.customer_id)}</p><div class="cards">${walletCard(w)}</div><h2>Statement</h2>${entries}`;
  return { title: `${String(w.currency)} wallet statement`, section: 'customers', body };
}

const PAYMENT_COLUMNS: readonly Column<Row>[] = [
  { head: 'Created', cell: (r) => when(r.created_at) },
  { head: 'Payment', cell: (r) => code(r.id) },
  { head: 'Customer', cell: (r) => customerLink(r.customer_id) },
  { head: 'Method', cell: (r) => String(r.method ?? '') },
  { head: 'Status', cell: (r) => badge(r.status) },
  { head: 'Amount', cell: (r) => money(r.amount_minor, r.currency), className: 'num' },
  { head: 'Fee', cell: (r) => money(r.fee_minor, r.currency), className: 'num' },
];

export async function paymentsPage(ctx: PageCtx): Promise<PageResult> {
  const statuses = PAYMENT_STATUSES;
  const body = html`${statusFilter('/console/payments', ctx.query, statuses)}${await listing(ctx, '/v1/payments', '/console/payments', PAYMENT_COLUMNS, 'No payments match.')}`;
  return { title: 'Payments', section: 'payments', body };
}

export async function transfersPage(ctx: PageCtx): Promise<PageResult> {
  const columns: Column<Row>[] = [
    { head: 'Created', cell: (r) => when(r.created_at) },
    { head: 'Transfer', cell: (r) => code(r.id) },
    { head: 'Customer', cell: (r) => customerLink(r.customer_id) },
    { head: 'Status', cell: (r) => badge(r.status) },
    { head: 'Amount', cell: (r) => money(r.amount_minor, r.currency), className: 'num' },
    { head: 'Fee', cell: (r) => money(r.fee_minor, r.currency), className: 'num' },
    { head: 'Destination', cell: (r) => money(r.destination_amount_minor, r.destination_currency), className: 'num' },
  ];
  const statuses = TRANSFER_STATUSES;
  const body = html`${statusFilter('/console/transfers', ctx.query, statuses)}${await listing(ctx, '/v1/transfers', '/console/transfers', columns, 'No transfers match.')}`;
  return { title: 'Transfers', section: 'transfers', body };
}

const ORDER_COLUMNS_READ: readonly Column<Row>[] = [
  { head: 'Created', cell: (r) => when(r.created_at) },
  { head: 'Order', cell: (r) => code(r.id) },
  { head: 'Customer', cell: (r) => customerLink(r.customer_id) },
  { head: 'Service', cell: (r) => html`${r.service_code} <span class="muted">${r.country_code}</span>` },
  { head: 'Recipient', cell: (r) => String(r.account_ref ?? '') },
  { head: 'Status', cell: (r) => badge(r.status) },
  { head: 'Amount', cell: (r) => money(r.customer_amount_minor, r.currency), className: 'num' },
];

const RESOLVABLE = new Set(['manual_fulfilment', 'unknown']);

export async function ordersPage(ctx: PageCtx): Promise<PageResult> {
  const csrf = ctx.session.csrf;
  const columns: Column<Row>[] = [
    ...ORDER_COLUMNS_READ,
    {
      head: 'Resolve',
      cell: (r) => (RESOLVABLE.has(String(r.status))
        ? html`${form(`/console/orders/${String(r.id)}/resolve`, csrf, { outcome: 'delivered' }, html`<button class="small" type="submit">Delivered</button>`)} ${form(`/console/orders/${String(r.id)}/resolve`, csrf, { outcome: 'failed' }, html`<button class="small danger" type="submit">Failed</button>`)}`
        : html`<span class="muted">—</span>`),
    },
  ];
  const statuses = ORDER_STATUSES;
  const hint = html`<p class="subtitle">Orders held for manual fulfilment, or unknown after a rail timeout, can be resolved here: <strong>Delivered</strong> completes the order; <strong>Failed</strong> fails it and gives its money back.</p>`;
  const body = html`${hint}${statusFilter('/console/orders', ctx.query, statuses)}${await listing(ctx, '/v1/services/orders', '/console/orders', columns, 'No service orders match.')}`;
  return { title: 'Service orders', section: 'orders', body };
}

function eventAmount(data: unknown): Html {
  const d = (typeof data === 'object' && data !== null ? data : {}) as Row;
  return typeof d.amount_minor === 'number' ? money(d.amount_minor, d.currency) : html`<span class="muted">—</span>`;
}

export async function eventsPage(ctx: PageCtx): Promise<PageResult> {
  const columns: Column<Row>[] = [
    { head: 'Occurred', cell: (r) => when(r.occurred_at) },
    { head: 'Type', cell: (r) => html`<strong>${r.event_type}</strong>` },
    { head: 'Event', cell: (r) => code(r.id) },
    { head: 'Amount', cell: (r) => eventAmount(r.data), className: 'num' },
    { head: 'Data', cell: (r) => html`<code>${JSON.stringify(r.data ?? {}).slice(0, 160)}</code>`, className: 'wrap data' },
  ];
  const type = ctx.query.get('type') ?? '';
  const filter = html`<form method="get" action="/console/events" class="toolbar"><label>Event type<select name="type"><option value="">any</option>${EVENT_TYPES.map((t) => html`<option value="${t}"${t === type ? html` selected` : ''}>${t}</option>`)}</select></label><button type="submit" class="ghost">Filter</button></form>`;
  return { title: 'Events', section: 'events', body: html`${filter}${await listing(ctx, '/v1/events', '/console/events', columns, 'No events yet.')}` };
}
