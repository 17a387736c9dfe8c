import type { z } from 'zod';

/**
 * One setting: its type, whose `.describe()` text is what the setting means, and its default
 * as the environment would give it. The description is the only place a meaning is written:
 * docs/configuration.md and `rxingest worker --help` both read it from here.
 */
export type Setting = readonly [z.ZodType, string];

/** Settings as the code groups them, in the order the reference and `--help` show them. */
export interface SettingsGroup {
  readonly title: string;
  /** One or two sentences on what the group controls. */
  readonly about: string;
  readonly settings: Readonly<Record<string, Setting>>;
}
