import { config } from 'rxjs';

/**
 * Runs `body` with RxJS's unhandled-error hook pointed at a list, and returns what reached
 * it: errors thrown inside observer callbacks, which RxJS reports on a timer instead of
 * delivering them to anybody. Waits one macrotask so that such reports arrive before the
 * hook is restored.
 */
export async function unhandledErrorsOf(body: () => void): Promise<unknown[]> {
  const seen: unknown[] = [];
  const before = config.onUnhandledError;
  config.onUnhandledError = (err) => seen.push(err);
  try {
    body();
    await new Promise((resolve) => setTimeout(resolve, 0));
  } finally {
    config.onUnhandledError = before;
  }
  return seen;
}
