// One row per routed operation of the OpenAPI document: its operationId, description, tag (when not its
// family's) and the examples a reader and a generated client need. Any thread; pure data.
// Invariant: a route without a row here has no operationId in the document, and the document tests fail.
// To add a route: add a row keyed `METHOD /path/:param`; a request example is required when it has a body.
import { countryContext, listCountries } from '../catalogue/countries.ts';
import { SERVICE_CODES } from '../catalogue/services-data.ts';

/** A sample ULID per resource, so that the examples of one journey refer to each other. */
export const EXAMPLE_IDS = {
  customer: '01JDA0K8Z3C0STMER000000001',
  wallet: '01JDA0K8Z3WA11ET0000000002',
  transaction: '01JDA0K8Z3TXN0000000000003',
  payment: '01JDA0K8Z3PAYMENT000000004',
  transfer: '01JDA0K8Z3TRANSFER00000005',
  beneficiary: '01JDA0K8Z3BENEF00000000006',
  quote: '01JDA0K8Z3QW0TE00000000007',
  exchange: '01JDA0K8Z3EXCHANGE00000008',
  order: '01JDA0K8Z3SERVCE0RDER00009',
  subscription: '01JDA0K8Z3SVBSCR1PT10000A0',
  delivery: '01JDA0K8Z3DE11VERY000000B0',
  event: '01JDA0K8Z3EVENT0000000000C',
  key: 'key_01JDA0K8Z3KEY0000000000D0',
} as const;

export interface OperationDoc {
  operationId: string;
  description: string;
  /** When not the tag of the route's family. */
  tag?: string;
  /** The request body example (required when the route has a body). */
  request?: Record<string, unknown>;
  /** Example values of path and query parameters (defaults: the sample id of the path's resource). */
  params?: Record<string, string>;
  /** The success response's `data`, when the one sampled from its schema would mislead; a string: an HTML page. */
  response?: unknown;
}

const ids = EXAMPLE_IDS;
const catalogueQuery = { country: 'NG', customer_id: ids.customer };

/** The definition of one service code: one literal route per code (see services-catalogue.ts). */
function serviceDefinitionRows(): Record<string, OperationDoc> {
  const rows: Record<string, OperationDoc> = {};
  for (const code of SERVICE_CODES) {
    const words = code.split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');
    rows[`GET /v1/services/${code}`] = {
      operationId: `getService${words}`,
      description: `The ${code.replace('_', ' ')} service in one country as this customer may buy it: the steps a form walks through, how a recipient is validated, amount limits, the country context, a JSON form schema and its rules. A service that is coming soon answers 422 SERVICE_NOT_EXECUTABLE.`,
      params: catalogueQuery,
    };
  }
  return rows;
}

