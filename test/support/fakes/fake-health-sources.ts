import { EventEmitter } from 'node:events';
import { errors } from '@elastic/elasticsearch';

/** A kafkajs consumer as far as the health feed sees it: instrumentation events and their removers. */
export class FakeConsumerEvents {
  readonly events = {
    GROUP_JOIN: 'consumer.group_join',
    REQUEST: 'consumer.network.request',
    CRASH: 'consumer.crash',
    STOP: 'consumer.stop',
    DISCONNECT: 'consumer.disconnect',
  } as const;
  private readonly emitter = new EventEmitter();

  on(event: string, listener: (e: { payload: unknown }) => void): () => void {
    this.emitter.on(event, listener);
    return () => this.emitter.off(event, listener);
  }

  emit(event: keyof FakeConsumerEvents['events'], payload: unknown = {}): void {
    this.emitter.emit(this.events[event], { payload });
  }

  listenerCount(): number {
    return Object.values(this.events).reduce((a, e) => a + this.emitter.listenerCount(e), 0);
  }
}

/** An Elasticsearch client whose ping answers as told: 'up', 'down' (connection refused) or an HTTP status. */
export class FakePing {
  answer: 'up' | 'down' | number = 'up';
  pings = 0;

  async ping(): Promise<boolean> {
    this.pings++;
    if (this.answer === 'up') return true;
    if (this.answer === 'down') throw new errors.ConnectionError('connect ECONNREFUSED 127.0.0.1:1');
    throw new errors.ResponseError({
      body: {},
      statusCode: this.answer,
      headers: {},
      warnings: null,
      meta: {} as never,
    });
  }
}

/** An ioredis client's connection events and status. */
