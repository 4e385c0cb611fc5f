// `npm run kobo -- <command>`: the operator CLI (keys, snapshot, restore, verify, webhooks, orders, reconcile).
// Runs as its own process (dist/kobo.js); reads config through src/config.ts like the server does.
// Invariant: every command names the data dir it works on (stderr) and exits non-zero on failure with
// one clear line; only `--init` (or `restore`) may create a data dir, so a mistyped path is refused.
import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import { ConfigError, loadConfig, type Config } from '../config.ts';
import { ControlStore, generateSecret, keyExpired, type KeyRecord } from '../store/control-store.ts';
import { verifyDataDir } from './verify.ts';
import { takeSnapshot } from './backup.ts';
import { restoreBackup } from './restore.ts';
import { copyShardFiles } from '../cluster/shard-copy.ts';
import { listReconciliations, reconciliationLine } from './reconcile.ts';
import { WebhookStore } from '../webhooks/store.ts';
import { startConnector } from './connector.ts';
import { makeDir } from '../store/private-files.ts';
import { ipAllowProblem, scopeProblem } from '../http/auth.ts';
import { isUlid } from '../ids.ts';
import { customerOwner } from './customer-owner.ts';
import { listen } from './listen.ts';
import { trigger, TRIGGER_EVENTS, type TriggerEvent } from './trigger.ts';
import { clusterStatus, formatStatus } from './cluster.ts';
import { imageCopy } from '../cluster/copy-images.ts';
import { clusterWrite } from './cluster-writes.ts';

process.setSourceMapsEnabled(true);
let config: Readonly<Config>;
try {
  config = loadConfig();
} catch (error) {
  process.stderr.write(`kobo: ${error instanceof ConfigError ? error.message : (error as Error).message}\n`);
  process.exit(78);
}

/** A data dir exists once the server or `--init` created its control database. */
function isDataDir(dir: string): boolean {
  return fs.existsSync(path.join(dir, 'control.db')) || fs.existsSync(path.join(dir, 'layout.json'));
}

// Snapshots, backups and any database the CLI opens are as private as the server's own files.
process.umask(0o077);

const progress = (message: string): void => {
  process.stderr.write(`  … ${message}\n`);
};

function keyLine(k: KeyRecord): string {
  const expires = k.expiresAtMs === null ? '' : ` expires ${new Date(k.expiresAtMs).toISOString()}`;
  const status = k.status === 'active' && keyExpired(k, Date.now()) ? 'expired' : k.status;
  const scoped = k.customerId === null ? '' : ` customer ${k.customerId}`;
  const ips = k.ipAllow.length === 0 ? '' : ` ip ${k.ipAllow.join(',')}`;
  return `${k.id}  ${k.prefix}…  ${k.env}  account ${k.account}  ${status}  scopes ${k.scopes.join(',')}${scoped}${ips}${expires}`;
}

/**
 * Why a key for this customer cannot be made in this account and environment, or null. A key acts
 * only for customers of its own account: one made elsewhere (say in `default`, when --account was
 * forgotten) would be refused on every request.
 */
function customerKeyProblem(customerId: string, env: 'test' | 'live', account: string): string | null {
  const owner = customerOwner(config.dataDir, customerId);
  if (owner === `${env}:${account}`) return null;
  const refused = `no customer ${customerId} in account ${account} (${env})`;
  if (owner === null) return refused;
  const at = owner.indexOf(':');
  const [ownerEnv, ownerAccount] = [owner.slice(0, at), owner.slice(at + 1)];
  return `${refused}; it belongs to account ${ownerAccount} (${ownerEnv}): pass ${ownerEnv === env ? '' : `--env ${ownerEnv} `}--account ${ownerAccount}`;
}

const list = (value: string): string[] => value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);

/** Queues an operator resolution for the server; with `wait`, waits up to 15 s for its result. */
async function queueResolve(action: Parameters<ControlStore['queueAction']>[0], wait: boolean): Promise<void> {
  const control = new ControlStore(config.dataDir);
  const id = await clusterWrite(config.dataDir, (sink) => {
    control.replica = sink;
    return control.queueAction(action, Date.now());
  });
  process.stdout.write(`queued ${id}: resolve ${action.target} as ${action.payload.outcome ?? ''}\n`);
  const applied = wait ? await control.appliedAction(id, 15_000, 100) : undefined;
  control.close();
  if (applied === undefined) {
    if (wait) process.stdout.write('not applied yet: the server applies it when it runs\n');
    return;
  }
  if (applied.result !== 'ok') throw new Error(`the server refused: ${applied.result ?? ''}`);
  process.stdout.write('applied\n');
}

