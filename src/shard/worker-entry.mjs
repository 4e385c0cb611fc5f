// Boots a shard worker thread: registers tsx's TypeScript loader in this thread, then loads the shard.
// Worker threads do not inherit the main thread's loader hooks on Node 20, hence this small file.
import { register } from 'tsx/esm/api';

register();
await import('./worker.ts');
