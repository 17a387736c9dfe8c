import type { z } from 'zod';
import { settingsGroups } from './config.js';
import { FILE_VARIABLES, securityVariables } from './security.js';

/**
 * The configuration reference, read from the schema itself: docs/configuration.md
 * (scripts/docs/config-doc.ts) and `rxingest worker --help` are both made from it.
 */

export interface SettingReference {
  readonly name: string;
  readonly default: string;
  /** What a value must look like: the words a bad value's error line uses. */
  readonly accepts: string;
  readonly meaning: string;
}

export interface GroupReference {
  readonly title: string;
  readonly about: string;
  readonly settings: readonly SettingReference[];
}

// Values that, between them, every type that refuses anything refuses at least one of (empty,
// a control character, separators and wildcards), so each names what it expects in the words
// its error line would use.
const PROBES = ['', ' \u0000 ', 'a,b *'];

function accepts(type: z.ZodType): string {
  const said = new Set<string>();
  for (const probe of PROBES) {
    const parsed = type.safeParse(probe);
    const message = parsed.success ? undefined : parsed.error.issues[0]?.message;
    if (message) said.add(message);
  }
  return said.size === 0 ? 'any text' : [...said].join('; ');
}

export function settingsReference(): GroupReference[] {
  return settingsGroups.map((group) => ({
    title: group.title,
    about: group.about,
    settings: Object.entries(group.settings).map(([name, [type, fallback]]) => {
      const meaning = type.description;
      if (!meaning) throw new Error(`${name} has no description: add .describe('…') to its type`);
      return { name, default: fallback, accepts: accepts(type), meaning };
    }),
  }));
}

/** Secured connections: off unless set, so no defaults; every secret may come from a `_FILE`. */
export const securityReference = {
  title: 'Secured connections',
  about:
    'Everything is off unless set; the worker, rxingest produce, the tools and the demo read the same variables.',
  variables: securityVariables,
  fileVariables: FILE_VARIABLES.map((v) => `${v}_FILE`),
} as const;

/** The first sentence of a meaning, for one line of `--help`. */
export function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end < 0 ? text : text.slice(0, end + 1);
}