const program = new Command('kobo')
  .description('kobo operator commands (data dir: KOBO_DATA_DIR, default ./data/state)')
  .option('--init', 'create the data dir (KOBO_DATA_DIR) if it does not exist yet')
  .showHelpAfterError();
program.hook('preAction', (_program, action) => {
  // The reference connector is a separate service, and listen and trigger speak to a server's API:
  // none of them keeps kobo data.
  if (['connector', 'listen', 'trigger'].includes(action.name())) return;
  process.stderr.write(`kobo: data dir ${config.dataDir}\n`);
  // restore fills an empty dir by design; verify and snapshot refuse a missing dir on their own.
  if (action.name() === 'restore' || isDataDir(config.dataDir)) return;
  if (program.opts<{ init?: boolean }>().init !== true) {
    throw new Error(`no kobo data dir at ${config.dataDir}; check KOBO_DATA_DIR, or pass --init to create one`);
  }
  makeDir(config.dataDir);
  new ControlStore(config.dataDir).close();
  process.stderr.write(`kobo: created data dir ${config.dataDir}\n`);
});

const keys = program.command('keys').description('create, list, rotate and revoke API keys');
keys
  .command('create')
  .description('create a secret key (printed once; only its hash is stored)')
  .addOption(new Option('--env <env>', 'sandbox (test) or live').choices(['test', 'live']).default('test'))
  .option('--account <name>', 'the account the key belongs to', 'default')
  .option('--scopes <list>', "comma-separated scopes: '*', 'read', '<family>', '<family>:read|write'", list, ['*'])
  .option('--ip-allow <list>', 'comma-separated source IPs or CIDRs', list, [])
  .option('--customer <id>', 'mint a key that acts for this one customer only')
  .option('--label <text>', 'a note shown in keys list')
  .action(async (opts: { env: 'test' | 'live'; account: string; scopes: string[]; ipAllow: string[]; customer?: string; label?: string }) => {
    const problem = opts.scopes.map(scopeProblem).find((p) => p !== null) ?? opts.ipAllow.map(ipAllowProblem).find((p) => p !== null)
      ?? (opts.customer !== undefined && !isUlid(opts.customer) ? `--customer ${opts.customer} is not a customer id (a ULID)` : null);
    if (problem !== null) throw new Error(`keys create: ${problem}`);
    if (opts.customer !== undefined) {
      const refused = customerKeyProblem(opts.customer, opts.env, opts.account);
      if (refused !== null) throw new Error(`keys create: ${refused}`);
    }
    const control = new ControlStore(config.dataDir);
    const secret = generateSecret(opts.env);
    const record = await clusterWrite(config.dataDir, (sink) => {
      control.replica = sink;
      return control.insertKey({ secret, account: opts.account, scopes: opts.scopes, ipAllow: opts.ipAllow, customerId: opts.customer ?? null, label: opts.label ?? null, nowMs: Date.now() });
    }).finally(() => control.close());
    process.stdout.write(`${keyLine(record)}\nsecret (shown once): ${secret}\n`);
  });
keys.command('list').description('list keys (never their secrets)').action(() => {
  const control = new ControlStore(config.dataDir);
  for (const k of control.listKeys()) process.stdout.write(`${keyLine(k)}\n`);
  control.close();
});
keys
  .command('rotate <id>')
  .description('create a replacement key; the old one stays valid for the grace period')
  .option('--grace-hours <hours>', 'how long the old key keeps working', (v) => Number(v), 24)
  .action(async (id: string, opts: { graceHours: number }) => {
    if (!Number.isFinite(opts.graceHours) || opts.graceHours < 0) throw new Error('--grace-hours must be a number ≥ 0');
    const control = new ControlStore(config.dataDir);
    const { secret, record } = await clusterWrite(config.dataDir, (sink) => {
      control.replica = sink;
      return control.rotate(id, { graceMs: Math.round(opts.graceHours * 3_600_000), nowMs: Date.now() });
    }).finally(() => control.close());
    process.stdout.write(`${keyLine(record)}\nsecret (shown once): ${secret}\nold key ${id} expires in ${opts.graceHours} h\n`);
  });
keys.command('revoke <id>').description('revoke a key at once (401 within a second)').action(async (id: string) => {
  const control = new ControlStore(config.dataDir);
  const done = await clusterWrite(config.dataDir, (sink) => {
    control.replica = sink;
    return control.revoke(id);
  }).finally(() => control.close());
  if (!done) throw new Error(`no key ${id}`);
  process.stdout.write(`revoked ${id}\n`);
});

