/**
 * One rung of the graph benchmark, one side, in a process of its own:
 *
 *   node --expose-gc --import tsx bench/graph-child.ts <rx|loop> <rung 1-5> <records> <rounds> [identity|sync]
 *
 * One untimed run warms up the JIT, then each round times one run; the answer is one line of
 * JSON on stdout, `{"ns":[…]}` in ns per message. A process per rung and side because running
 * the loop, or other rungs, in the same isolate feeds V8's type feedback with their shapes and
 * slows the graph's shared functions by 5-15%, which a worker running only the graph never sees.
 */
import { loadConfig } from '../src/config/config.js';
import { buildRecords, LADDER_ENRICHERS, type LadderEnricher, runLoop, runRx } from './graph-ladder.js';

const USAGE = 'usage: graph-child.ts <rx|loop> <rung 1-5> <records> <rounds> [identity|sync]\n';
const [side, rungArg, countArg, roundsArg, enricherArg = 'identity'] = process.argv.slice(2);
const rung = Number(rungArg);
const count = Number(countArg);
const rounds = Number(roundsArg);
if (
  (side !== 'rx' && side !== 'loop') ||
  !(rung >= 1 && rung <= 5) ||
  !(count > 0) ||
  !(rounds > 0) ||
  !Object.hasOwn(LADDER_ENRICHERS, enricherArg)
) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const enrich = LADDER_ENRICHERS[enricherArg as LadderEnricher];

const settings = loadConfig({}).graph;
const records = buildRecords(count);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const once = async (): Promise<number> => {
  gc();
  const t = performance.now();
  if (side === 'rx') await runRx(rung, records, settings, enrich);
  else runLoop(rung, records, settings, enrich);
  return ((performance.now() - t) * 1e6) / count;
};

await once();
const ns: number[] = [];
for (let r = 0; r < rounds; r++) ns.push(await once());
process.stdout.write(`${JSON.stringify({ ns })}\n`);
