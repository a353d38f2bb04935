/**
 * Waiting in tests: a promise settled by hand (`deferred`), and two ways to wait for a condition that has no
 * event to await. `settles` spins the event loop (no time passes: for code driven by a ManualClock or fakes,
 * where the condition is a few promise turns away); `eventually` polls on the real clock (for real servers,
 * brokers and processes).
 */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: Error) => void;
}

/** A promise and the functions that settle it. */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * Lets the event loop turn (setImmediate, no time passes) until `condition` holds, at most `turns` times;
 * a condition still false then fails the test, naming `what`.
 */
export async function settles(condition: () => boolean, what = 'condition', turns = 1_000): Promise<void> {
  for (let i = 0; i < turns && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  if (!condition()) throw new Error(`${what} did not hold after ${turns} turns of the event loop`);
}

/**
 * Lets the event loop turn `turns` times (setImmediate, no time passes): for asserting that something does NOT
 * happen after a ManualClock advance, where no event says "it is settled". Whatever the advance set going (a
 * timer's callback, its promise chain, a request on a kept-alive local connection) has had those turns.
 */
export async function idles(turns = 100): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Polls `check` until it returns true, failing after `timeoutMs`; for conditions with no event to await. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