const webhooks = program.command('webhooks').description('list webhook subscriptions; re-enable or disable one');
webhooks.command('list').description('subscriptions with status and consecutive failures').action(() => {
  const store = new WebhookStore(config.dataDir);
  for (const s of store.subscriptions()) {
    process.stdout.write(`${s.id}  ${s.owner}  ${s.status}  failures ${s.consecutiveFailures}  ${s.url}  ${s.events.join(',')}\n`);
  }
  store.close();
});
for (const [name, status] of [['enable', 'active'], ['disable', 'disabled']] as const) {
  webhooks
    .command(`${name} <id>`)
    .description(name === 'enable' ? 're-enable a disabled subscription (failures reset to 0)' : 'stop deliveries to a subscription')
    .action(async (id: string) => {
      const store = new WebhookStore(config.dataDir);
      const done = await clusterWrite(config.dataDir, (sink) => {
        store.replica = sink;
        return store.setStatus(id, status, Date.now());
      }).finally(() => store.close());
      if (!done) throw new Error(`no subscription ${id}`);
      process.stdout.write(`${id} is ${status}\n`);
    });
}

const orders = program.command('orders').description('operator decisions on service orders');
orders
  .command('resolve <orderId>')
  .description('resolve an order held for manual fulfilment (or unknown after a rail timeout): delivered (completed) or failed (failed; collected money refunded, a wallet hold released)')
  .addOption(new Option('--outcome <outcome>', 'what the operator found').choices(['delivered', 'failed']).makeOptionMandatory())
  .option('--no-wait', 'queue the decision and return at once')
  .action(async (orderId: string, opts: { outcome: 'delivered' | 'failed'; wait: boolean }) => {
    await queueResolve({ kind: 'order.resolve', target: orderId, payload: { outcome: opts.outcome } }, opts.wait);
  });

/** An operator's note on a resolution: kept with the transaction (and in the WAL record), so bounded. */
const NOTE_CHARS_MAX = 500;
const reconcile = program.command('reconcile').description('transactions a rail contradicted (settled after failed, failed after completed): list and resolve');
reconcile
  .command('list')
  .description('open ones: each refuses retry (409) until resolved; reads the shard files (a server may run)')
  .option('--json', 'print them as JSON')
  .action((opts: { json?: boolean }) => {
    const open = listReconciliations(config.dataDir, progress);
    if (opts.json === true) process.stdout.write(`${JSON.stringify(open, null, 2)}\n`);
    else for (const r of open) process.stdout.write(`${reconciliationLine(r)}\n`);
    if (opts.json !== true) process.stdout.write(`${open.length} transaction(s) await reconciliation\n`);
  });
reconcile
  .command('resolve <transactionId>')
  .description("after asking the provider: 'recorded' keeps kobo's outcome (retry allowed again), 'reported' confirms the rail's (never retried); moves no money")
  .addOption(new Option('--outcome <outcome>', 'which outcome stands').choices(['recorded', 'reported']).makeOptionMandatory())
  .option('--note <text>', 'what the operator found (kept with the transaction)')
  .option('--no-wait', 'queue the decision and return at once')
  .action(async (transactionId: string, opts: { outcome: 'recorded' | 'reported'; note?: string; wait: boolean }) => {
    if (!isUlid(transactionId)) throw new Error(`reconcile resolve: ${transactionId} is not a transaction id (a ULID)`);
    if (opts.note !== undefined && (opts.note.length > NOTE_CHARS_MAX || /[\u0000-\u001f\u007f-\u009f]/.test(opts.note))) throw new Error(`reconcile resolve: --note must be at most ${NOTE_CHARS_MAX} characters of text without control characters`);
    await queueResolve({ kind: 'reconcile.resolve', target: transactionId, payload: { outcome: opts.outcome, ...(opts.note === undefined ? {} : { note: opts.note }) } }, opts.wait);
  });

program
  .command('snapshot')
  .description('write a backup file of every partition (works while the server runs)')
  .option('--out <file>', 'backup file to write')
  .action(async (opts: { out?: string }) => {
    const out = opts.out ?? path.join(path.dirname(config.dataDir), 'backups', `kobo-${new Date().toISOString().replace(/[:.]/g, '-')}.kobo`);
    const result = await takeSnapshot(config.dataDir, path.resolve(out), progress);
    process.stdout.write(`snapshot written: ${result.file} (${result.partitions} partitions, ${result.bytes} bytes${result.compacted ? ', shard files compacted' : ''})\n`);
  });

