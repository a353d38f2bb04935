import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  applyKafkajsIdleTimerFix,
  kafkajsRequestQueue,
} from '../../../../src/kafka/client/kafkajs-idle-timer-fix.js';

const require = createRequire(import.meta.url);

/** A real kafkajs RequestQueue, as a broker connection builds it. */
function requestQueue(): {
  pending: unknown[];
  throttledUntil: number;
  scheduleCheckPendingRequests(): void;
} {
  const RequestQueue = kafkajsRequestQueue();
  if (RequestQueue === null) throw new Error('kafkajs RequestQueue not found');
  const Ctor = RequestQueue as unknown as new (
    options: Record<string, unknown>,
  ) => ReturnType<typeof requestQueue>;
  const { createLogger, LEVELS } = require('kafkajs/src/loggers/index.js') as {
    createLogger: (o: { level: number; logCreator: () => () => void }) => unknown;
    LEVELS: { NOTHING: number };
  };
  const logger = createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined });
  return new Ctor({ maxInFlightRequests: 1, requestTimeout: 1000, clientId: 't', broker: 'b:1', logger });
}

describe('the kafkajs idle timer fix', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stops an idle request queue from re-arming a 1 ms timer', () => {
    expect(applyKafkajsIdleTimerFix()).toBe(true);
    vi.useFakeTimers();
    const queue = requestQueue();
    queue.scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('still schedules a check while requests are pending or the queue is throttled', () => {
    applyKafkajsIdleTimerFix();
    vi.useFakeTimers();
    const pending = requestQueue();
    pending.pending.push({});
    pending.scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(1);
    vi.clearAllTimers();

    const throttled = requestQueue();
    throttled.throttledUntil = Date.now() + 5_000;
    throttled.scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(1);
  });

  it('is idempotent', () => {
    expect(applyKafkajsIdleTimerFix()).toBe(true);
    expect(applyKafkajsIdleTimerFix()).toBe(true);
    vi.useFakeTimers();
    requestQueue().scheduleCheckPendingRequests();
    expect(vi.getTimerCount()).toBe(0);
  });
});
