/**
 * Polls `check` until it returns something other than undefined, and returns that; fails,
 * naming `what`, after `timeoutMs`. For state that background work reaches in its own time.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined> | T | undefined,
  what = 'a condition',
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
