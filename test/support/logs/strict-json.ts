import { evaluate, parse, type ValueNode } from '@humanwhocodes/momoa';

/**
 * Every key that appears more than once in one object, anywhere in the value, as a path
 * (`$.topic`, `$.err.meta.body`). JSON.parse cannot tell: it keeps the last one silently.
 */
function duplicates(node: ValueNode, path: string, out: string[]): string[] {
  if (node.type === 'Object') {
    const seen = new Set<string>();
    for (const m of node.members) {
      const key = m.name.type === 'String' ? m.name.value : m.name.name;
      if (seen.has(key)) out.push(`${path}.${key}`);
      seen.add(key);
      duplicates(m.value, `${path}.${key}`, out);
    }
  } else if (node.type === 'Array') {
    for (const [i, e] of node.elements.entries()) duplicates(e.value, `${path}[${i}]`, out);
  }
  return out;
}

/**
 * One line parsed as strict JSON (ECMA-404: no comments, no trailing commas) that must be an
 * object with unique keys at every depth; throws saying which rule the line breaks.
 */
export function parseStrictObject(line: string): Record<string, unknown> {
  const body = parse(line, { mode: 'json' }).body;
  if (body.type !== 'Object') throw new Error(`not a JSON object but ${body.type}: ${line.slice(0, 200)}`);
  const twice = duplicates(body, '$', []);
  if (twice.length > 0) throw new Error(`duplicate keys ${twice.join(', ')} in: ${line.slice(0, 400)}`);
  return evaluate(body) as Record<string, unknown>;
}
