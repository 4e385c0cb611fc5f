// Service orders: create (quote binding, limits, funds, collection opened), read (full and status
// projection), cancel before fulfilment. Runs inside shard workers; fulfilment lives in fulfilment.ts.
// Invariant: an order has a service transaction (ledger truth) and a payment with its own transaction;
// a wallet-paid order's funds are held from creation until the outcome posts or releases them.
import assert from 'node:assert/strict';
import { reject } from '../../errors.ts';
import { canDebit, systemAccountId } from '../../ledger/ledger.ts';
import { screenedBySandbox } from '../../rails/rails.ts';
import { isLiveOwner } from '../../rails/coverage.ts';
import type { WalEvent } from '../events.ts';
import type { Command } from '../protocol.ts';
import { walletOf, type Payment, type ServiceOrder } from '../state.ts';
import { checkoutUrl, paymentView, iso } from '../views.ts';
import { customerFor, envOf, isRejection, limitRejection, okReply, rejected, stale, usageEvent, type Effect, type HandlerContext, type Outcome } from '../lifecycle/context.ts';
import { collectionCall, methodsFor } from '../lifecycle/rail-requests.ts';
import { moveOrder, moveTransaction, newTransaction, movePayment, orderHandles } from '../lifecycle/lifecycle.ts';
import { newOrderPayment } from '../lifecycle/order-payments.ts';
import { boundQuote, methodBoundsRejection, orderRecipient, priceService, serviceRejection } from '../lifecycle/service-checks.ts';
import { SERVICE_PAYMENT_METHODS } from '../../catalogue/services.ts';

export function orderView(o: ServiceOrder): object {
  return {
    id: o.id,
    object: 'service_order',
    transaction_id: o.transactionId,
    payment_transaction_id: o.paymentTransactionId,
    country_code: o.countryCode,
    service_code: o.serviceCode,
    status: o.status,
    customer_amount_minor: o.customerAmountMinor,
    fee_minor: o.feeMinor,
    provider_cost_minor: o.providerCostMinor,
    currency: o.currency,
    destination_currency: o.destinationCurrency,
    operator_code: o.operatorCode,
    meter_type: o.meterType,
    // The spec types account_ref as the recipient's identifier, always a string: for airtime and data
    // that is the number the order tops up.
    account_ref: o.accountRef ?? o.phone,
    phone: o.phone,
    product_code: o.productCode,
    provider_reference: o.providerReference,
    idempotency_key: o.idempotencyKey,
    quote_id: o.quoteId,
    fulfillment_snapshot: o.fulfillmentSnapshot,
    pricing_snapshot: o.pricingSnapshot,
    // Money collected and returned to the payer because the purchase failed, one per collection; the
    // status stays what the purchase came to (failed).
    refunds: (o.refunds ?? []).map((r) => ({
      payment_id: r.paymentId,
      payment_transaction_id: r.paymentTransactionId,
      amount_minor: r.amountMinor,
      currency: r.currency,
      status: r.status,
      created_at: iso(r.createdAtMs),
      completed_at: r.completedAtMs === null ? null : iso(r.completedAtMs),
    })),
    metadata: o.metadata,
    customer_id: o.customerId,
    status_history: (o.history ?? []).map((h) => ({ status: h.status, at: iso(h.atMs) })),
    created_at: iso(o.createdAtMs),
    updated_at: iso(o.updatedAtMs),
  };
}

export function orderStatusView(o: ServiceOrder): object {
  return {
    id: o.id,
    status: o.status,
    transaction_id: o.transactionId,
    payment_transaction_id: o.paymentTransactionId,
    provider_reference: o.providerReference,
    fulfillment_snapshot: o.fulfillmentSnapshot,
    updated_at: iso(o.updatedAtMs),
  };
}

function createResponse(order: ServiceOrder, payment: Payment): object {
  const view = paymentView(payment) as { provider: { instructions?: object } };
  return {
    order: orderView(order),
    payment: { id: payment.id, transaction_id: payment.transactionId, method: payment.method, status: payment.status },
    checkout_url: payment.method !== 'card' ? null : isLiveOwner(payment.owner) ? (payment.rail?.payUrl ?? null) : checkoutUrl(payment),
    instructions: payment.method === 'bank_transfer' ? (view.provider.instructions ?? null) : null,
  };
}

