import type { Redis } from 'ioredis';

/** How the fake answers: as a healthy server, a frozen one (command timeout), a closed connection, or refusing writes. */
export type FakeRedisMode = 'up' | 'timeout' | 'closed' | 'refusing';

/**
 * The part of an ioredis client the owner marks use (the lookup script by EVALSHA: HMGET of
 * two generations' hashes; a pipeline of HSET, PEXPIREAT, UNLINK or HMGET), over Maps of
 * hashes, failing the way ioredis fails: a command timeout, a closed connection with the
 * offline queue off, or a ReplyError (OOM on writes, per command in a pipeline; NOPERM for
 * scripts when `state.scripts` is false). Counts the calls that reached it.
 */
export function fakeRedis(initial: FakeRedisMode = 'up') {
  const hashes = new Map<string, Map<string, string>>();
  const state = { mode: initial, calls: 0, scripts: true };
  const failure = (): Error | undefined => {
    if (state.mode === 'timeout') return new Error('Command timed out');
    if (state.mode === 'closed')
      return new Error("Stream isn't writeable and enableOfflineQueue options is false");
    return undefined;
  };
  const oom = () => Object.assign(new Error('OOM command not allowed'), { name: 'ReplyError' });
  const hmget = (key: string, fields: string[]) => fields.map((f) => hashes.get(key)?.get(f) ?? null);

  type Queued = { write: boolean; run: () => unknown };
  const client = {
    /** The lookup script: KEYS are this generation's hash and the previous one's, ARGV the ids. */
    evalsha: async (_sha: string, keyCount: number, ...args: string[]) => {
      state.calls++;
      if (!state.scripts) {
        throw Object.assign(new Error("NOPERM User rx has no permissions to run the 'evalsha' command"), {
          name: 'ReplyError',
        });
      }
      const err = failure();
      if (err) throw err;
      const [now, before] = args.slice(0, keyCount) as [string, string];
      const ids = args.slice(keyCount);
      const a = hmget(now, ids);
      const b = hmget(before, ids);
      return a.map((v, i) => v ?? b[i]);
    },
    pipeline: () => {
      const queued: Queued[] = [];
      const p = {
        hset: (key: string, ...fieldsAndValues: string[]) => {
          queued.push({
            write: true,
            run: () => {
              const h = hashes.get(key) ?? new Map<string, string>();
              for (let i = 0; i < fieldsAndValues.length; i += 2)
                h.set(fieldsAndValues[i]!, fieldsAndValues[i + 1]!);
              hashes.set(key, h);
              return fieldsAndValues.length / 2;
            },
          });
          return p;
        },
        pexpireat: (_key: string, _at: number) => {
          queued.push({ write: true, run: () => 1 });
          return p;
        },
        unlink: (key: string) => {
          queued.push({ write: true, run: () => (hashes.delete(key) ? 1 : 0) });
          return p;
        },
        hmget: (key: string, ...fields: string[]) => {
          queued.push({ write: false, run: () => hmget(key, fields) });
          return p;
        },
        exec: async () => {
          state.calls++;
          // As ioredis: a command timeout comes back per command, exec() itself resolves.
          if (state.mode === 'timeout') return queued.map(() => [new Error('Command timed out'), null]);
          const err = failure();
          if (err) throw err;
          return queued.map((q) => (q.write && state.mode === 'refusing' ? [oom(), null] : [null, q.run()]));
        },
      };
      return p;
    },
  };
  return { redis: client as unknown as Redis, hashes, state };
}
