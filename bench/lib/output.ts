/** Writes a run's results: latest.md (tables + linked plots), the SVGs, index.html (everything inline), latest.json. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { markdownTable, type Section, type Table, targetsTable, verdict } from './report.js';

export interface MachineInfo {
  readonly date: string;
  /** `git describe --always --dirty` of the code measured. */
  readonly commit: string;
  readonly cores: number;
  readonly cpuModel: string;
  readonly memoryGb: number;
  readonly node: string;
  readonly platform: string;
  readonly loadBefore: readonly number[];
  readonly loadAfter: readonly number[];
  readonly command: string;
  readonly durationS: number;
}

const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const machineLine = (m: MachineInfo) =>
  `${m.date} · commit ${m.commit} · ${m.cores} cores (${m.cpuModel}) · ${m.memoryGb} GB RAM · Node ${m.node} · ${m.platform} · ` +
  `load average ${m.loadBefore.map((x) => x.toFixed(2)).join('/')} before, ${m.loadAfter.map((x) => x.toFixed(2)).join('/')} after · ` +
  `\`${m.command}\` took ${Math.round(m.durationS)} s`;

export function markdown(m: MachineInfo, sections: readonly Section[]): string {
  const targets = sections.flatMap((s) => s.targets);
  const out: string[] = [
    '# rxingest benchmarks: latest run',
    '',
    machineLine(m),
    '',
    'The machine is shared and noisy: compare the ratios measured side by side in this run, not absolute times across runs. ' +
      'Benchmarks measure and report; they never fail on a number. Plots: [index.html](index.html) has everything on one page.',
    '',
    '## Targets',
    '',
    markdownTable(targetsTable(targets)),
    '',
  ];
  const missed = targets.filter((t) => t.pass === false);
  out.push(
    missed.length === 0
      ? 'Every target that was measured is met.'
      : `**Missed (${missed.length}):** ${missed.map((t) => `${t.name} (${t.value}, wanted ${t.target})`).join('; ')}. See the notes of each section for where the time goes.`,
    '',
  );
  for (const s of sections) {
    out.push(`## ${s.title}`, '');
    for (const t of s.tables) out.push(markdownTable(t), '');
    if (s.targets.length > 0) {
      out.push(
        s.targets
          .map((t) => `- **${verdict(t.pass)}** ${t.name}: ${t.value} (wanted ${t.target})`)
          .join('\n'),
        '',
      );
    }
    for (const n of s.notes) out.push(n, '');
    for (const p of s.plots) out.push(`![${p.title}](${p.file})`, '');
  }
  return out.join('\n');
}

function htmlTable(t: Table): string {
  const head = `<tr>${t.head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>`;
  const rows = t.rows
    .map(
      (r) =>
        `<tr>${r
          .map((c) => {
            const cls = c === 'PASS' ? ' class="pass"' : c === 'MISS' ? ' class="miss"' : '';
            return `<td${cls}>${esc(c)}</td>`;
          })
          .join('')}</tr>`,
    )
    .join('');
  return `${t.title ? `<h4>${esc(t.title)}</h4>` : ''}<table>${head}${rows}</table>`;
}

export function html(m: MachineInfo, sections: readonly Section[]): string {
  const targets = sections.flatMap((s) => s.targets);
  const body = sections
    .map(
      (s) =>
        `<section><h2>${esc(s.title)}</h2>` +
        s.plots.map((p) => `<figure>${p.svg}<figcaption>${esc(p.title)}</figcaption></figure>`).join('') +
        s.tables.map(htmlTable).join('') +
        s.notes.map((n) => `<p>${esc(n).replace(/`([^`]+)`/g, '<code>$1</code>')}</p>`).join('') +
        '</section>',
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>rxingest benchmarks</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f3f4f6}.pass{color:#15803d;font-weight:600}.miss{color:#b91c1c;font-weight:600}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:12px;color:#555}section{margin-top:2em}p{font-size:14px;line-height:1.45}
svg{max-width:100%;height:auto;border:1px solid #eee}
</style></head><body>
<h1>rxingest benchmarks: latest run</h1>
<p>${esc(machineLine(m).replaceAll('`', ''))}</p>
<p>The machine is shared and noisy: compare the ratios measured side by side in this run, not absolute times across runs.</p>
<h2>Targets</h2>${htmlTable(targetsTable(targets))}
${body}
</body></html>
`;
}

export async function writeResults(
  dir: string,
  m: MachineInfo,
  sections: readonly Section[],
): Promise<string[]> {
  const files: string[] = [];
  for (const s of sections) {
    for (const p of s.plots) {
      await writeFile(join(dir, p.file), p.svg);
      files.push(p.file);
    }
  }
  await writeFile(join(dir, 'latest.md'), markdown(m, sections));
  await writeFile(join(dir, 'index.html'), html(m, sections));
  await writeFile(
    join(dir, 'latest.json'),
    JSON.stringify(
      {
        machine: m,
        sections: sections.map((s) => ({ id: s.id, targets: s.targets, tables: s.tables, data: s.data })),
      },
      null,
      1,
    ),
  );
  return ['latest.md', 'index.html', 'latest.json', ...files];
}
