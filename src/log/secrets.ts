import type { Config } from '../config/config.js';

/** A configured secret is at least this long; shorter strings would scrub ordinary words. */
const MIN_SECRET_LENGTH = 4;

const PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g;
// The same block inside a JSON string (line breaks written as \n).
const PRIVATE_KEY_JSON =
  /-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^"\\]|\\.)*?-----END [A-Z ]*PRIVATE KEY-----/g;

const urlPassword = (url: string): string[] => {
  try {
    const u = new URL(url);
    return u.password === '' ? [] : [u.password, decodeURIComponent(u.password)];
  } catch {
    return [];
  }
};

/**
 * Every secret the configuration holds, in the forms it may take on the wire or in an
 * error: as given, URL-encoded, decoded from an API key, as a Basic auth header.
 */
export function secretValues(config: Config): string[] {
  const out: string[] = [];
  if (config.kafka.sasl) out.push(config.kafka.sasl.password);
  const auth = config.elasticsearch.auth;
  if (auth && 'apiKey' in auth) {
    out.push(auth.apiKey);
    const decoded = Buffer.from(auth.apiKey, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0 && /^[\x20-\x7e]+$/.test(decoded)) out.push(decoded, decoded.slice(colon + 1));
    if (auth.apiKey.includes(':')) out.push(auth.apiKey.slice(auth.apiKey.indexOf(':') + 1));
  } else if (auth) {
    out.push(auth.password, Buffer.from(`${auth.username}:${auth.password}`).toString('base64'));
  }
  out.push(...urlPassword(config.redis.url), ...urlPassword(config.elasticsearch.node));
  const forms = out.flatMap((s) => [s, encodeURIComponent(s), JSON.stringify(s).slice(1, -1)]);
  return [...new Set(forms)].filter((s) => s.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
}

/** A function that replaces every known secret (and any PEM private key) in a text. */
export function secretScrubber(secrets: readonly string[]): (text: string) => string {
  return (text) => {
    let out = text
      .replace(PRIVATE_KEY, '[redacted private key]')
      .replace(PRIVATE_KEY_JSON, '[redacted private key]');
    for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  };
}
