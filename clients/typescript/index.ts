// The typed kobo client: openapi-fetch over the types generated from the server's OpenAPI document
// (schema.ts), with the secret key sent on every request. Runs wherever fetch does (Node 20+, browsers).
// Invariant: nothing here is generated; regenerating schema.ts (npm run client:generate) never touches it.
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './schema.ts';

export type { components, operations, paths, webhooks } from './schema.ts';
export type KoboClient = Client<paths>;

export interface KoboClientOptions {
  /** Where the server listens, e.g. http://127.0.0.1:3000 (no trailing /v1). */
  baseUrl: string;
  /** sk_test_… or sk_live_…; leave out for the public endpoints only. */
  key?: string;
  fetch?: typeof globalThis.fetch;
}

export function createKoboClient(options: KoboClientOptions): KoboClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch === undefined ? {} : { fetch: options.fetch }) });
  const key = options.key;
  if (key !== undefined) {
    client.use({
      onRequest({ request }) {
        request.headers.set('Authorization', `Bearer ${key}`);
        return request;
      },
    });
  }
  return client;
}

/** A fresh Idempotency-Key: send a new one per intended operation, the same one when retrying it. */
export function idempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