program
  .command('restore <file>')
  .description('replace the data dir with a backup (the server must be stopped; the old dir is kept aside)')
  .option('--allow-no-manifest', 'restore a backup written before backups carried a manifest (nothing proves it complete)')
  .action((file: string, opts: { allowNoManifest?: boolean }) => {
    const result = restoreBackup(config.dataDir, path.resolve(file), progress, { allowNoManifest: opts.allowNoManifest === true });
    process.stdout.write(`restored ${result.partitions} partitions into ${result.dataDir}${result.previous === null ? '' : `; previous data kept at ${result.previous}`}\n`);
  });

program
  .command('verify')
  .description('check checksums, snapshot-vs-replay equality and ledger invariants; non-zero exit on any violation')
  .option('--json', 'print the report as JSON')
  .action((opts: { json?: boolean }) => {
    const report = verifyDataDir(config.dataDir, progress);
    if (opts.json === true) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      process.stdout.write(`verified ${report.shards} shard(s): ${report.walRecords} WAL records, ${report.snapshots} snapshots, ${report.customers} customers, ${report.wallets} wallets, ${report.transactions} transactions\n`);
      for (const r of report.ranges) process.stdout.write(`  shard ${r.shard}: WAL LSN ${r.fromLsn ?? '-'}..${r.toLsn} checked; snapshots proved by ${r.proof}\n`);
      process.stdout.write(`  ${report.coldRows} finished-entity rows\n`);
      for (const [currency, t] of Object.entries(report.currencies)) process.stdout.write(`  ${currency}: debits ${t.debitsPosted} = credits ${t.creditsPosted}\n`);
    }
    if (report.violations.length > 0) {
      for (const v of report.violations) process.stderr.write(`VIOLATION ${v}\n`);
      process.exitCode = 2;
    } else if (opts.json !== true) process.stdout.write('ok: no violations\n');
  });

