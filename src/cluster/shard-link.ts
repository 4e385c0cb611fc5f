// The link between a front (the pool of the node holding the front lease) and a shard served by a shard
// host process on its owner node: the messages the pool posts to a worker, framed (4-byte length, v8
// serialization) over TCP, opened with the cluster secret. Main thread of either process.
// Invariant: a link that fails is never resumed: its unanswered commands are failed by the pool (503).
import net from 'node:net';
import { EventEmitter } from 'node:events';
import { serialize, deserialize } from 'node:v8';
import { timingSafeEqual } from 'node:crypto';
import type { ShardInbound } from '../shard/shard-runtime.ts';
import type { ShardToMain } from '../shard/protocol.ts';

/** A frame larger than this ends the link (a command or a page is far smaller). */
const FRAME_BYTES_MAX = 256 * 1024 * 1024;
/** The first frame, before the peer has shown the secret: a hello is a few dozen bytes. */
export const HELLO_BYTES_MAX = 4 * 1024;
/** How often a link that is down looks for its shard's route again (and an open one checks it still holds). */
const RECONNECT_MS = 100;

/** The first frame on a link: which shard the front wants, and the cluster secret. */
export interface LinkHello {
  type: 'hello';
  shard: number;
  token: string;
  /** The front's epoch (its `owner` lease revision): a host keeps only the newest front's link. */
  epoch: number;
}

/** Where a shard is served now (a shard host's link listener), or null while it moves. */
export type ShardRoute = { host: string; port: number } | null;

/**
 * Reads frames off a socket; `each` gets every decoded message, `bad` the reason a frame was refused.
 * `firstBytesMax` bounds the first frame (a listener's peer is not authenticated before it). Nothing is
 * delivered once the socket is destroyed (a refused hello ends the link at once).
 */
export function readFrames(socket: net.Socket, each: (message: unknown) => void, bad: (why: string) => void, firstBytesMax = FRAME_BYTES_MAX): void {
  let buffered: Buffer = Buffer.alloc(0);
  let first = true;
  socket.on('data', (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    while (buffered.length >= 4 && !socket.destroyed) {
      const bytes = buffered.readUInt32BE(0);
      if (bytes > (first ? firstBytesMax : FRAME_BYTES_MAX)) {
        bad(`a frame of ${bytes} bytes`);
        return;
      }
      if (buffered.length < 4 + bytes) return;
      const frame = buffered.subarray(4, 4 + bytes);
      buffered = buffered.subarray(4 + bytes);
      let message: unknown;
      try {
        message = deserialize(frame);
      } catch (error) {
        bad(`an undecodable frame (${(error as Error).message})`);
        return;
      }
      first = false;
      each(message);
    }
  });
}

export function writeFrame(socket: net.Socket, message: unknown): void {
  const body = serialize(message);
  const head = Buffer.allocUnsafe(4);
  head.writeUInt32BE(body.length, 0);
  socket.write(Buffer.concat([head, body]));
}

/**
 * The hello a listener accepts as a link's first frame: for its shard, with the cluster secret, from a
 * front at least as new as the newest it has linked (null: anything else, which ends the link).
 */
export function acceptedHello(message: unknown, shard: number, secret: string, newestEpoch: number): LinkHello | null {
  if (typeof message !== 'object' || message === null) return null;
  const hello = message as Partial<LinkHello>;
  if (hello.type !== 'hello' || hello.shard !== shard || !secretMatches(hello.token, secret)) return null;
  if (typeof hello.epoch !== 'number' || !Number.isFinite(hello.epoch) || hello.epoch < newestEpoch) return null;
  return hello as LinkHello;
}

export function secretMatches(given: unknown, secret: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(secret);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * A shard on another process, as the pool sees a worker: `postMessage` sends, 'message' events
 * deliver. Emits 'up' once a link is open (the pool then asks for the shard's index again) and 'down'
 * when it fails (the pool fails what it sent); it then looks for the route again and reconnects.
 * `postMessage({type:'stop'})` closes it for good and emits 'exit' (a front never stops a remote shard).
 */
export class RemoteShard extends EventEmitter {
  private socket: net.Socket | null = null;
  private open = false;
  private closed = false;
  private retry: NodeJS.Timeout | null = null;
  /** The route the open link was made on, and the timer that drops the link once the route changes. */
  private linkedTo = '';
  private readonly watch: NodeJS.Timeout;

  constructor(
    readonly shard: number,
    private readonly routeOf: (shard: number) => ShardRoute,
    private readonly secret: string,
    private readonly epoch: number,
  ) {
    super();
    setImmediate(() => this.connect());
    // The shard moved (its lease lapsed, was lost or handed back): a host that is frozen or cut off
    // would keep the socket open and answer nothing, so the link follows the route, not the socket.
    this.watch = setInterval(() => {
      if (this.socket !== null && this.linkedTo !== JSON.stringify(this.routeOf(this.shard))) this.socket.destroy();
    }, RECONNECT_MS);
    this.watch.unref();
  }

  get up(): boolean {
    return this.open;
  }

  private connect(): void {
    this.retry = null;
    if (this.closed) return;
    const route = this.routeOf(this.shard);
    if (route === null) {
      this.later();
      return;
    }
    const socket = net.connect({ host: route.host, port: route.port });
    socket.setNoDelay(true);
    this.socket = socket;
    this.linkedTo = JSON.stringify(route);
    socket.once('connect', () => {
      writeFrame(socket, { type: 'hello', shard: this.shard, token: this.secret, epoch: this.epoch } satisfies LinkHello);
      this.open = true;
      this.emit('up');
    });
    readFrames(socket, (message) => this.emit('message', message as ShardToMain), () => socket.destroy());
    socket.once('error', () => {});
    socket.once('close', () => {
      if (this.socket === socket) this.socket = null;
      const wasOpen = this.open;
      this.open = false;
      if (wasOpen) this.emit('down');
      this.later();
    });
  }

  private later(): void {
    if (this.closed || this.retry !== null) return;
    this.retry = setTimeout(() => this.connect(), RECONNECT_MS);
  }

  postMessage(message: ShardInbound): void {
    if (message.type === 'stop') {
      this.closed = true;
      clearInterval(this.watch);
      if (this.retry !== null) clearTimeout(this.retry);
      this.socket?.destroy();
      setImmediate(() => this.emit('exit', 0));
      return;
    }
    if (!this.open || this.socket === null) throw new Error(`shard ${this.shard} is not reachable (it is moving)`);
    writeFrame(this.socket, message);
  }
}
