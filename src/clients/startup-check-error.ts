/** The servers rxingest talks to, as messages name them. */
export type ServerName = 'Kafka' | 'Elasticsearch' | 'Redis';

/**
 * A start-up check found a server misconfigured (wrong password, untrusted certificate,
 * missing privilege). Its message is the one line a user sees: it names the server and
 * the cause, and carries no credentials.
 */
export class StartupCheckError extends Error {
  override name = 'StartupCheckError';
  constructor(
    readonly server: ServerName,
    message: string,
  ) {
    super(message.replace(/[\r\n\u2028\u2029]+/g, ' '));
  }
}
