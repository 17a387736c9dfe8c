/**
 * A URL fit for a message: user name and password replaced by `***`. What does not parse
 * as a URL is cut at its last "@" (it may still hold credentials), so nothing leaks.
 */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.username === '' && u.password === '') return url;
    u.username = u.username === '' ? '' : '***';
    u.password = u.password === '' ? '' : '***';
    return u.toString().replace(/\/$/, url.endsWith('/') ? '/' : '');
  } catch {
    const at = url.lastIndexOf('@');
    if (at < 0) return url;
    const scheme = url.match(/^[a-z][a-z0-9+.-]*:\/\//i)?.[0] ?? '';
    return `${scheme}***@${url.slice(at + 1)}`;
  }
}
