import Database from 'better-sqlite3';
import fs from 'node:fs';
import { createHash } from 'node:crypto';
const variant = process.argv[2]!;
const dir = '/work/main/data/probe'; fs.rmSync(dir, { recursive: true, force: true }); fs.mkdirSync(dir, { recursive: true });
const db = new Database(`${dir}/s.db`); db.pragma('journal_mode = WAL'); db.pragma('synchronous = OFF');
db.exec(`CREATE TABLE wal (lsn INTEGER PRIMARY KEY, partition INTEGER NOT NULL, batch INTEGER NOT NULL, body TEXT NOT NULL, crc INTEGER NOT NULL);`);
if (variant === 'cur') db.exec(`CREATE TABLE idem (scope TEXT PRIMARY KEY, partition INTEGER NOT NULL, owner TEXT NOT NULL, h INTEGER NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL) WITHOUT ROWID;
 CREATE INDEX idem_age ON idem (partition, owner, at_ms); CREATE INDEX idem_ph ON idem (partition, h);`);
if (variant === 'rowid') db.exec(`CREATE TABLE idem (seq INTEGER PRIMARY KEY, partition INTEGER NOT NULL, owner TEXT NOT NULL, h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL); CREATE INDEX idem_h ON idem (h);`);
if (variant === 'rowid0') db.exec(`CREATE TABLE idem (seq INTEGER PRIMARY KEY, partition INTEGER NOT NULL, owner TEXT NOT NULL, h INTEGER NOT NULL, scope TEXT NOT NULL, fingerprint TEXT NOT NULL, status INTEGER NOT NULL, json TEXT, error TEXT, at_ms INTEGER NOT NULL, lsn INTEGER NOT NULL);`);
const big = Number(process.argv[3] ?? 2100);
const body = 'x'.repeat(big);
const json = 'j'.repeat(680);
const insW = db.prepare('INSERT INTO wal VALUES (?,?,?,?,?)');
const insI = variant === 'cur' ? db.prepare('INSERT OR REPLACE INTO idem VALUES (?,?,?,?,?,?,?,?,?,?)') : variant === 'none' ? null : db.prepare('INSERT INTO idem (partition, owner, h, scope, fingerprint, status, json, error, at_ms, lsn) VALUES (?,?,?,?,?,?,?,?,?,?)');
let lsn = 1;
const tx = db.transaction((n: number, b: number) => {
  for (let i = 0; i < n; i++) {
    insW.run(lsn, i % 64, b, body, 12345);
    const scope = `test:acct_f66cf399fac9:run-1-${b}-${i}`;
    const h = parseInt(createHash('sha1').update(scope).digest('hex').slice(0, 12), 16);
    if (insI && variant === 'cur') insI.run(scope, i % 64, 'test:acct_f66cf399fac9', h, 'f'.repeat(64), 201, json, null, Date.now(), lsn);
    else if (insI) insI.run(i % 64, 'test:acct_f66cf399fac9', h, scope, 'f'.repeat(64), 201, json, null, Date.now(), lsn);
    lsn++;
  }
});
// warm: 200k rows
for (let b = 0; b < 4000; b++) tx(48, b);
const c0 = process.cpuUsage(); const t0 = performance.now();
for (let b = 4000; b < 6000; b++) tx(48, b);
const c = process.cpuUsage(c0); const ms = performance.now() - t0;
console.log(variant, big, 'cpu µs/record', ((c.user + c.system) / (2000 * 48)).toFixed(1), 'wall µs/record', (ms * 1000 / (2000 * 48)).toFixed(1), 'wal MB', (fs.statSync(`${dir}/s.db-wal`).size/1e6).toFixed(1));
