// Shard worker thread entry: runs one shard's runtime (shard-runtime.ts) behind the thread's parent port.
// Runs on its own worker thread; the process exits the thread once the runtime has closed its file.
import { parentPort, workerData } from 'node:worker_threads';
import { runShard, type ShardInbound } from './shard-runtime.ts';

export type { ShardWorkerData } from './shard-runtime.ts';

const port = parentPort!;
runShard(workerData as import('./shard-runtime.ts').ShardWorkerData, {
  post: (message) => port.postMessage(message),
  onMessage: (handler) => port.on('message', (message: ShardInbound) => handler(message)),
  exit: () => process.exit(0),
});
