/**
 * Issue 20 point 4: a poison call (its GET fails transiently on every try) no longer stalls its location.
 * After api.poisonCallPageAttempts page attempts it is published unenriched and redacted, counted as
 * `unavailable`; everything else of the location is published enriched. Real sandbox over HTTPS, no Kafka.
 */
import { describe, expect, it } from 'vitest';
import { counterValue } from '../../support/counters.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import {
  expectedCall,
  locationSync,
  traverseResiliently,
  sandboxSuite,
} from '../../support/sync/sandbox-harness.js';

describe('a poison call among many', () => {
  const suite = sandboxSuite(
    {
      data: { seed: 41, locations: 1, callsPerLocation: 60, privateRatio: 0.3 },
      faults: {
        seed: 4,
        // attempts 0: every GET of these calls answers 503, for ever.
        singleCallFailures: [
          {
            rate: 0.04,
            attempts: 0,
            answer: { status: 503, body: 'upstream down', contentType: 'text/plain' },
          },
        ],
      },
    },
    { pageSize: 20, retry: { maxAttempts: 2 } },
  );

  it('publishes everything else enriched, and the poison call unenriched and redacted, after a bounded number of page attempts', async () => {
    const location = suite.sandbox.locations[0] ?? '';
    const sink = new InMemorySink();
    const failures = await traverseResiliently(locationSync(suite.harness, location, sink), 20);

    const truth = suite.sandbox.admin.truth(location);
    const poisoned = new Set(sink.calls.filter((c) => !c.enriched).map((c) => c.uid));
    expect(poisoned.size).toBeGreaterThan(0);
    expect(poisoned.size).toBeLessThan(truth.length / 5);
    // Really poison: their GET still fails.
    for (const uid of poisoned)
      await expect(suite.harness.client.getCall(uid)).rejects.toMatchObject({ code: 'API_UNAVAILABLE' });
    // Each version once, in order; the others enriched as the truth says, the poison ones redacted.
    expect(sink.calls.map((c) => c.uid)).toEqual(truth.map((c) => c.uid));
    for (const [i, call] of sink.calls.entries()) {
      const truthCall = truth[i]!;
      if (!poisoned.has(call.uid)) expect(call).toEqual(expectedCall(truthCall));
      else
        expect(call).toMatchObject({
          enriched: false,
          isPrivate: null,
          customerPhoneNumber: null,
          customerPhoneNumberRedacted: truthCall.customerPhoneNumber !== null,
        });
    }
    // Bounded: the default 5 page attempts per poisoned page, fewer when two poison calls share one.
    expect(failures.length).toBeLessThanOrEqual(4 * poisoned.size);
    expect(
      await counterValue(suite.harness.metrics.recordsUnenriched, { location, reason: 'unavailable' }),
    ).toBe(poisoned.size);
  });
});