export const OPERATIONS: Readonly<Record<string, OperationDoc>> = {
  // Countries
  // The countries are reference data: their examples are the real answers (the list cut to two).
  'GET /v1/countries': { operationId: 'listCountries', description: 'Every enabled country with its currency, phone code, locale, timezone and which features are enabled there. Public: no key needed.', response: listCountries().slice(0, 2) },
  'GET /v1/countries/:code/context': { operationId: 'getCountryContext', description: "What a client needs to boot for one country: its static services, payment methods with their limits (null: no bound) and supported languages. Public. A malformed code is 400 VALIDATION; an unknown or disabled country 404 NOT_FOUND.", params: { code: 'NG' }, response: countryContext('NG') },
  // Services
  'GET /v1/services': { operationId: 'listServices', description: 'The catalogue of a service country, resolved for the customer: each service with its state (available, coming soon, unavailable) and the reason when it cannot be bought.', params: catalogueQuery },
  ...serviceDefinitionRows(),
  'GET /v1/services/:code/availability': { operationId: 'getServiceAvailability', description: 'The service countries where this customer may buy the service, with the state of the service in each, so a client can offer a country selector.', params: { code: 'airtime', ...catalogueQuery } },
  'GET /v1/services/:code/payment-methods': { operationId: 'listServicePaymentMethods', description: 'The methods a service order in this country can be paid with, each with its fee; pass amount_minor (the provider cost) to price the fees.', params: { code: 'airtime', ...catalogueQuery, amount_minor: '100000' } },
  'GET /v1/services/:code/operators': { operationId: 'listServiceOperators', description: 'The operators (networks, utilities, billers) of a service in a country.', params: { code: 'airtime', ...catalogueQuery } },
  'GET /v1/services/:code/plans': { operationId: 'listServicePlans', description: 'The plans of an operator, as tabs or a select picker; services bought for any amount answer open_amount instead of a list.', params: { code: 'data', ...catalogueQuery, operator_code: 'MTN' } },
  'GET /v1/services/:code/variants': { operationId: 'listServiceVariants', description: 'The variants of a service in a country, such as prepaid and postpaid electricity meters.', params: { code: 'electricity', ...catalogueQuery } },
  'POST /v1/services/:code/validate': { operationId: 'validateServiceRecipient', description: 'Asks the rail whether a recipient exists (a meter, a decoder, a phone) and returns the name it is registered to. Phone numbers of airtime and data are checked for format first, without calling the rail.', params: { code: 'electricity', ...catalogueQuery }, request: { account_ref: '45012345678', operator_code: 'IKEDC', meter_type: 'prepaid' } },
  'POST /v1/services/quote': { operationId: 'createServiceQuote', description: 'Prices a purchase before the customer commits: fee, promotion, and for a cross-currency purchase a locked FX rate until expires_at. Pass its id as quote_id when creating the order.', request: { provider_cost_minor: 100000, currency: 'NGN', country_code: 'NG', service_code: 'airtime', payment_method: 'wallet', phone: '+2348031234567', operator_code: 'MTN', customer_id: ids.customer } },
  // Service orders
  'POST /v1/services/orders': { operationId: 'createServiceOrder', tag: 'Service orders', description: "Creates the order and opens its payment on payment_method. With wallet the debit is inline (payment.status processing); with card the answer carries checkout_url; with bank_transfer, instructions. Fulfilment starts when the payment settles; the outcome arrives as service_order.completed or service_order.failed. The Idempotency-Key may be sent in the body as idempotency_key instead.", request: { country_code: 'NG', service_code: 'airtime', provider_cost_minor: 100000, currency: 'NGN', payment_method: 'wallet', phone: '+2348031234567', operator_code: 'MTN', customer_id: ids.customer } },
  'GET /v1/services/orders/:id': { operationId: 'getServiceOrder', tag: 'Service orders', description: "An order with its pricing and fulfilment snapshots and any refunds. Another customer's order is 404 NOT_FOUND.", params: { id: ids.order } },
  'POST /v1/services/orders/:id/resolve': { operationId: 'resolveServiceOrder', tag: 'Service orders', description: "Beyond the contract (an operator's decision, as `kobo orders resolve`): an order held in manual_fulfilment, or unknown after a rail timeout, is resolved delivered (completed) or failed (failed; its money goes back). Account keys only: a customer-scoped key is 403; any other status is 409 CONFLICT.", params: { id: ids.order }, request: { outcome: 'delivered' } },
  'GET /v1/services/orders/:id/status': { operationId: 'getServiceOrderStatus', tag: 'Service orders', description: 'The compact status of an order, cheap enough to poll while the customer completes a payment.', params: { id: ids.order } },
  // Transactions
  'POST /v1/transactions': { operationId: 'createTransaction', description: 'Records a money-moving attempt as pending. Payments, transfers, exchanges and orders create their own transactions; this call is for callers that track an attempt themselves.', request: { type: 'payment', customer_id: ids.customer, amount_minor: 150000, currency: 'NGN', reference: 'order-1042' } },
  'GET /v1/transactions/:id': { operationId: 'getTransaction', description: 'A transaction with its status history, its hold and, when it failed, the failure (code, stage, message).', params: { id: ids.transaction } },
  'POST /v1/transactions/:id/cancel': { operationId: 'cancelTransaction', description: 'Cancels a pending transaction and releases its hold. Any other status is 409 CONFLICT.', params: { id: ids.transaction } },
  'POST /v1/transactions/:id/retry': { operationId: 'retryTransaction', description: 'Retries a transaction that failed with a retryable code (PROVIDER_ERROR, INTERNAL, RATE_LIMITED) as a new attempt; the same Idempotency-Key replays the first retry.', params: { id: ids.transaction } },
  // Payments
  'POST /v1/payments': { operationId: 'createPayment', description: "Collects money into the customer's wallet (bank_transfer, card, mobile_money) or debits it inline (wallet). The provider object holds the next action: bank details to pay into, or a redirect_url for card. payment.completed fires when it settles.", request: { customer_id: ids.customer, amount_minor: 150000, currency: 'NGN', method: 'bank_transfer', reference: 'invoice-2231' } },
  'GET /v1/payments/:id': { operationId: 'getPayment', description: "A payment with its status and the provider's next action. Another customer's payment is 403 FORBIDDEN.", params: { id: ids.payment } },
  'GET /v1/payments/methods': { operationId: 'listPaymentMethods', description: "The methods a customer may pay with, given the customer's country, KYC level and the rails' coverage; each says why when it is not selectable. virtual_account is never selectable.", params: { customer_id: ids.customer } },
  // Transfers and beneficiaries
  'POST /v1/transfers': { operationId: 'createTransfer', description: 'Sends a payout to a beneficiary: the amount plus the fee is held at once and settled by the payout rail; transfer.completed or transfer.failed follows. A customer with a transaction PIN must send it in X-Transaction-Authorization.', request: { customer_id: ids.customer, beneficiary_id: ids.beneficiary, amount_minor: 250000, currency: 'NGN', narration: 'Rent for December' } },
  'GET /v1/transfers/:id': { operationId: 'getTransfer', description: 'A transfer; its failure and hold detail are on its transaction.', params: { id: ids.transfer } },
  'POST /v1/beneficiaries': { operationId: 'createBeneficiary', description: 'Registers a payout destination. The rail resolves the account name; transfers go only to verified beneficiaries.', request: { customer_id: ids.customer, type: 'bank_account', bank_code: '058', account_number: '0123456789', currency: 'NGN', country: 'NG' } },
  'GET /v1/beneficiaries/:id': { operationId: 'getBeneficiary', description: 'A beneficiary with its resolved account name.', params: { id: ids.beneficiary } },
  // Customers and wallets
  'POST /v1/customers': { operationId: 'createCustomer', description: 'Creates a customer and its home-currency wallet. Email and phone are unique per account: a second customer with either is 409 DUPLICATE.', request: { name: 'Ada Obi', email: 'ada.obi@example.com', phone: '+2348031234567', country_code: 'NG' } },
  'GET /v1/customers/:id': { operationId: 'getCustomer', description: 'A customer with its tier, KYC level and wallets.', params: { id: ids.customer } },
  'PATCH /v1/customers/:id': { operationId: 'updateCustomer', description: 'Changes any of name, email, phone, transaction PIN (null removes it), tier or KYC level; at least one field.', params: { id: ids.customer }, request: { name: 'Ada N. Obi', kyc_level: 2 } },
  'GET /v1/search/customers': { operationId: 'searchCustomers', tag: 'Customers', description: 'Beyond the contract: the customer with this email or phone (normalised as at creation), as a list of zero or one. Send one of email or phone. Account keys only.', params: { email: 'ada.obi@example.com' } },
  'GET /v1/wallets/:id': { operationId: 'getWallet', description: 'A wallet with its available and held balances in minor units.', params: { id: ids.wallet } },
  // Exchange
  'POST /v1/exchange/quotes': { operationId: 'createExchangeQuote', description: 'Quotes converting from_amount_minor of one currency into another at the customer rate (after spread), valid until expires_at.', request: { customer_id: ids.customer, from_currency: 'NGN', to_currency: 'USD', from_amount_minor: 1500000 } },
  'POST /v1/exchange': { operationId: 'createExchange', description: 'Executes a quote: debits the from wallet and credits the to wallet, both ledger legs in one step. An expired quote is 409 CONFLICT (quote again); a short wallet 422 INSUFFICIENT_FUNDS.', request: { customer_id: ids.customer, quote_id: ids.quote } },
  // Webhooks
  'POST /v1/webhooks/subscriptions': { operationId: 'createWebhookSubscription', description: 'Subscribes an HTTPS URL to event types. The signing secret (whsec_…) is in this answer only: store it to verify X-Service-Signature.', request: { url: 'https://example.com/hooks/kobo', events: ['payment.completed', 'transfer.failed'] } },
  'GET /v1/webhooks/subscriptions': { operationId: 'listWebhookSubscriptions', description: "The account's subscriptions with their status and consecutive failures, never their secrets." },
  'POST /v1/webhooks/subscriptions/:id/enable': { operationId: 'enableWebhookSubscription', description: 'Beyond the contract (as `kobo webhooks enable`): re-enables a subscription disabled after repeated failures; its failure count starts again at 0. Account keys only.', params: { id: ids.subscription } },
  'GET /v1/webhooks/deliveries': { operationId: 'listWebhookDeliveries', description: 'Delivery attempts, newest first, with each attempt logged; filter by subscription, event type or status.', params: { event_type: 'payment.completed', status: 'failed', limit: '20' } },
  'POST /v1/webhooks/deliveries/:id/redeliver': { operationId: 'redeliverWebhook', description: 'Queues a fresh delivery of the same event (new timestamp and signature), also for a disabled subscription after it is fixed.', params: { id: ids.delivery } },
  // Keys (beyond the contract: `kobo keys` over HTTP)
  'GET /v1/keys': { operationId: 'listKeys', description: "The account's keys in this key's environment (sk_test_ or sk_live_), active, expired and revoked, never a secret. Account keys only." },
  'GET /v1/keys/self': { operationId: 'getCurrentKey', description: 'The key making the request: its account, environment, scopes and, for a customer-scoped key, its customer. Never its secret.' },
  'POST /v1/keys': { operationId: 'createKey', description: "Creates a key in this account and environment (scopes default to '*'; customer_id makes a customer-scoped key). Its secret is in this answer only; a replay of the same Idempotency-Key answers without it. Needs a key with the '*' scope.", request: { label: 'reporting job', scopes: ['read'] } },
  'POST /v1/keys/:id/revoke': { operationId: 'revokeKey', description: "Revokes a key at once (401 within a second). A key cannot revoke itself (409): rotate it, or use another key. Needs a key with the '*' scope.", params: { id: ids.key } },
  'POST /v1/keys/:id/rotate': { operationId: 'rotateKey', description: "Creates a replacement with the same grants; its secret is in this answer only. The old key keeps working for grace_hours (default 24, at most 168), then is refused. Needs a key with the '*' scope.", params: { id: ids.key }, request: { grace_hours: 24 } },
  // Sandbox checkout
  'GET /v1/checkout/:id': { operationId: 'getCheckoutPage', description: 'The sandbox hosted card page a card payment redirects to (HTML). The token from redirect_url authorises it; no key.', params: { id: ids.payment, token: '5f1c2a9e0b7d4c3a8e6f1d2b9c0a7e4f' }, response: '<!doctype html>…' },
  'POST /v1/checkout/:id/complete': { operationId: 'completeCheckout', description: 'The payer pays on the sandbox checkout page: the card payment settles (answers the result page, HTML).', params: { id: ids.payment, token: '5f1c2a9e0b7d4c3a8e6f1d2b9c0a7e4f' }, response: '<!doctype html>…' },
  'POST /v1/checkout/:id/decline': { operationId: 'declineCheckout', description: 'The card is declined on the sandbox checkout page: the payment fails (answers the result page, HTML).', params: { id: ids.payment, token: '5f1c2a9e0b7d4c3a8e6f1d2b9c0a7e4f' }, response: '<!doctype html>…' },
  // Test helpers
  'POST /v1/test_helpers/payments/:id/settle': { operationId: 'settleTestPayment', description: 'Sandbox: the collection rail confirms a pending payment, as a bank transfer arriving would.', params: { id: ids.payment } },
  'POST /v1/test_helpers/payments/:id/fail': { operationId: 'failTestPayment', description: 'Sandbox: the collection rail fails a pending payment with failure_code (default PROVIDER_ERROR).', params: { id: ids.payment }, request: { failure_code: 'PROVIDER_ERROR' } },
  'GET /v1/test_helpers/clock': { operationId: 'getTestClock', description: "Sandbox: the account's clock (now and its offset from real time), which quotes, holds and retries follow." },
  'POST /v1/test_helpers/clock/advance': { operationId: 'advanceTestClock', description: "Sandbox: moves the account's clock forward, e.g. to expire a quote or run a webhook retry now.", request: { seconds: 3600 } },
  'POST /v1/test_helpers/services/rails': { operationId: 'switchTestServiceRail', description: "Sandbox: takes a service rail down (or brings it back) for this account, to see SERVICE_UNAVAILABLE; not kept across a restart.", request: { service_code: 'electricity', country: 'NG', down: true } },
  // Connectors and the document
  'POST /v1/connectors/:name/callbacks': { operationId: 'receiveConnectorCallback', description: 'A live connector reports the outcome of a collection, payout or purchase. Authorised by its Kobo-Signature header over the body, not by a key; the body is the connector protocol of docs/connectors.md.', params: { name: 'acme-pay' } },
  'GET /v1/openapi.json': { operationId: 'getOpenApiDocument', description: 'This document: OpenAPI 3.1, generated from the route table and the schemas the server validates with.', response: { openapi: '3.1.0', info: { title: 'kobo' } } },
};
