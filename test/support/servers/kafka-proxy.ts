import { Transform } from 'node:stream';
import { type ConnectionTap, TcpProxy } from './tcp-proxy.js';

const METADATA = 3;

/**
 * A TcpProxy in front of one real Kafka broker that clients reach only through it: a plain
 * TCP proxy is not enough, because a broker tells its clients where to connect (its
 * advertised listener) in every Metadata answer, and they then go there directly. This one
 * rewrites the broker addresses in Metadata answers to its own port, so that shutting it
 * really cuts the clients off from Kafka (and opening it again lets them back) without
 * touching the shared broker. Single-broker targets only (the local stack).
 */
export class KafkaProxy {
  private readonly proxy: TcpProxy;

  private constructor(host: string, port: number) {
    this.proxy = new TcpProxy(host, port, () => this.tap());
  }

  /** `brokers`: host:port of the one broker (e.g. stackEnv.kafkaBrokers). */
  static async to(brokers: string): Promise<KafkaProxy> {
    const [first, ...more] = brokers.split(',');
    if (more.length > 0) throw new Error(`KafkaProxy fronts one broker, not ${brokers}`);
    const at = first!.lastIndexOf(':');
    const proxy = new KafkaProxy(first!.slice(0, at), Number(first!.slice(at + 1)));
    await proxy.open();
    return proxy;
  }

  /** What a client puts in its broker list (KAFKA_BROKERS). */
  get brokers(): string {
    return `127.0.0.1:${this.proxy.port}`;
  }

  open(): Promise<void> {
    return this.proxy.open();
  }

  /** Refuses new connections and cuts the open ones: Kafka is unreachable. Returns the sockets cut. */
  shut(): Promise<number> {
    return this.proxy.shut();
  }

  /** Per connection: which request each correlation id was, so that its answer can be read. */
  private tap(): ConnectionTap {
    const asked = new Map<number, { apiKey: number; apiVersion: number }>();
    const requests = new Frames();
    const answers = new Frames();
    return {
      fromClient: (chunk) => {
        for (const f of requests.push(chunk))
          asked.set(f.readInt32BE(4), { apiKey: f.readInt16BE(0), apiVersion: f.readInt16BE(2) });
      },
      toClient: new Transform({
        transform: (chunk: Buffer, _encoding, done) => {
          try {
            const out: Buffer[] = [];
            for (const f of answers.push(chunk)) {
              const correlationId = f.readInt32BE(0);
              const request = asked.get(correlationId);
              asked.delete(correlationId);
              const body = request?.apiKey === METADATA ? this.pointBrokersHere(f, request.apiVersion) : f;
              const size = Buffer.alloc(4);
              size.writeInt32BE(body.length);
              out.push(size, body);
            }
            done(null, Buffer.concat(out));
          } catch (err) {
            done(err as Error);
          }
        },
      }),
    };
  }

  /**
   * A Metadata answer (versions 0–8: kafkajs asks for at most 6) with every broker's host
   * and port replaced by this proxy's. Layout: correlation id, throttle time (v3+), then the
   * brokers: node id, host, port, rack (v1+); the rest is copied as it is.
   */
  private pointBrokersHere(frame: Buffer, version: number): Buffer {
    if (version > 8) throw new Error(`KafkaProxy: Metadata v${version} (flexible) is not supported`);
    let at = 4 + (version >= 3 ? 4 : 0);
    const count = frame.readInt32BE(at);
    at += 4;
    const host = Buffer.from('127.0.0.1');
    const parts: Buffer[] = [frame.subarray(0, at)];
    for (let i = 0; i < count; i++) {
      const nodeId = frame.readInt32BE(at);
      at += 4;
      at += 2 + frame.readInt16BE(at); // host
      at += 4; // port
      const rackStart = at;
      if (version >= 1) at += 2 + Math.max(0, frame.readInt16BE(at));
      const entry = Buffer.alloc(4 + 2 + host.length + 4);
      entry.writeInt32BE(nodeId, 0);
      entry.writeInt16BE(host.length, 4);
      host.copy(entry, 6);
      entry.writeInt32BE(this.proxy.port, 6 + host.length);
      parts.push(entry, frame.subarray(rackStart, at));
    }
    if (count > 1) throw new Error(`KafkaProxy fronts one broker; Metadata names ${count}`);
    parts.push(frame.subarray(at));
    return Buffer.concat(parts);
  }
}

/** Kafka's framing: a 4-byte size, then that many bytes. Returns the frames completed by `chunk`. */
class Frames {
  private pending: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Buffer[] = [];
    while (this.pending.length >= 4) {
      const size = this.pending.readInt32BE(0);
      if (this.pending.length < 4 + size) break;
      frames.push(this.pending.subarray(4, 4 + size));
      this.pending = this.pending.subarray(4 + size);
    }
    return frames;
  }
}
