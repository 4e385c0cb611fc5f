// `npm start` (node dist/main.js): loads config, starts the server, logs JSON lines, stops cleanly on
// SIGINT/SIGTERM: stop accepting, answer the requests already received (at most KOBO_DRAIN_MS),
// snapshot every partition, exit 0. A crash loses nothing acknowledged (WAL replay).
// Invariant: a start-up error exits non-zero with one clear line (a stack only for a bug).
import { ConfigError, loadConfig, unknownSettings, type Config } from './config.ts';
import { startApp } from './app.ts';
import { createLogging } from './ops/logger.ts';
import { loadClusterConfig, type ClusterConfig } from './cluster/cluster-config.ts';
import { runClusterNode } from './cluster/node.ts';
import { runShardHost } from './cluster/shard-host.ts';

// Stacks in the log point at src/*.ts lines, not at the bundle (dist/main.js.map).
process.setSourceMapsEnabled(true);

// A stop asked for during recovery is honoured as soon as the server is up (nothing is lost meanwhile).
let stopAsked: string | null = null;
let stop = (signal: string): void => {
  stopAsked ??= signal;
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));

let config: Readonly<Config>;
try {
  config = loadConfig();
} catch (error) {
  process.stderr.write(`kobo: ${error instanceof ConfigError ? error.message : (error as Error).stack}\n`);
  process.exit(78); // EX_CONFIG
}
const logging = createLogging(config.logLevel);
// A misspelt setting would otherwise be ignored without a word (and its default used instead).
for (const { name, nearest } of unknownSettings()) {
  logging.warn(`unknown setting ${name} is ignored${nearest === null ? '' : `; did you mean ${nearest}?`}`, { variable: name, nearest });
}
logging.info(
  config.connectors.length === 0
    ? 'connectors: none loaded (KOBO_CONNECTORS_FILE unset): live keys see no external rail'
    : `connectors loaded: ${config.connectors.map((c) => `${c.name} (${c.rails.join(', ')})`).join('; ')}`,
  { connectors: config.connectors.map((c) => ({ name: c.name, rails: c.rails })) },
);
// A bug that escapes (an inline shard's failed assertion or commit, which a worker would report as its
// error) stops the process as a failed shard does: its memory is no longer trusted; a restart replays.
process.on('uncaughtException', (error) => {
  logging.error('fatal: uncaught exception', error);
  logging.flush();
  process.exit(70);
});

let cluster: ClusterConfig | null;
try {
  cluster = loadClusterConfig();
} catch (error) {
  process.stderr.write(`kobo: ${error instanceof ConfigError ? error.message : (error as Error).stack}\n`);
  process.exit(78); // EX_CONFIG
}
if (process.env.KOBO_CLUSTER_ROLE === 'shard-host') {
  // One shard of a cluster node with per-shard ownership (cluster/shard-host.ts); its node stops it.
  let host: ReturnType<typeof runShardHost>;
  try {
    host = runShardHost(config, (message) => logging.lifecycle(message));
  } catch (error) {
    logging.flush();
    process.stderr.write(`kobo: cannot start: ${(error as Error).message}\n`);
    process.exit(1);
  }
  stop = (signal: string): void => {
    logging.lifecycle(`${signal}: stopping the shard host`);
    logging.flush();
    host.stop();
  };
  if (stopAsked !== null) stop(stopAsked);
} else if (cluster !== null) {
  // A cluster node: its supervisor serves the listeners and starts the server while it owns (cluster/node.ts).
  // Until it is up it has answered nothing and may wait on JetStream for a minute: a stop then ends the
  // process at once (what it wrote is recovered as after a kill -9), rather than once JetStream answers.
  stop = (signal: string): void => {
    logging.lifecycle(`${signal}: stopping the cluster node before it came up`);
    logging.flush();
    process.exit(0);
  };
  if (stopAsked !== null) stop(stopAsked);
  try {
    const node = await runClusterNode(config, cluster, (message) => logging.lifecycle(message));
    stop = (signal: string): void => {
      logging.lifecycle(`${signal}: stopping the cluster node`);
      void node.stop().then(() => {
        logging.flush();
        process.exit(0);
      });
    };
    if (stopAsked !== null) stop(stopAsked);
  } catch (error) {
    process.stderr.write(`kobo: cannot start the cluster node: ${(error as Error).message}\n`);
    logging.flush();
    process.exit(1);
  }
} else try {
  const app = await startApp(config, logging.info, logging);
  if (app.createdKey !== null) {
    // Printed once, to the terminal (stderr), never into the JSON log on stdout, which supervisors
    // collect and keep: only its hash is stored.
    logging.flush();
    process.stderr.write(`\n  sandbox secret key (shown once, store it now): ${app.createdKey}\n\n`);
  }
  logging.lifecycle(`listening on http://${config.host}:${app.port} (data ${config.dataDir}, ${app.shards} shard(s), ${app.shardMode === 'inline' ? 'inline on the main thread' : 'on worker threads'})`, { port: app.port, data_dir: config.dataDir, shards: app.shards, shard_mode: app.shardMode });
  let stopping = false;
  stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    const started = Date.now();
    logging.lifecycle(`${signal}: stopping (draining up to ${config.drainMs} ms, then snapshotting partitions)`);
    void app.stop().then(
      (cut) => {
        logging.lifecycle(`stopped in ${Date.now() - started} ms`, { requests_cut: cut });
        logging.flush();
        process.exit(0);
      },
      (error: unknown) => {
        logging.error('stop failed', error);
        logging.flush();
        process.exit(1);
      },
    );
  };
  if (stopAsked !== null) stop(stopAsked);
} catch (error) {
  const message = (error as Error).message;
  logging.flush();
  // Operator mistakes (port taken, data dir in use, bad key) are one line; anything else keeps its stack.
  process.stderr.write(`kobo: cannot start: ${message}\n`);
  logging.logger.debug({ err: error }, 'start-up failure');
  logging.flush();
  process.exit(1);
}