const clusterCmd = program.command('cluster').description('cluster mode (KOBO_CLUSTER_NATS): nodes, owner, streams');
clusterCmd
  .command('status')
  .description('the owner lease, each node\'s role and lag, each shard stream\'s tail and replicas')
  .option('--nats <urls>', 'nats://host:port URLs, comma-separated (default: KOBO_CLUSTER_NATS)')
  .option('--json', 'print the status as JSON')
  .action(async (opts: { nats?: string; json?: boolean }) => {
    const servers = (opts.nats ?? process.env.KOBO_CLUSTER_NATS ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
    if (servers.length === 0) throw new Error('cluster status: give --nats or set KOBO_CLUSTER_NATS');
    const status = await clusterStatus(servers);
    process.stdout.write(opts.json === true ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
  });

clusterCmd
  .command('image-copy', { hidden: true })
  .description("a node's own images of its followed copy (run by the node supervisor while its followers pause)")
  .option('--shards <list>', 'only these shards (comma-separated numbers)')
  .action(async (opts: { shards?: string }) => {
    const only = opts.shards === undefined ? undefined : opts.shards.split(',').filter((s) => s !== '').map(Number);
    if (only !== undefined && only.some((n) => !Number.isInteger(n) || n < 0)) throw new Error('cluster image-copy: --shards takes shard numbers, comma-separated');
    for (const r of await imageCopy(config.dataDir, { walRetainRecords: config.walRetainRecords, ...(only === undefined ? {} : { only }) })) {
      if (r.skipped) process.stdout.write(`shard ${r.shard}: skipped (records up to LSN ${r.lastLsn}, not all met in its stream yet)\n`);
      else process.stdout.write(`shard ${r.shard}: ${r.replayed} record(s) replayed, ${r.imaged} partition(s) imaged at LSN ${r.lastLsn}, ${r.archived} record(s) archived, ${r.live} in the live log\n`);
    }
  });

clusterCmd
  .command('image-shard', { hidden: true })
  .description("a copy of one shard's files at one moment, for the object store (run by the node holding the shard)")
  .requiredOption('--shard <n>', 'the shard', (v) => Number(v))
  .requiredOption('--out <dir>', 'an empty directory for the copy')
  .action((opts: { shard: number; out: string }) => {
    process.stdout.write(`${JSON.stringify(copyShardFiles(config.dataDir, opts.shard, path.resolve(opts.out)))}\n`);
  });

program
  .command('connector')
  .description('run the reference connector: a simulated bank/PSP/biller speaking docs/connectors.md')
  .requiredOption('--secret <secret>', 'the shared secret (the same as in KOBO_CONNECTORS_FILE)')
  .option('--port <n>', 'listen port (0: a free port the OS picks)', (v) => Number(v), 9090)
  .option('--host <host>', 'listen address', '127.0.0.1')
  .option('--name <name>', 'the name kobo knows it by', 'reference')
  .option('--latency-ms <ms>', 'delay before every answer', (v) => Number(v), 0)
  .option('--fail-ending <digits>', 'account/recipient/amount ending in this fails (PROVIDER_ERROR)', '9999')
  .option('--timeout-ending <digits>', 'ending in this settles, but the answer is held past kobo\'s timeout', '9998')
  .option('--timeout-hold-ms <ms>', 'how long such an answer is held', (v) => Number(v), 15_000)
  .option('--async-ending <digits>', 'ending in this answers accepted, then calls back settled', '9997')
  .option('--callback-delay-ms <ms>', 'delay before an asynchronous callback', (v) => Number(v), 100)
  .option('--fail-rate <fraction>', 'fraction of other requests failed at random', (v) => Number(v), 0)
  .option('--fx-drift-bps <bps>', 'FX mid rates: kobo\'s reference rates moved by this many basis points', (v) => Number(v), 0)
  .action(async (opts: { secret: string; port: number; host: string; name: string; latencyMs: number; failEnding: string; timeoutEnding: string; timeoutHoldMs: number; asyncEnding: string; callbackDelayMs: number; failRate: number; fxDriftBps: number }) => {
    if (opts.secret.length < 16) throw new Error('--secret must be at least 16 characters');
    for (const [flag, value] of Object.entries({ port: opts.port, latencyMs: opts.latencyMs, timeoutHoldMs: opts.timeoutHoldMs, callbackDelayMs: opts.callbackDelayMs })) {
      if (!Number.isInteger(value) || value < 0) throw new Error(`--${flag} must be an integer ≥ 0`);
    }
    if (!(opts.failRate >= 0 && opts.failRate <= 1)) throw new Error('--fail-rate must be between 0 and 1');
    if (!Number.isInteger(opts.fxDriftBps) || Math.abs(opts.fxDriftBps) >= 10_000) throw new Error('--fx-drift-bps must be an integer between -9999 and 9999');
    const server = await startConnector({ ...opts, log: (line) => process.stdout.write(`${new Date().toISOString()} ${line}\n`) });
    const stop = (): void => {
      server.close();
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });

const apiOption = (): Option => new Option('--api <url>', "the server's base URL").default(`http://127.0.0.1:${config.port}`);

program
  .command('listen')
  .description("stream the account's events from a running server and forward each to a URL, signed like a webhook")
  .requiredOption('--forward-to <url>', 'where each event is POSTed (e.g. http://127.0.0.1:4000/hooks)')
  .requiredOption('--key <secret>', 'an API key of the account (sk_test_… or sk_live_…)')
  .addOption(apiOption())
  .option('--secret <whsec>', 'the signing secret to use (default: a new one, printed)')
  .action((opts: { forwardTo: string; key: string; api: string; secret?: string }) => {
    const listening = listen({ apiUrl: opts.api, key: opts.key, forwardTo: opts.forwardTo, ...(opts.secret === undefined ? {} : { secret: opts.secret }), log: (line) => process.stdout.write(`${line}\n`) });
    process.stdout.write(`Ready: forwarding events to ${opts.forwardTo}\nWebhook signing secret: ${listening.secret}\n`);
    const stop = (): void => {
      listening.stop();
      process.exit(0);
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });

program
  .command('trigger <event>')
  .description(`make the sandbox objects that cause an event (${TRIGGER_EVENTS.join(', ')}) and print them`)
  .requiredOption('--key <secret>', 'a sandbox API key of the account (sk_test_…)')
  .addOption(apiOption())
  .option('--override <field=value>', 'set a field of the request that causes the event (repeatable)', (v: string, all: string[]) => [...all, v], [] as string[])
  .action(async (event: string, opts: { key: string; api: string; override: string[] }) => {
    if (!(TRIGGER_EVENTS as readonly string[]).includes(event)) throw new Error(`unknown event ${event}; one of ${TRIGGER_EVENTS.join(', ')}`);
    const made = await trigger(event as TriggerEvent, { apiUrl: opts.api, key: opts.key, overrides: opts.override });
    process.stdout.write(`${JSON.stringify({ event, objects: made }, null, 2)}\n`);
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`kobo: ${(error as Error).message}\n`);
  process.exit(1);
}
