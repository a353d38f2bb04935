/**
 * A fix for kafkajs 2.2.4's idle timer loop (https://github.com/tulios/kafkajs/issues/1751;
 * the pull requests fixing it were never merged and kafkajs is unmaintained).
 *
 * Its RequestQueue.scheduleCheckPendingRequests() computes `throttledUntil - Date.now()` with
 * `throttledUntil = -1` (never throttled) and passes that negative delay to setTimeout even when nothing is
 * pending. Node clamps it to 1 ms (printing TimeoutNegativeWarning on Node >= 23), the timer calls
 * checkPendingRequests(), which schedules again: every idle broker connection wakes the process every
 * millisecond (measured: ~4% of a core for one idle producer). A long-running connector is idle most of the time.
 *
 * The fix skips scheduling when there is nothing to check later: no pending request and no client-side throttle.
 * Nothing is lost by it: enqueueing a request pushes it to `pending` before calling this method (so it still
 * schedules), a throttle still schedules, and a response arriving calls checkPendingRequests() directly.
 *
 * Contract: `applyKafkajsIdleTimerFix()` is idempotent; `createKafka` calls it. If a kafkajs upgrade changes
 * the internals, it does nothing and says so (returns false) rather than break the client.
 */
import { createRequire } from 'node:module';

interface RequestQueueInternals {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests: (this: RequestQueueInternals) => void;
}

interface RequestQueueClass {
  prototype: RequestQueueInternals & { [PATCHED]?: true };
}

const PATCHED = Symbol.for('calls-connector.kafkajs-idle-timer-fix');

/** The kafkajs RequestQueue class (an internal module; kafkajs has no exports map, so the path resolves). */
export function kafkajsRequestQueue(): RequestQueueClass | null {
  try {
    const require = createRequire(import.meta.url);
    const loaded = require('kafkajs/src/network/requestQueue/index.js') as unknown;
    const prototype = (loaded as { prototype?: Partial<RequestQueueInternals> } | null)?.prototype;
    return typeof prototype?.scheduleCheckPendingRequests === 'function'
      ? (loaded as RequestQueueClass)
      : null;
  } catch {
    return null;
  }
}

/** Applies the fix; returns whether kafkajs is (now) patched. */
export function applyKafkajsIdleTimerFix(): boolean {
  const RequestQueue = kafkajsRequestQueue();
  if (RequestQueue === null) return false;
  const prototype = RequestQueue.prototype;
  if (prototype[PATCHED]) return true;
  const original = prototype.scheduleCheckPendingRequests;
  prototype.scheduleCheckPendingRequests = function (this: RequestQueueInternals): void {
    if (this.pending.length === 0 && this.throttledUntil <= Date.now()) return;
    original.call(this);
  };
  prototype[PATCHED] = true;
  return true;
}
