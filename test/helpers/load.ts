// The mixed money-moving load of the crash tests: wallet and bank-transfer payments, fundings and
// customers in turn, each body unique where the API demands it (emails, phones).
import { uniqueEmail, uniquePhone } from './server.ts';

export function mixedRequest(customers: ReadonlyArray<{ id: string }>, n: number, label = 'Load'): { method: string; path: string; body: unknown } {
  const customer = customers[n % customers.length]!;
  switch (n % 4) {
    case 0:
      return { method: 'POST', path: '/v1/payments', body: { customer_id: customer.id, amount_minor: 100 + (n % 50), currency: 'NGN', method: 'wallet' } };
    case 1:
      return { method: 'POST', path: '/v1/payments', body: { customer_id: customer.id, amount_minor: 20_000 + n, currency: 'NGN', method: 'bank_transfer' } };
    case 2:
      return { method: 'POST', path: '/v1/transactions', body: { type: 'funding', customer_id: customer.id, amount_minor: 1_000 + n, currency: 'NGN' } };
    default:
      return { method: 'POST', path: '/v1/customers', body: { name: `${label} ${n}`, email: uniqueEmail(), phone: uniquePhone(), country_code: 'GH' } };
  }
}
