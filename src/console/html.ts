// HTML building for the console: a tagged template that escapes every interpolated value, the page
// layout, tables, badges, money and pagination. Main thread; pure functions of their arguments.
// Invariant: text reaches a page only through `html` (escaped) unless it is already an Html value.
import { currencyExponent } from '../catalogue/currencies.ts';

export class Html {
  constructor(readonly text: string) {}
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeText(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function piece(value: unknown): string {
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(piece).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeText(String(value));
}

/** `html\`<td>${name}</td>\``: strings, numbers and the like escaped; Html values and arrays of them kept. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i += 1) out += piece(values[i]) + (strings[i + 1] ?? '');
  return new Html(out);
}

/** Minor units as the currency writes them: NGN 1,234.50, JPY 1,200, KWD 0.125. Integer arithmetic only. */
export function money(minor: unknown, currency: unknown): Html {
  if (typeof minor !== 'number' || !Number.isInteger(minor) || typeof currency !== 'string') return html`<span class="muted">—</span>`;
  const exponent = currencyExponent(currency) ?? 2;
  const digits = BigInt(Math.abs(minor)).toString().padStart(exponent + 1, '0');
  const whole = digits.slice(0, digits.length - exponent).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const fraction = exponent === 0 ? '' : `.${digits.slice(digits.length - exponent)}`;
  const sign = minor < 0 ? '−' : '';
  return html`<span class="money${minor < 0 ? ' negative' : ''}">${sign}${whole}${fraction}<small>${currency}</small></span>`;
}

const TONES: Record<string, string> = {
  completed: 'ok', active: 'ok', delivered: 'ok', succeeded: 'ok', settled: 'ok',
  failed: 'bad', refunded: 'warn', revoked: 'bad', disabled: 'bad', expired: 'muted', cancelled: 'muted', declined: 'bad',
  unknown: 'warn', manual_fulfilment: 'warn', retry_required: 'warn', refund_pending: 'warn', provider_funding_failure: 'bad', pending: 'info', processing: 'info',
};

export function badge(status: unknown): Html {
  const text = typeof status === 'string' ? status : '—';
  return html`<span class="badge ${TONES[text] ?? 'info'}">${text.replace(/_/g, ' ')}</span>`;
}

/** An ISO timestamp shown short (UTC), the full value on hover. */
export function when(iso: unknown): Html {
  if (typeof iso !== 'string') return html`<span class="muted">—</span>`;
  return html`<time datetime="${iso}" title="${iso}">${iso.slice(0, 16).replace('T', ' ')}</time>`;
}

export function code(value: unknown): Html {
  return typeof value === 'string' ? html`<code>${value}</code>` : html`<span class="muted">—</span>`;
}

export interface Column<T> {
  head: string;
  cell: (row: T) => Html | string | number | null;
  className?: string;
}

export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): Html {
  if (rows.length === 0) return html`<div class="empty"><p>${empty}</p></div>`;
  return html`<div class="table-wrap"><table>
<thead><tr>${columns.map((c) => html`<th class="${c.className ?? ''}">${c.head}</th>`)}</tr></thead>
<tbody>${rows.map((r) => html`<tr>${columns.map((c) => html`<td class="${c.className ?? ''}">${c.cell(r)}</td>`)}</tr>`)}</tbody>
</table></div>`;
}

/** Newer / Older links of a cursor-paged list (ids of the page's first and last row). */
export function pager(base: string, params: URLSearchParams, page: { first?: string; last?: string; hasMore: boolean; asked: 'after' | 'before' | 'none' }): Html {
  const link = (name: 'starting_after' | 'ending_before', id: string): string => {
    const next = new URLSearchParams(params);
    next.delete('starting_after');
    next.delete('ending_before');
    next.set(name, id);
    return `${base}?${next.toString()}`;
  };
  // Going back (ending_before) answers the page just before; has_more then means newer rows remain.
  const newer = page.first !== undefined && (page.asked === 'after' || (page.asked === 'before' && page.hasMore));
  const older = page.last !== undefined && (page.asked !== 'before' ? page.hasMore : true);
  return html`<nav class="pager">${newer ? html`<a class="button ghost" href="${link('ending_before', page.first!)}">← Newer</a>` : html`<span></span>`}${older ? html`<a class="button ghost" href="${link('starting_after', page.last!)}">Older →</a>` : ''}</nav>`;
}

export interface Layout {
  title: string;
  /** The nav entry to highlight. */
  section: string;
  body: Html;
  account?: { account: string; env: string; prefix: string; csrf: string };
  flash?: { tone: 'ok' | 'bad'; text: string };
}

const NAV: ReadonlyArray<[string, string]> = [
  ['customers', 'Customers'], ['payments', 'Payments'], ['transfers', 'Transfers'], ['orders', 'Service orders'],
  ['events', 'Events'], ['webhooks', 'Webhooks'], ['keys', 'API keys'], ['clock', 'Sandbox clock'],
];

export function page(layout: Layout): string {
  const a = layout.account;
  const nav = a === undefined ? '' : html`<nav class="side">
<a class="brand" href="/console/customers"><span class="logo">k</span> kobo <small>console</small></a>
<ul>${NAV.filter(([id]) => id !== 'clock' || a.env === 'test').map(([id, label]) => html`<li><a href="/console/${id}"${layout.section === id ? new Html(' aria-current="page"') : ''}>${label}</a></li>`)}</ul>
<div class="who"><span class="badge ${a.env === 'live' ? 'bad' : 'info'}">${a.env === 'live' ? 'live' : 'sandbox'}</span> <strong>${a.account}</strong><br><code>${a.prefix}…</code>
<form method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="${a.csrf}"><button class="ghost small" type="submit">Sign out</button></form></div>
</nav>`;
  const flash = layout.flash === undefined ? '' : html`<div class="flash ${layout.flash.tone}" role="status">${layout.flash.text}</div>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${layout.title} · kobo console</title><link rel="stylesheet" href="/console/assets/console.css"></head>
<body class="${a === undefined ? 'bare' : ''}">${nav}<main><h1>${layout.title}</h1>${flash}${layout.body}</main></body></html>`.text;
}

/** A POST form carrying the session's CSRF token: hidden fields, then the visible content. */
export function form(action: string, csrf: string, fields: Record<string, string>, content: Html, className = 'inline'): Html {
  return html`<form method="post" action="${action}" class="${className}"><input type="hidden" name="_csrf" value="${csrf}">${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}${content}</form>`;
}
