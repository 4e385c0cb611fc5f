// The console's account pages and their actions: webhook subscriptions and deliveries (re-enable,
// redeliver), API keys (create, revoke, rotate), the sandbox clock (advance). Main thread; every action
// is one call to the public API. Invariant: a new secret is shown once (the session forgets it after).
import { errorMessage, rowsOf, type ApiAnswer } from './api-client.ts';
import { badge, code, form, html, table, when, type Column, type Html } from './html.ts';
import type { PageCtx, PageResult } from './pages.ts';

type Row = Record<string, unknown>;

function failure(answer: ApiAnswer): Html {
  return html`<div class="flash bad" role="alert">${errorMessage(answer)}</div>`;
}

export async function webhooksPage(ctx: PageCtx): Promise<PageResult> {
  const csrf = ctx.session.csrf;
  const status = ctx.query.get('status') ?? '';
  const deliveriesQuery = new URLSearchParams({ limit: '50', ...(status === '' ? {} : { status }) });
  const [subs, deliveries] = await Promise.all([ctx.api.get('/v1/webhooks/subscriptions'), ctx.api.get('/v1/webhooks/deliveries', deliveriesQuery)]);
  const subColumns: Column<Row>[] = [
    { head: 'Subscription', cell: (r) => code(r.id) },
    { head: 'URL', cell: (r) => String(r.url ?? ''), className: 'wrap' },
    { head: 'Events', cell: (r) => (Array.isArray(r.events) ? r.events.join(', ') : ''), className: 'wrap' },
    { head: 'Status', cell: (r) => badge(r.status) },
    { head: 'Failures in a row', cell: (r) => Number(r.consecutive_failures ?? 0), className: 'num' },
    { head: '', cell: (r) => (r.status === 'disabled' ? form(`/console/webhooks/subscriptions/${String(r.id)}/enable`, csrf, {}, html`<button class="small" type="submit">Re-enable</button>`) : '') },
  ];
  const deliveryColumns: Column<Row>[] = [
    { head: 'Created', cell: (r) => when(r.created_at) },
    { head: 'Event type', cell: (r) => String(r.event_type ?? '') },
    { head: 'Delivery', cell: (r) => code(r.id) },
    { head: 'Status', cell: (r) => badge(r.status) },
    { head: 'Attempts', cell: (r) => Number(r.attempts ?? 0), className: 'num' },
    { head: 'Last answer', cell: (r) => (r.last_response_code === null ? html`<span class="muted">${r.last_error ?? '—'}</span>` : String(r.last_response_code)) },
    { head: '', cell: (r) => form(`/console/webhooks/deliveries/${String(r.id)}/redeliver`, csrf, {}, html`<button class="small ghost" type="submit">Redeliver</button>`) },
  ];
  const filter = html`<form method="get" action="/console/webhooks" class="toolbar"><label>Delivery status<select name="status"><option value="">any</option>${['pending', 'succeeded', 'failed'].map((s) => html`<option value="${s}"${s === status ? html` selected` : ''}>${s}</option>`)}</select></label><button type="submit" class="ghost">Filter</button></form>`;
  const body = html`<h2>Subscriptions</h2>${subs.status === 200 ? table(rowsOf(subs).rows, subColumns, 'No webhook subscriptions. Create one with POST /v1/webhooks/subscriptions.') : failure(subs)}
<h2>Deliveries</h2>${filter}${deliveries.status === 200 ? table(rowsOf(deliveries).rows, deliveryColumns, 'No deliveries match.') : failure(deliveries)}`;
  return { title: 'Webhooks', section: 'webhooks', body };
}

export async function keysPage(ctx: PageCtx, fresh?: { id: string; secret: string }): Promise<PageResult> {
  const csrf = ctx.session.csrf;
  const keys = await ctx.api.get('/v1/keys');
  const columns: Column<Row>[] = [
    { head: 'Key', cell: (r) => html`<code>${r.prefix}…</code>${r.id === ctx.session.keyId ? html` <span class="badge info">this session</span>` : ''}<br><small class="muted">${r.id}</small>` },
    { head: 'Label', cell: (r) => String(r.label ?? '') },
    { head: 'Scopes', cell: (r) => (Array.isArray(r.scopes) ? r.scopes.join(', ') : '') },
    { head: 'Acts for', cell: (r) => (r.customer_id === null ? html`<span class="muted">the account</span>` : html`<a href="/console/customers/${String(r.customer_id)}" title="${String(r.customer_id)}">customer <code>…${String(r.customer_id).slice(-8)}</code></a>`) },
    { head: 'Status', cell: (r) => badge(r.status) },
    { head: 'Created', cell: (r) => when(r.created_at) },
    { head: 'Expires', cell: (r) => when(r.expires_at) },
    {
      head: '',
      cell: (r) => (r.status !== 'active' ? ''
        : html`${form(`/console/keys/${String(r.id)}/rotate`, csrf, {}, html`<button class="small ghost" type="submit">Rotate</button>`)} ${r.id === ctx.session.keyId ? '' : form(`/console/keys/${String(r.id)}/revoke`, csrf, {}, html`<button class="small danger" type="submit">Revoke</button>`)}`),
    },
  ];
  const shown = fresh === undefined ? '' : html`<div class="secret" role="status"><strong>New secret for ${fresh.id}</strong> — copy it now: it is shown once and kobo keeps only its hash.<br><code id="new-secret">${fresh.secret}</code></div>`;
  const create = form('/console/keys', csrf, {}, html`<label>Label<input name="label" placeholder="reporting job" maxlength="100"></label>
<label>Scopes<input name="scopes" value="*" placeholder="*, read, payments:write"></label>
<label>Customer id (optional)<input name="customer_id" placeholder="01K…" size="28"></label><button type="submit">Create key</button>`, 'toolbar');
  const body = html`${shown}<p class="subtitle">Keys of account <strong>${ctx.session.account}</strong> in the ${ctx.session.env === 'live' ? 'live' : 'sandbox'} environment. Rotating keeps the old key working for 24 hours; the key of this session cannot be revoked from it.</p>
${keys.status === 200 ? table(rowsOf(keys).rows, columns, 'No keys.') : failure(keys)}<h2>Create a key</h2>${create}`;
  return { title: 'API keys', section: 'keys', body };
}

