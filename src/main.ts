// `npm start`: loads config, starts the server, prints where it listens, stops cleanly on SIGINT/SIGTERM.
// Main thread. A clean stop snapshots every partition; a crash loses nothing acknowledged (WAL replay).
// Invariant: a start-up error exits non-zero with one clear line.
import { loadConfig } from './config.ts';
import { startApp } from './app.ts';

const config = loadConfig();
const log = (message: string): void => {
  if (config.logLevel !== 'silent') process.stdout.write(`${new Date().toISOString()} kobo ${message}\n`);
};

try {
  const app = await startApp(config, log);
  if (app.createdKey !== null) {
    // Printed once: only its hash is stored.
    process.stdout.write(`\n  sandbox secret key (shown once, store it now): ${app.createdKey}\n\n`);
  }
  log(`listening on http://${config.host}:${app.port} (data ${config.dataDir}, ${config.shards} shard(s))`);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping (snapshotting partitions)`);
    void app.stop().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
} catch (error) {
  process.stderr.write(`kobo: cannot start: ${(error as Error).message}\n`);
  process.exit(1);
}