/** Holds and messages for the order's collection: the wallet hold, or a card/bank-transfer payment. */
export function createOrder(ctx: HandlerContext, cmd: Command & { k: 'order.create' }): Outcome {
  const req = cmd.body;
  const customer = customerFor(ctx, cmd, req.customerId);
  if (isRejection(customer)) return rejected(customer);
  // Screening runs first: a blocked order is refused whatever else is wrong with it.
  if (screenedBySandbox(cmd.owner, 'order', req.providerCostMinor)) return rejected(reject('COMPLIANCE_DENIED', 'Screening blocked this order; do not retry.'));
  const svc = serviceRejection(customer, req, { forOrder: true, nowMs: ctx.nowMs });
  if (isRejection(svc)) return rejected(svc);
  const recipient = orderRecipient(svc, req, req.validationSnapshot ?? null);
  if (isRejection(recipient)) return rejected(recipient);
  const pricing = req.quoteId === null ? priceService(customer, svc, req) : boundQuote(ctx, cmd, req, req.quoteId, recipient);
  if (isRejection(pricing)) return rejected(pricing);
  if (req.quoteId === null && pricing.crossCurrency) {
    return rejected(reject('FX_QUOTE_UNAVAILABLE', `The customer pays in ${pricing.sourceCurrency} for a ${pricing.destinationCurrency} service: quote first and send quote_id.`));
  }
  const method = methodsFor(customer).find((m) => m.method === req.paymentMethod);
  if (!(SERVICE_PAYMENT_METHODS as readonly string[]).includes(req.paymentMethod) || method === undefined || !method.selectable) {
    return rejected(reject('METHOD_NOT_SELECTABLE', `payment_method ${req.paymentMethod} cannot pay for services for this customer.`));
  }
  const bounds = methodBoundsRejection(customer, req.paymentMethod, pricing.customerAmountMinor);
  if (bounds !== null) return rejected(bounds);
  const over = limitRejection(customer, pricing.sourceCurrency, pricing.customerAmountMinor, ctx.nowMs);
  if (over !== null) return rejected(over);
  const walletId = customer.wallets[pricing.sourceCurrency];
  const wallet = walletId === undefined ? undefined : walletOf(ctx.state, walletId);
  if (req.paymentMethod === 'wallet' && (wallet === undefined || !canDebit(wallet, pricing.customerAmountMinor))) {
    return rejected(reject('INSUFFICIENT_FUNDS', `The ${pricing.sourceCurrency} wallet cannot cover ${pricing.customerAmountMinor}.`));
  }
  if (wallet === undefined) return rejected(reject('METHOD_NOT_SELECTABLE', `The customer has no ${pricing.sourceCurrency} wallet to pay from.`));

  const orderId = ctx.mintId();
  const paymentId = ctx.mintId();
  const base = { owner: cmd.owner, customerId: customer.id, amountMinor: pricing.customerAmountMinor, currency: pricing.sourceCurrency };
  const serviceTxn = newTransaction(ctx, Object.assign({}, base, { type: 'service' as const, feeMinor: pricing.feeMinor, reference: orderId, paymentId: null }));
  serviceTxn.orderId = orderId;
  // The sandbox collection rail answers at once (instructions, hosted page); a connector after commit.
  const { payment, txn: paymentTxn } = newOrderPayment(ctx, { customer, orderId, paymentId, method: req.paymentMethod as Payment['method'], amountMinor: pricing.customerAmountMinor, currency: pricing.sourceCurrency, walletId: wallet.id });
  const order: ServiceOrder = {
    id: orderId,
    owner: cmd.owner,
    customerId: customer.id,
    transactionId: serviceTxn.id,
    paymentId,
    paymentTransactionId: paymentTxn.id,
    countryCode: svc.country,
    serviceCode: svc.code,
    status: 'pending',
    customerAmountMinor: pricing.customerAmountMinor,
    feeMinor: pricing.feeMinor,
    providerCostMinor: req.providerCostMinor,
    currency: pricing.sourceCurrency,
    destinationCurrency: pricing.destinationCurrency,
    operatorCode: recipient.operatorCode,
    meterType: recipient.meterType,
    accountRef: recipient.accountRef,
    phone: recipient.phone,
    productCode: req.productCode,
    providerReference: null,
    idempotencyKey: req.idempotencyKey,
    quoteId: req.quoteId,
    fulfillmentSnapshot: null,
    pricingSnapshot: {
      source_currency: pricing.sourceCurrency,
      destination_currency: pricing.destinationCurrency,
      fx_rate: pricing.fxRate,
      converted_amount_minor: pricing.convertedAmountMinor,
      fee_minor: pricing.feeMinor,
      promotion_discount_minor: pricing.discountMinor,
      promotion_code: pricing.promotionCode,
      cross_currency: pricing.crossCurrency,
    },
    metadata: req.metadata,
    dispatchAttempt: 0,
    history: [{ status: 'pending', atMs: ctx.nowMs }],
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
  const events: WalEvent[] = [
    { t: 'txn.created', txn: serviceTxn },
    { t: 'txn.created', txn: paymentTxn },
    { t: 'payment.created', payment },
    { t: 'order.created', order },
    usageEvent(customer, pricing.sourceCurrency, pricing.customerAmountMinor, ctx.nowMs),
  ];
  // The order is answered pending with its payment attempt; opening the collection is its own
  // committed step (pending → awaiting_payment), taken as soon as this record is durable.
  const effects: Effect[] = [{ afterMs: 0, cmd: { k: 'order.open', id: orderId, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } }];
  if (req.paymentMethod === 'wallet') {
    // The inline debit: held now, posted or released with the fulfilment outcome.
    const holdId = ctx.mintId();
    const submitted = moveTransaction(paymentTxn, { type: 'submit', atMs: ctx.nowMs }, { holdStatus: 'held', holdId });
    const paymentMoved = movePayment(payment, { type: 'submit', atMs: ctx.nowMs });
    assert(submitted !== null && paymentMoved !== null, 'orders: a new wallet payment accepts submit');
    events.push(
      { t: 'ledger', atMs: ctx.nowMs, ops: [{ op: 'hold', id: holdId, txn: paymentTxn.id, dr: wallet.id, cr: systemAccountId('service_payables', pricing.sourceCurrency), amt: pricing.customerAmountMinor, cur: pricing.sourceCurrency }] },
      submitted,
      paymentMoved,
    );
  }
  if (req.paymentMethod !== 'wallet' && isLiveOwner(cmd.owner)) {
    const call = collectionCall(ctx, payment, customer, paymentTxn.attempt, 'submit');
    assert(call !== null, 'orders: a selectable live method has a connector');
    effects.push(call);
  }
  return {
    events,
    reply: (state) => okReply(201, createResponse(state.orders.get(orderId)!, state.payments.get(paymentId)!)),
    effects,
  };
}

/**
 * Opens the order's collection: pending → awaiting_payment. A wallet's debit is already held (inline);
 * the rail confirms it after its latency (order.paid). A card or bank-transfer order waits for the payer.
 */
export function openOrder(ctx: HandlerContext, cmd: Command & { k: 'order.open' }): Outcome {
  const order = ctx.state.orders.get(cmd.id);
  if (order === undefined || !orderHandles(order, 'payment.opened')) return stale('order is not pending');
  const payment = ctx.state.payments.get(order.paymentId);
  if (payment === undefined || payment.status === 'failed') return stale('the order’s payment is no longer open');
  const opened = moveOrder(order, { type: 'payment.opened', atMs: ctx.nowMs });
  assert(opened !== null, 'orders: a pending order accepts payment.opened');
  const effects: Effect[] = payment.method === 'wallet'
    ? [{ afterMs: ctx.railLatencyMs, cmd: { k: 'order.paid', id: order.id, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition } }]
    : [];
  return { events: [opened], reply: () => okReply(200, {}), effects };
}

/** Another customer's, account's or environment's order does not exist for the caller (404, as the spec says). */
export function orderFor(ctx: HandlerContext, cmd: Command, id: string): ServiceOrder | undefined {
  const order = ctx.state.orders.get(id);
  if (order === undefined || order.owner !== cmd.owner || envOf(order.owner) !== envOf(cmd.owner)) return undefined;
  if (cmd.customerScope != null && cmd.customerScope !== order.customerId) return undefined;
  return order;
}

export function getOrder(ctx: HandlerContext, cmd: Command & { k: 'order.get' }): Outcome {
  const order = orderFor(ctx, cmd, cmd.id);
  // Reads are scoped to the customer named: another customer's order, even of the same account, is 404.
  if (order === undefined || (cmd.customerId != null && cmd.customerId !== order.customerId)) {
    return rejected(reject('NOT_FOUND', 'No such service order for this customer.'));
  }
  return { events: [], reply: () => okReply(200, cmd.projection === 'status' ? orderStatusView(order) : orderView(order)) };
}