export async function clockPage(ctx: PageCtx): Promise<PageResult> {
  const clock = await ctx.api.get('/v1/test_helpers/clock');
  if (clock.status !== 200) return { title: 'Sandbox clock', section: 'clock', body: failure(clock) };
  const c = clock.body.data as Row;
  const offset = Number(c.offset_seconds ?? 0);
  const advance = form('/console/clock/advance', ctx.session.csrf, {}, html`<label>Advance by (seconds)<input name="seconds" type="number" min="1" max="31536000" value="300" required></label><button type="submit">Advance</button>`, 'toolbar');
  const body = html`<p class="subtitle">The sandbox clock of this account: moving it forward expires quotes and fires timers (requeries, collection windows) at once. Live keys have no clock to move.</p>
<div class="cards"><div class="card"><h3>Sandbox now</h3><div class="big">${when(c.now)}</div><dl><dt>Ahead of real time</dt><dd>${offset} s</dd></dl></div></div>${advance}`;
  return { title: 'Sandbox clock', section: 'clock', body };
}

/** A POST action's outcome: where to go next and what to tell the operator there. */
export interface ActionResult {
  to: string;
  flash: { tone: 'ok' | 'bad'; text: string };
  secret?: { id: string; secret: string };
}

function outcome(answer: ApiAnswer, to: string, ok: string): ActionResult {
  return answer.status >= 200 && answer.status < 300 ? { to, flash: { tone: 'ok', text: ok } } : { to, flash: { tone: 'bad', text: errorMessage(answer) } };
}

export type Action = (ctx: PageCtx, form: URLSearchParams) => Promise<ActionResult>;

export const ACTIONS: Record<string, Action> = {
  resolve: async (ctx, f) => {
    const id = ctx.params.id ?? '';
    const result = f.get('outcome') ?? '';
    const answer = await ctx.api.post(`/v1/services/orders/${encodeURIComponent(id)}/resolve`, { outcome: result });
    return outcome(answer, '/console/orders', `Order ${id} resolved as ${result}: now ${String((answer.body.data as Row | undefined)?.status ?? '')}.`);
  },
  enable: async (ctx) => {
    const id = ctx.params.id ?? '';
    return outcome(await ctx.api.post(`/v1/webhooks/subscriptions/${encodeURIComponent(id)}/enable`), '/console/webhooks', `Subscription ${id} re-enabled.`);
  },
  redeliver: async (ctx) => {
    const id = ctx.params.id ?? '';
    const answer = await ctx.api.post(`/v1/webhooks/deliveries/${encodeURIComponent(id)}/redeliver`);
    return outcome(answer, '/console/webhooks', `Redelivery queued as ${String((answer.body.data as Row | undefined)?.id ?? '')}.`);
  },
  createKey: async (ctx, f) => {
    const scopes = (f.get('scopes') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    const body: Row = {
      ...(scopes.length > 0 ? { scopes } : {}),
      ...((f.get('label') ?? '').trim() === '' ? {} : { label: f.get('label')!.trim() }),
      ...((f.get('customer_id') ?? '').trim() === '' ? {} : { customer_id: f.get('customer_id')!.trim() }),
    };
    return withSecret(await ctx.api.post('/v1/keys', body), 'Key created.');
  },
  revokeKey: async (ctx) => {
    const id = ctx.params.id ?? '';
    return outcome(await ctx.api.post(`/v1/keys/${encodeURIComponent(id)}/revoke`), '/console/keys', `Key ${id} revoked.`);
  },
  rotateKey: async (ctx) => {
    const id = ctx.params.id ?? '';
    return withSecret(await ctx.api.post(`/v1/keys/${encodeURIComponent(id)}/rotate`), `Key ${id} rotated: it keeps working for 24 hours.`);
  },
  advanceClock: async (ctx, f) => {
    const seconds = Number(f.get('seconds'));
    return outcome(await ctx.api.post('/v1/test_helpers/clock/advance', { seconds }), '/console/clock', `Clock advanced by ${seconds} s.`);
  },
};

function withSecret(answer: ApiAnswer, ok: string): ActionResult {
  const result = outcome(answer, '/console/keys', ok);
  const data = answer.body.data as Row | undefined;
  if (result.flash.tone === 'ok' && typeof data?.secret === 'string') result.secret = { id: String(data.id), secret: data.secret };
  return result;
}
