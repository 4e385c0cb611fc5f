// The front end's idempotency store on a real SQLite file: a webhook secret kept by an older version
// (whose replays repeated the create body) is gone after the next open; other records are untouched;
// the older rows get their checksums at that open and replay.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { FrontIdempotencyStore } from '../../src/http/idempotency-store.ts';

describe('FrontIdempotencyStore', () => {
  it('open: a kept subscription-create reply loses its secret; a replay then shows the rest unchanged', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kobo-front-idem-'));
    try {
      const file = path.join(dir, 'webhooks.db');
      const sub = { id: 'whs_1', object: 'webhook_subscription', url: 'http://127.0.0.1:9/h', secret: 'whsec_old', status: 'active' };
      const other = { data: { now: '2026-11-25T00:00:00.000Z', note: 'whsec_ is only text here' } };
      {
        // The table as an older version kept it (before secrets left replays, and before row checksums).
        const db = new Database(file);
        db.exec('CREATE TABLE front_idempotency (scope TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, body TEXT NOT NULL, at_ms INTEGER NOT NULL)');
        const insert = db.prepare('INSERT INTO front_idempotency (scope, fingerprint, status, body, at_ms) VALUES (?, ?, ?, ?, ?)');
        insert.run('test:acct:k1', 'f1', 201, JSON.stringify({ json: JSON.stringify({ data: sub }) }), Date.now());
        insert.run('test:acct:k2', 'f2', 200, JSON.stringify({ json: JSON.stringify(other) }), Date.now());
        db.close();
      }
      const db = new Database(file);
      const store = new FrontIdempotencyStore(db, 86_400_000);
      const never = async (): Promise<never> => assert.fail('a kept key must replay, not run again');
      const replay = await store.run('test:acct:k1', 'f1', never);
      assert.ok(replay !== 'replay_mismatch');
      const { secret, ...rest } = sub;
      assert.equal(secret, 'whsec_old');
      assert.deepEqual(JSON.parse(replay.json ?? ''), { data: rest });
      const untouched = await store.run('test:acct:k2', 'f2', never);
      assert.ok(untouched !== 'replay_mismatch');
      assert.deepEqual(JSON.parse(untouched.json ?? ''), other);
      db.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
