import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import GithubSlugger from 'github-slugger';
import { marked, type Token } from 'marked';

/**
 * Checks the project's documents: every relative link and anchor resolves (GitHub's heading
 * slugs), and every command they show exists: `npm run X` a script of package.json,
 * `rxingest X` / `node dist/cli/main.js X` a subcommand (and its options) of the commander
 * program. test/unit/docs/links-and-commands.test.ts runs it on the real documents.
 */

export interface DocProblem {
  readonly file: string;
  readonly problem: string;
}

/** The documents the checks cover, relative to the repository root. */
export function documentFiles(root: string): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`);
  return ['README.md', 'ARCHITECTURE.md', 'CHANGELOG.md', ...docs.sort()];
}

type Node = Token | { tokens?: Token[] };

/** Every token of a document, table cells and list items included, depth first. */
function* walk(nodes: readonly unknown[]): Generator<Token> {
  for (const node of nodes) {
    if (node === null || typeof node !== 'object') continue;
    const t = node as Token & Record<string, unknown>;
    if (typeof t.type === 'string') yield t;
    for (const key of ['tokens', 'items', 'header', 'rows'] as const) {
      const child = t[key];
      if (Array.isArray(child)) yield* walk(child.flat());
    }
  }
}

/** A heading's text as GitHub slugs it: the rendered characters, without markup. */
function plainText(nodes: readonly Node[]): string {
  let out = '';
  for (const node of nodes) {
    const t = node as Token & { tokens?: Token[]; text?: string };
    if (t.tokens && t.tokens.length > 0) out += plainText(t.tokens);
    else if (typeof t.text === 'string') out += t.text;
  }
  return out;
}

/** The anchors GitHub gives a document's headings, in order, duplicates numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  for (const token of walk(marked.lexer(markdown))) {
    if (token.type === 'heading') anchors.add(slugger.slug(plainText(token.tokens ?? [])));
  }
  return anchors;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

/** Relative links and images whose file, or whose anchor in a Markdown file, does not exist. */
export function linkProblems(root: string, file: string, markdown: string): DocProblem[] {
  const problems: DocProblem[] = [];
  const own = anchorsOf(markdown);
  for (const token of walk(marked.lexer(markdown))) {
    if (token.type !== 'link' && token.type !== 'image') continue;
    const href: string = token.href;
    if (EXTERNAL.test(href)) continue;
    const [path = '', anchor] = href.split('#', 2);
    const target = path === '' ? join(root, file) : resolve(root, dirname(file), decodeURI(path));
    const shown = path === '' ? file : relative(root, target);
    if (!existsSync(target)) {
      problems.push({ file, problem: `link to ${href}: ${shown} does not exist` });
      continue;
    }
    if (anchor === undefined) continue;
    if (!target.endsWith('.md') || statSync(target).isDirectory()) {
      problems.push({ file, problem: `link to ${href}: an anchor into a file that is not Markdown` });
      continue;
    }
    const anchors = path === '' ? own : anchorsOf(readFileSync(target, 'utf8'));
    if (!anchors.has(anchor))
      problems.push({ file, problem: `link to ${href}: no heading #${anchor} in ${shown}` });
  }
  return problems;
}

/**
 * The code a document shows: inline code and code blocks, except blocks marked `text`, which
 * show what a program printed rather than something to run.
 */
function codeOf(markdown: string): string[] {
  const code: string[] = [];
  for (const token of walk(marked.lexer(markdown))) {
    if (token.type === 'codespan') code.push(token.text);
    if (token.type === 'code' && (token as { lang?: string }).lang !== 'text') code.push(token.text);
  }
  return code;
}

// What a command line stops at: a comment, a pipe, a chain, a redirect, the end of the span.
const END = /(?:^|\s)(?:#|\||&&|;|>)/;

const NPM_RUN = /(?:^|[\s(])npm\s+run\s+(?:--silent\s+)?([\w:.-]+)/g;
const NPM_LIFECYCLE = /(?:^|[\s(])npm\s+(start|test)\b/g;
const RXINGEST =
  /(?:^|[\s($])(?:npx\s+)?(?:rxingest|node(?:\s+--[\w-]+(?:=\S+)?)*\s+dist\/cli\/main\.js)\s+([^\n]*)/g;

/** `npm run` scripts and `rxingest` subcommands or options a document shows that do not exist. */
export function commandProblems(
  file: string,
  markdown: string,
  scripts: Readonly<Record<string, string>>,
  program: Command,
): DocProblem[] {
  const problems: DocProblem[] = [];
  for (const code of codeOf(markdown)) {
    for (const m of code.matchAll(NPM_RUN)) {
      if (!(m[1]! in scripts))
        problems.push({ file, problem: `npm run ${m[1]}: no such script in package.json` });
    }
    for (const m of code.matchAll(NPM_LIFECYCLE)) {
      if (!(m[1]! in scripts))
        problems.push({ file, problem: `npm ${m[1]}: no such script in package.json` });
    }
    for (const m of code.matchAll(RXINGEST)) {
      const line = m[1]!.split(END)[0]!;
      const problem = commandLineProblem(program, line.split(/\s+/).filter(Boolean));
      if (problem) problems.push({ file, problem: `rxingest ${line.trim()}: ${problem}` });
    }
  }
  return problems;
}

/** What is wrong with the words after `rxingest`, undefined when the program defines them. */
function commandLineProblem(program: Command, words: readonly string[]): string | undefined {
  let command = program;
  let i = 0;
  // Descend while the next word can name a subcommand (an output line's "reconcile:" can too);
  // anything else (an argument, `.` after `docker build -t rxingest`) ends the command's path.
  while (i < words.length && command.commands.length > 0 && /^[a-z][\w-]*:?$/.test(words[i]!)) {
    const name = words[i]!.replace(/:$/, '');
    const sub = command.commands.find((c) => c.name() === name || c.aliases().includes(name));
    if (!sub) {
      const where = command === program ? 'rxingest' : command.name();
      return `no subcommand "${name}" of ${where} (it has ${command.commands.map((c) => c.name()).join(', ')})`;
    }
    command = sub;
    i++;
  }
  for (const [option] of words
    .slice(i)
    .join(' ')
    .matchAll(/(?<![\w-])--[a-z][\w-]*/g)) {
    if (option === '--help') continue;
    if (!command.options.some((o) => o.long === option)) return `${command.name()} has no option ${option}`;
  }
  return undefined;
}
