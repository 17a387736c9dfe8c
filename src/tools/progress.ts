import type { ReadProgress } from './topic-reader.js';

/** What long-running tools report while they work; the CLI draws it on a terminal. */
export interface Progress {
  phase(what: string): void;
  read(p: ReadProgress): void;
  count(n: number): void;
  done(): void;
}

/**
 * One line on a terminal (stderr), redrawn at most every 250 ms: the phase, records and
 * records per second, and how far through each partition (the slowest ones when there are many).
 */
export function terminalProgress(out: NodeJS.WriteStream = process.stderr): Progress | undefined {
  if (!out.isTTY) return undefined;
  let phase = '';
  let phaseStart = Date.now();
  let last = 0;
  const draw = (text: string, force = false) => {
    const now = Date.now();
    if (!force && now - last < 250) return;
    last = now;
    const width = Math.max(20, (out.columns ?? 100) - 1);
    out.write(`\r\x1b[K${text.slice(0, width)}`);
  };
  const rate = (n: number) => {
    const s = (Date.now() - phaseStart) / 1000;
    return s > 0 ? Math.round(n / s) : 0;
  };
  return {
    phase(what) {
      phase = what;
      phaseStart = Date.now();
      draw(`${phase} …`, true);
    },
    read(p) {
      const parts = [...p.partitions.entries()].map(([tp, s]) => {
        const span = s.to - s.from;
        const pct = span > 0n ? Number(((s.position - s.from) * 100n) / span) : 100;
        return { tp, pct: Math.min(100, Math.max(0, pct)) };
      });
      const shown = parts.length <= 8 ? parts : [...parts].sort((a, b) => a.pct - b.pct).slice(0, 6);
      const detail = shown.map((x) => `${x.tp.slice(x.tp.lastIndexOf('/') + 1)}:${x.pct}%`).join(' ');
      draw(
        `${phase}: ${p.records.toLocaleString('en-US')} records, ${rate(p.records).toLocaleString('en-US')}/s` +
          `  [${parts.length <= 8 ? '' : 'slowest '}${detail}]`,
      );
    },
    count(n) {
      draw(`${phase}: ${n.toLocaleString('en-US')} documents, ${rate(n).toLocaleString('en-US')}/s`);
    },
    done() {
      out.write('\r\x1b[K');
    },
  };
}
