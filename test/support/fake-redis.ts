import type { Redis } from 'ioredis';

/** How the fake answers: as a healthy server, a frozen one (command timeout), a closed connection, or refusing writes. */
export type FakeRedisMode = 'up' | 'timeout' | 'closed' | 'refusing';

/**
 * The part of an ioredis client the owner marks use (MGET, the marking script by EVALSHA, a
 * pipeline of SET … PX), over a Map, failing the way ioredis fails: a command timeout, a
 * closed connection with the offline queue off, or a ReplyError (OOM; per command in a
 * pipeline; NOPERM for scripts when `state.scripts` is false). Counts the calls that reached it.
 */
export function fakeRedis(initial: FakeRedisMode = 'up') {
  const data = new Map<string, string>();
  const state = { mode: initial, calls: 0, scripts: true };
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
    /** The marking script: KEYS, then their values, then the TTL. */
    evalsha: async (_sha: string, keyCount: number, ...args: (string | number)[]) => {
      state.calls++;
      if (!state.scripts) {
        throw Object.assign(new Error("NOPERM User rx has no permissions to run the 'evalsha' command"), {
          name: 'ReplyError',
        });
      }
      const err = failure();
      if (err) throw err;
      if (state.mode === 'refusing')
        throw Object.assign(new Error('OOM command not allowed'), { name: 'ReplyError' });
      for (let i = 0; i < keyCount; i++) data.set(String(args[i]), String(args[keyCount + i]));
      return keyCount;
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
