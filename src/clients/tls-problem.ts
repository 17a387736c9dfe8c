/** What went wrong in a TLS handshake, told from a client library's error, and what to set. */
export interface TlsProblem {
  readonly kind: 'untrusted' | 'refused' | 'not-tls';
  /** Short, for a message: "the server's certificate is not trusted (self-signed certificate in certificate chain)". */
  readonly text: string;
}

/** Node's codes for a server certificate that does not verify against the trusted CAs. */
const UNTRUSTED = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const UNTRUSTED_TEXT =
  /self[- ]signed certificate|unable to verify the first certificate|unable to get (local )?issuer certificate|certificate has expired|certificate is not yet valid|does not match certificate's altnames|certificate signature failure/i;

/** Errors inside an error: cause, kafkajs' originalError, AggregateError's errors. */
function* chain(err: unknown, depth = 0): Generator<{ code?: unknown; message?: unknown }> {
  if (err === null || typeof err !== 'object' || depth > 6) return;
  const e = err as { cause?: unknown; originalError?: unknown; errors?: unknown };
  yield err as { code?: unknown; message?: unknown };
  yield* chain(e.cause, depth + 1);
  yield* chain(e.originalError, depth + 1);
  if (Array.isArray(e.errors)) for (const x of e.errors) yield* chain(x, depth + 1);
}

/** The TLS problem behind `err`, or undefined when it is not one (refused, timed out, …). */
export function tlsProblem(err: unknown): TlsProblem | undefined {
  for (const e of chain(err)) {
    const code = typeof e.code === 'string' ? e.code : '';
    const message = typeof e.message === 'string' ? e.message : '';
    const detail = message.replace(/^Connection error: /, '');
    if (UNTRUSTED.has(code) || UNTRUSTED_TEXT.test(message)) {
      return { kind: 'untrusted', text: `the server's certificate is not trusted (${detail || code})` };
    }
    if (
      /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|HANDSHAKE_FAILURE|CERTIFICATE_UNKNOWN)/.test(
        code,
      )
    ) {
      return {
        kind: 'refused',
        text: `the server refused the TLS handshake (${code.replace(/^ERR_SSL_/, '').toLowerCase()})`,
      };
    }
    if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number/i.test(message)) {
      return { kind: 'not-tls', text: 'the port does not speak TLS (wrong version number)' };
    }
  }
  return undefined;
}
