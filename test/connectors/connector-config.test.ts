// KOBO_CONNECTORS_FILE parsing and the signing rules, on real files and real HMACs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { tempDataDir } from '../helpers/server.ts';
import { loadConnectorsFile } from '../../src/connectors/connector-config.ts';
import { signatureProblem, signedHeaders } from '../../src/connectors/signing.ts';

const good = { name: 'ng-bank', url: 'http://127.0.0.1:9090', secret: 'a-long-shared-secret-123', rails: ['payout', 'resolve'], countries: ['NG'] };

function file(content: unknown): string {
  const p = path.join(tempDataDir('conn-config'), 'connectors.json');
  fs.writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content));
  return p;
}

test('connectors file: a valid list loads; none configured is an empty list', () => {
  assert.deepEqual(loadConnectorsFile(file([good])), [good]);
  assert.deepEqual(loadConnectorsFile(''), []);
});

test('connectors file: unreadable, not JSON, short secret, unknown rail, extra field or a duplicate name stops start-up', () => {
  assert.throws(() => loadConnectorsFile('/nonexistent/connectors.json'), /connectors.json does not exist$/);
  assert.throws(() => loadConnectorsFile(file('{not json')), /is not valid JSON/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, secret: 'short' }])), /KOBO_CONNECTORS_FILE/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, rails: ['teleport'] }])), /KOBO_CONNECTORS_FILE/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, extra: 1 }])), /KOBO_CONNECTORS_FILE/);
  assert.throws(() => loadConnectorsFile(file([good, good])), /appears twice/);
});

test('connectors file: a code kobo does not know, in any coverage list, stops start-up naming the connector and code', () => {
  const full = { ...good, methods: ['bank_transfer', 'bank_account', 'card', 'mobile_money', 'virtual_account'], currencies: ['NGN', 'KES'], services: ['airtime', 'tv'] };
  assert.deepEqual(loadConnectorsFile(file([full])), [full]);
  assert.throws(() => loadConnectorsFile(file([{ ...good, methods: ['banktransfer'] }])), /connector ng-bank: methods has "banktransfer"/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, methods: ['wallet'] }])), /methods has "wallet"/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, countries: ['NGN'] }])), /countries has "NGN"/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, countries: ['ng'] }])), /countries has "ng"/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, currencies: ['NAIRA'] }])), /currencies has "NAIRA"/);
  assert.throws(() => loadConnectorsFile(file([{ ...good, services: ['airtime', 'lottery'] }])), /services has "lottery"/);
});

test('signing: the right secret, exact body and a fresh timestamp verify; anything else does not', () => {
  const body = '{"reference":"x","status":"settled"}';
  const nowMs = Date.now();
  const h = signedHeaders('secret-one-0123456', body, nowMs);
  assert.equal(signatureProblem('secret-one-0123456', h['Kobo-Timestamp'], h['Kobo-Signature'], body, nowMs), null);
  assert.match(signatureProblem('secret-two-0123456', h['Kobo-Timestamp'], h['Kobo-Signature'], body, nowMs) ?? '', /bad/);
  assert.match(signatureProblem('secret-one-0123456', h['Kobo-Timestamp'], h['Kobo-Signature'], `${body} `, nowMs) ?? '', /bad/);
  assert.match(signatureProblem('secret-one-0123456', h['Kobo-Timestamp'], h['Kobo-Signature'], body, nowMs + 301_000) ?? '', /stale/);
  assert.match(signatureProblem('secret-one-0123456', undefined, h['Kobo-Signature'], body, nowMs) ?? '', /Timestamp/);
  assert.match(signatureProblem('secret-one-0123456', h['Kobo-Timestamp'], undefined, body, nowMs) ?? '', /Signature/);
});
