/**
 * Issue 21 against the sandbox over HTTPS (no Kafka): 429 is flow control that never uses up an attempt,
 * and an exhausted quota parks the limiter scope as throttled, then resumes by itself.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_FAULTS, startSandbox, type RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { sandboxClient, type SandboxClientHarness } from '../../support/sync/sandbox-harness.js';

describe('the API client under a rate limit of the sandbox', () => {
  let sandbox: RunningSandbox;
  let harness: SandboxClientHarness;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 47, locations: 1, callsPerLocation: 30 } });
    // One attempt only: any 429 that used one up would fail the request.
    harness = await sandboxClient(sandbox, {
      requestsPerSecond: 50,
      retry: { maxAttempts: 1, maxRetryAfterMs: 1_000 },
    });
  });
  afterEach(() => {
    sandbox.admin.setFaults(DEFAULT_FAULTS);
  });
  afterAll(async () => {
    await harness.close();
    await sandbox.close();
  });

  it('answers every single-call request under a hidden limit far below the configured rate, with one attempt each', async () => {
    sandbox.admin.setFaults({ rateLimit: { requestsPerSecond: 10, burst: 2, per: 'token' } });
    const location = sandbox.locations[0] ?? '';
    const uids = sandbox.admin
      .truth(location)
      .slice(0, 12)
      .map((c) => c.uid);
    const answers = await Promise.all(uids.map((uid) => harness.client.getCall(uid)));
    expect(answers.every((a) => a !== null)).toBe(true);
    expect(sandbox.admin.stats().faults.rateLimited).toBeGreaterThan(0);
    // The scope learned to go slower than the configured 50/s.
    expect(harness.transport.limiters.status()[0]?.ratePerSecond).toBeLessThan(50);
  });

  it('parks the scope as throttled while a quota is spent (Retry-After beyond maxRetryAfterMs), then resumes by itself', async () => {
    sandbox.admin.setFaults({
      rateLimit: { requestsPerSecond: 100, burst: 100, per: 'token', quota: 1, quotaWindowSeconds: 2 },
    });
    const location = sandbox.locations[0] ?? '';
    const [first, second] = sandbox.admin.truth(location).map((c) => c.uid);
    await harness.client.getCall(first ?? '');
    const pending = harness.client.getCall(second ?? '');
    // The second request is refused with Retry-After 2 s (> maxRetryAfterMs 1 s): the scope parks.
    let parked = false;
    for (let i = 0; i < 200 && !parked; i++) {
      parked = harness.transport.limiters.status().some((s) => s.throttled);
      if (!parked) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(parked).toBe(true);
    await expect(pending).resolves.not.toBeNull();
    expect(harness.transport.limiters.status().some((s) => s.throttled)).toBe(false);
    expect(sandbox.admin.stats().faults.quotaExhausted).toBeGreaterThan(0);
  });
});
