import type { Redis } from 'ioredis';

/** How the fake answers: as a healthy server, a frozen one (command timeout), a closed connection, or refusing writes. */
export type FakeRedisMode = 'up' | 'timeout' | 'closed' | 'refusing';

/**
 * The part of an ioredis client the owner marks use (MGET, a pipeline of SET … PX), over a
 * Map, failing the way ioredis fails: a command timeout, a closed connection with the
 * offline queue off, or a ReplyError per command (OOM). Counts the calls that reached it.
 */
export function fakeRedis(initial: FakeRedisMode = 'up') {
  const data = new Map<string, string>();
  const state = { mode: initial, calls: 0 };
  const failure = (): Error | undefined => {
    if (state.mode === 'timeout') return new Error('Command timed out');
    if (state.mode === 'closed')
      return new Error("Stream isn't writeable and enableOfflineQueue options is false");
    return undefined;
  };
  const client = {
    mget: async (keys: string[]) => {
      state.calls++;
      const err = failure();
      if (err) throw err;
      return keys.map((k) => data.get(k) ?? null);
    },
    pipeline: () => {
      const sets: [string, string][] = [];
      const p = {
        set: (k: string, v: string) => {
          sets.push([k, v]);
          return p;
        },
        exec: async () => {
          state.calls++;
          // As ioredis: a command timeout comes back per command, exec() itself resolves.
          if (state.mode === 'timeout') return sets.map(() => [new Error('Command timed out'), null]);
          const err = failure();
          if (err) throw err;
          if (state.mode === 'refusing') {
            const oom = Object.assign(new Error('OOM command not allowed'), { name: 'ReplyError' });
            return sets.map(() => [oom, null]);
          }
          for (const [k, v] of sets) data.set(k, v);
          return sets.map(() => [null, 'OK']);
        },
      };
      return p;
    },
  };
  return { redis: client as unknown as Redis, data, state };
}
