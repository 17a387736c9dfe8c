const LINE_BREAK_ESCAPES: Record<string, string> = {
  '\r': '\\r',
  '\n': '\\n',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** Thrown for a bad setting; its message is the one line a user sees. */
export class ConfigError extends Error {
  override name = 'ConfigError';
  constructor(message: string) {
    // Parts of the message come from outside (JSON.parse quotes the rules file, zod
    // paths hold its keys) and may break the line: escape line terminators.
    super(message.replace(/[\r\n\u2028\u2029]/g, (c) => LINE_BREAK_ESCAPES[c] ?? ' '));
  }
}
