// Heap bytes per idle funded wallet at 1M wallets over 64 partitions, built as the shard builds them
// (create handler → customer.created, openWallet → wallet.opened, a 'ledger' post crediting the wallet).
// Run: node --expose-gc --import tsx bench/memory.bench.ts  [--wallets N]  (heapUsed deltas after full gc).
// Phases are measured apart: customers alone, then wallets alone, then the same state after a snapshot
// round trip (encode + decode of every partition), which is what a restarted server holds.
import v8 from 'node:v8';
import { PARTITIONS } from '../src/config.ts';
import { mintId } from '../src/ids.ts';
import { emptyPartition, type PartitionState } from '../src/shard/state.ts';
import { decodePartition, encodePartition } from '../src/shard/partition-image.ts';
import { addCustomer, addFundedWallet, contextOf, ownerOf } from './lib/fixtures.ts';
import { fmt, heapAfterGc, machine, table, writeResult } from './lib/report.ts';

const TARGET_BYTES_PER_WALLET_MAX = 1024;
const NOW_MS = Date.UTC(2025, 0, 15, 12);

function walletsArg(): number {
  const at = process.argv.indexOf('--wallets');
  const value = at < 0 ? 1_000_000 : Number(process.argv[at + 1]);
  if (!Number.isInteger(value) || value < PARTITIONS) throw new Error('--wallets must be an integer ≥ 64');
  return value;
}


function progress(label: string, done: number, total: number): void {
  if (process.stdout.isTTY) process.stdout.write(`\r${label} ${done}/${total}   `);
}

/**
 * What one minted id string costs on the heap: as mintId returns it (a cons string over a sliced ulid),
 * after JSON.stringify has flattened it (what the WAL encoding does), and as a flat parsed copy.
 */
function idStringBytes(count: number): { minted: number; afterStringify: number; parsed: number } {
  const slots = (n: number): string[] => new Array<string>(n).fill('');
  const minted = slots(count);
  const parsed = slots(count);
  const h0 = heapAfterGc();
  for (let i = 0; i < count; i += 1) minted[i] = mintId(3, NOW_MS);
  const h1 = heapAfterGc();
  for (const id of minted) JSON.stringify(id);
  const h2 = heapAfterGc();
  for (let i = 0; i < count; i += 1) parsed[i] = JSON.parse(`"${minted[i]!}"`) as string;
  const h3 = heapAfterGc();
  if (minted.length + parsed.length !== 2 * count) throw new Error('unreachable');
  return { minted: (h1 - h0) / count, afterStringify: (h2 - h0) / count, parsed: (h3 - h2) / count };
}

async function main(): Promise<void> {
  const wallets = walletsArg();
  const perPartition = Math.ceil(wallets / PARTITIONS);
  const total = perPartition * PARTITIONS;
  const m = machine();
  process.stdout.write(`memory benchmark — ${total.toLocaleString('en-US')} customers + wallets over ${PARTITIONS} partitions; node ${m.node}\n`);

  const states: PartitionState[] = Array.from({ length: PARTITIONS }, (_, p) => emptyPartition(p));
  const heapEmpty = heapAfterGc();

  // Phase 1: customers only (what the create handler's customer.created event puts in state).
  const started = Date.now();
  let seq = 0;
  for (const state of states) {
    const ctx = contextOf(state, NOW_MS);
    for (let i = 0; i < perPartition; i += 1) {
      // One owner string per request, as the front end makes it; 16 accounts share the server.
      addCustomer(ctx, { owner: ownerOf('test', `acct_bench${String(seq % 16).padStart(4, '0')}`), seq });
      seq += 1;
    }
    progress('customers', seq, total);
  }
  const heapCustomers = heapAfterGc();

  // Phase 2: one funded NGN wallet per customer (wallet.opened + a posted credit from clearing).
  let opened = 0;
  for (const state of states) {
    const ctx = contextOf(state, NOW_MS + 1000);
    for (const customer of state.customers.values()) {
      addFundedWallet(ctx, customer, 500_000);
      opened += 1;
    }
    progress('wallets', opened, total);
  }
  const heapWallets = heapAfterGc();
  const buildSeconds = (Date.now() - started) / 1000;

  // Phase 3: the same state after a snapshot round trip (JSON.parse'd strings, no minted cons strings).
  let snapshotBytes = 0;
  for (let p = 0; p < states.length; p += 1) {
    // In place, one partition at a time: the live image of each is garbage once its copy exists.
    const json = encodePartition(states[p]!);
    snapshotBytes += json.length;
    states[p] = decodePartition(json);
  }
  const heapRestored = heapAfterGc();

  const ids = idStringBytes(100_000);
  const accounts = states.reduce((n, s) => n + [...s.ledger.accounts.values()].filter((a) => a.kind === 'wallet').length, 0);
  if (accounts !== total) throw new Error(`expected ${total} wallets, found ${accounts}`);

  const perCustomer = (heapCustomers - heapEmpty) / total;
  const perWallet = (heapWallets - heapCustomers) / total;
  const perBoth = (heapWallets - heapEmpty) / total;
  const perBothRestored = (heapRestored - heapEmpty) / total;
  const rows = [
    ['measure', 'bytes', 'vs 1 KB target'],
    ['per wallet alone (live-built)', fmt(perWallet, 0), perWallet <= TARGET_BYTES_PER_WALLET_MAX ? 'met' : 'NOT met'],
    ['per customer record alone (live-built)', fmt(perCustomer, 0), ''],
    ['per customer + wallet (live-built)', fmt(perBoth, 0), perBoth <= TARGET_BYTES_PER_WALLET_MAX ? 'met' : 'NOT met'],
    ['per customer + wallet (after snapshot restore)', fmt(perBothRestored, 0), perBothRestored <= TARGET_BYTES_PER_WALLET_MAX ? 'met' : 'NOT met'],
    ['snapshot JSON per customer + wallet', fmt(snapshotBytes / total, 0), ''],
  ];
  process.stdout.write(`\n${table(rows)}\n`);
  process.stdout.write(
    `\none 26-char id string: ${fmt(ids.minted, 0)} B as mintId returns it, ${fmt(ids.afterStringify, 0)} B once JSON.stringify ` +
      `has flattened it, ${fmt(ids.parsed, 0)} B as a JSON.parse'd copy\n`,
  );
  const mb = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;
  process.stdout.write(
    `\nheapUsed: empty ${mb(heapEmpty)}, +customers ${mb(heapCustomers)}, +wallets ${mb(heapWallets)}, restored ${mb(heapRestored)}; ` +
      `heap limit ${mb(v8.getHeapStatistics().heap_size_limit)}; built in ${buildSeconds.toFixed(1)} s\n`,
  );
  const file = writeResult('memory', {
    wallets: total,
    partitions: PARTITIONS,
    heapUsedBytes: { empty: heapEmpty, customers: heapCustomers, wallets: heapWallets, restored: heapRestored },
    bytesPer: { wallet: perWallet, customer: perCustomer, customerAndWallet: perBoth, customerAndWalletRestored: perBothRestored },
    snapshotJsonBytesPerCustomerAndWallet: snapshotBytes / total,
    idStringBytes: ids,
    targetBytesPerWalletMax: TARGET_BYTES_PER_WALLET_MAX,
    buildSeconds,
  });
  process.stdout.write(`written ${file}\n`);
  // Keep the states reachable until after the last measurement.
  if (states.length !== PARTITIONS) throw new Error('unreachable');
}

await main();
