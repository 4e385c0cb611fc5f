// Command handlers for currency exchange: quote (rate locked with spread and expiry) and execution.
// Runs inside shard workers. Both ledger legs of an exchange are in one WAL record: both or neither.
// Invariant: the customer receives convertMinor(from) rounded down; the fraction stays in fx_position.
import { reject } from '../../errors.ts';
import { findCountry } from '../../catalogue/countries.ts';
import { convertMinorChecked, customerRateAt, midRate, QUOTE_TTL_MS, SPREAD_BPS, supportsPair } from '../../catalogue/fx.ts';
import { formatRate, parseRate } from '../../money/convert.ts';
import { canDebit, systemAccountId } from '../../ledger/ledger.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Exchange, type ExchangeQuote, type Transaction } from '../state.ts';
import { accessRejection, customerFor, envOf, isRejection, limitRejection, okReply, rejected, usageEvent, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { openWallet } from '../lifecycle/wallets.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import { moveTransaction, newTransaction } from '../lifecycle/lifecycle.ts';
import { iso } from '../views.ts';


export function quoteView(q: ExchangeQuote): object {
  return {
    id: q.id,
    object: 'exchange_quote',
    customer_id: q.customerId,
    from_currency: q.fromCurrency,
    to_currency: q.toCurrency,
    from_amount_minor: q.fromAmountMinor,
    to_amount_minor: q.toAmountMinor,
    rate: q.rate,
    mid_rate: q.midRate,
    spread_bps: q.spreadBps,
    expires_at: iso(q.expiresAtMs),
    used_by: q.usedBy,
    created_at: iso(q.createdAtMs),
  };
}

export function exchangeView(e: Exchange, txn: Transaction): object {
  return {
    id: e.id,
    object: 'exchange',
    transaction_id: e.transactionId,
    status: txn.status,
    customer_id: e.customerId,
    quote_id: e.quoteId,
    from_currency: e.fromCurrency,
    from_amount_minor: e.fromAmountMinor,
    from_wallet_id: e.fromWalletId,
    to_currency: e.toCurrency,
    to_amount_minor: e.toAmountMinor,
    to_wallet_id: e.toWalletId,
    rate: e.rate,
    created_at: iso(e.createdAtMs),
  };
}

export function createQuote(ctx: HandlerContext, cmd: Command & { k: 'fx.quote' }): Outcome {
  const b = cmd.body;
  const customer = customerFor(ctx, cmd, b.customerId);
  if (isRejection(customer)) return rejected(customer);
  if (!supportsPair(b.fromCurrency, b.toCurrency)) {
    return rejected(reject('VALIDATION', `Exchange ${b.fromCurrency} → ${b.toCurrency} is not a supported pair.`));
  }
  if (findCountry(customer.countryCode)?.exchange_enabled !== true) {
    return rejected(reject('VALIDATION', `Exchange is not enabled for ${customer.countryCode} customers.`));
  }
  // Live: the FX connector's mid rate (the front end asked it and checked it); sandbox: the reference
  // table's, which never prices live money.
  if (b.midRate === undefined && isLiveOwner(cmd.owner)) return rejected(reject('FX_QUOTE_UNAVAILABLE', `No live FX rate was brought for ${b.fromCurrency} → ${b.toCurrency}.`));
  const mid = b.midRate === undefined ? midRate(b.fromCurrency, b.toCurrency) : parseRate(b.midRate);
  const rate = customerRateAt(mid);
  const toAmountMinor = convertMinorChecked(b.fromAmountMinor, b.fromCurrency, b.toCurrency, rate);
  if (toAmountMinor === null) {
    return rejected(reject('VALIDATION', `from_amount_minor is too large: converted to ${b.toCurrency} it passes the largest amount kobo can hold (${Number.MAX_SAFE_INTEGER} minor units).`));
  }
  if (toAmountMinor < 1) return rejected(reject('VALIDATION', 'from_amount_minor is too small to convert into one minor unit.'));
  const quote: ExchangeQuote = {
    id: ctx.mintId(),
    owner: cmd.owner,
    customerId: customer.id,
    fromCurrency: b.fromCurrency,
    toCurrency: b.toCurrency,
    fromAmountMinor: b.fromAmountMinor,
    toAmountMinor,
    rate: formatRate(rate),
    midRate: formatRate(mid),
    spreadBps: Number(SPREAD_BPS),
    expiresAtMs: ctx.nowMs + QUOTE_TTL_MS,
    usedBy: null,
    createdAtMs: ctx.nowMs,
  };
  return { events: [{ t: 'quote.created', quote }], reply: (state) => okReply(201, quoteView(state.quotes.get(quote.id)!)) };
}

export function executeExchange(ctx: HandlerContext, cmd: Command & { k: 'fx.execute' }): Outcome {
  const quote = ctx.state.quotes.get(cmd.quoteId);
  // A well-formed quote_id that names no quote is the spec's 400 VALIDATION ("invalid quote_id").
  if (quote === undefined || envOf(quote.owner) !== envOf(cmd.owner)) return rejected(reject('VALIDATION', `quote_id ${cmd.quoteId} does not name an exchange quote.`));
  const denied = accessRejection(cmd, quote, 'exchange quote');
  if (denied !== null) return rejected(denied);
  if (cmd.customerId != null && cmd.customerId !== quote.customerId) return rejected(reject('NOT_FOUND', 'No such exchange quote for this customer.'));
  if (quote.usedBy !== null) return rejected(reject('CONFLICT', 'This quote has already been executed; request a new quote.'));
  if (ctx.nowMs >= quote.expiresAtMs) return rejected(reject('CONFLICT', `The quote expired at ${iso(quote.expiresAtMs)}; request a new quote.`));
  const customer = ctx.state.customers.get(quote.customerId)!;
  const fromWalletId = customer.wallets[quote.fromCurrency];
  const fromWallet = fromWalletId === undefined ? undefined : walletOf(ctx.state, fromWalletId);
  // LIMIT_EXCEEDED is decided before INSUFFICIENT_FUNDS, everywhere.
  const over = limitRejection(customer, quote.fromCurrency, quote.fromAmountMinor, ctx.nowMs);
  if (over !== null) return rejected(over);
  if (fromWallet === undefined || !canDebit(fromWallet, quote.fromAmountMinor)) {
    return rejected(reject('INSUFFICIENT_FUNDS', `The ${quote.fromCurrency} wallet cannot cover ${quote.fromAmountMinor}.`));
  }
  const events: WalEvent[] = [];
  let toWalletId = customer.wallets[quote.toCurrency];
  if (toWalletId === undefined) {
    const wallet = openWallet(ctx, customer, quote.toCurrency);
    events.push({ t: 'wallet.opened', wallet });
    toWalletId = wallet.id;
  }
  const txn = newTransaction(ctx, {
    owner: cmd.owner,
    customerId: customer.id,
    type: 'exchange',
    amountMinor: quote.fromAmountMinor,
    feeMinor: 0,
    currency: quote.fromCurrency,
    reference: quote.id,
    paymentId: null,
  });
  const exchangeId = ctx.mintId();
  // The transaction shows both legs and links the exchange.
  txn.exchange = { id: exchangeId, toAmountMinor: quote.toAmountMinor, toCurrency: quote.toCurrency };
  const exchange: Exchange = {
    id: exchangeId,
    owner: cmd.owner,
    customerId: customer.id,
    quoteId: quote.id,
    transactionId: txn.id,
    fromCurrency: quote.fromCurrency,
    fromAmountMinor: quote.fromAmountMinor,
    fromWalletId: fromWallet.id,
    toCurrency: quote.toCurrency,
    toAmountMinor: quote.toAmountMinor,
    toWalletId,
    rate: quote.rate,
    createdAtMs: ctx.nowMs,
  };
  const settled = moveTransaction(txn, { type: 'settle', atMs: ctx.nowMs });
  if (settled === null) throw new Error('exchange: a new transaction must accept settle');
  events.push(
    { t: 'txn.created', txn },
    usageEvent(customer, quote.fromCurrency, quote.fromAmountMinor, ctx.nowMs),
    {
      t: 'ledger',
      atMs: ctx.nowMs,
      ops: [
        { op: 'post', id: ctx.mintId(), txn: txn.id, dr: fromWallet.id, cr: systemAccountId('fx_position', quote.fromCurrency), amt: quote.fromAmountMinor, cur: quote.fromCurrency },
        { op: 'post', id: ctx.mintId(), txn: txn.id, dr: systemAccountId('fx_position', quote.toCurrency), cr: toWalletId, amt: quote.toAmountMinor, cur: quote.toCurrency },
      ],
    },
    settled,
    { t: 'exchange.created', exchange },
  );
  return {
    events,
    reply: (state) => okReply(201, exchangeView(state.exchanges.get(exchange.id)!, state.transactions.get(txn.id)!)),
  };
}
