/**
 * Issue 21 against the sandbox over HTTPS (no Kafka): 429 is flow control that never uses up an attempt,
 * and an exhausted quota parks the limiter scope as throttled, then resumes by itself. Issue 32: however
 * the API writes its waits, no hold lasts longer than api.retry.maxRetryAfterMs.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_FAULTS,
  startSandbox,
  type FaultSettings,
  type RunningSandbox,
} from '../../../packages/sandbox/src/index.js';
import { CallsApiClient } from '../../../src/api/calls-api-client.js';
import { HttpTransport } from '../../../src/api/http-transport.js';
import { apiSchema } from '../../../src/config/schema.js';
import { testMetrics } from '../../support/metrics.js';
import { eventually, idles, settles } from '../../support/async.js';
import { ManualClock } from '../../support/clock.js';
import { capturingLogger } from '../../support/logger.js';
import {
  sandboxClient,
  SandboxTokens,
  type SandboxClientHarness,
} from '../../support/sync/sandbox-harness.js';

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

/**
 * Issue 32, item 3: every hold is bounded. The sandbox announces the reset in each form APIs use, and the
 * client's transport runs on a ManualClock set to the sandbox clock, so a hold is read (heldUntilMs) and
 * ended (advance) without waiting for it.
 */
describe('the API client against the header forms of a rate limit', () => {
  const MAX_RETRY_AFTER_MS = 60_000;
  let sandbox: RunningSandbox;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 48, locations: 1, callsPerLocation: 10 } });
  });
  afterAll(async () => {
    await sandbox.close();
  });

  async function manualClockClient() {
    const clock = new ManualClock(sandbox.admin.now().getTime());
    const log = capturingLogger();
    const api = apiSchema.parse({
      baseUrl: sandbox.baseUrl,
      caFile: sandbox.caFile ?? undefined,
      requestsPerSecond: 1000,
      retry: { maxAttempts: 1, maxRetryAfterMs: MAX_RETRY_AFTER_MS },
    });
    const metrics = testMetrics();
    const transport = await HttpTransport.fromConfig(api, metrics, clock, log.logger);
    const client = new CallsApiClient({
      http: transport,
      tokens: new SandboxTokens(sandbox),
      settings: api,
      metrics,
      clock,
    });
    const scope = () => transport.limiters.status()[0];
    return { clock, log, transport, client, scope };
  }

  /** A quota per token, with a bucket that never runs dry, its waits written as asked. */
  function announceQuota(
    limit: Partial<NonNullable<FaultSettings['rateLimit']>>,
    retryAfterForm: FaultSettings['retryAfterForm'] = 'delay-seconds',
  ): void {
    sandbox.admin.setFaults({
      rateLimit: { requestsPerSecond: 100, burst: 100, per: 'token', ...limit },
      retryAfterForm,
    });
  }

  const uids = () =>
    sandbox.admin.truth(sandbox.locations[0] ?? '').map((call) => call.uid) as [string, string, ...string[]];

  it.each(['epoch-ms', 'epoch-seconds', 'delta-seconds'] as const)(
    'holds a quota spent for an hour, announced in X-RateLimit-Reset as %s, for maxRetryAfterMs only, parked, then tries again',
    async (resetForm) => {
      announceQuota({ quota: 1, quotaWindowSeconds: 3600, headers: 'x-ratelimit', resetForm });
      const { clock, log, transport, client, scope } = await manualClockClient();
      try {
        const [first, second] = uids();
        await expect(client.getCall(first)).resolves.not.toBeNull();
        // The old reading held this scope until +058873-09-10 for epoch-ms; now the hold is capped.
        expect(scope()).toMatchObject({ heldUntilMs: clock.now() + MAX_RETRY_AFTER_MS, throttled: true });
        expect(log.lines()).toMatchObject([
          {
            level: 30,
            header: 'x-ratelimit-reset',
            form: resetForm,
            askedSeconds: expect.closeTo(3600, -1) as number,
          },
        ]);

        // The next request waits out the capped hold, is sent, refused (the quota is still spent: Retry-After
        // about an hour) and parked again, bounded again: no stall, no failure.
        const stop = new AbortController();
        const pending = client.getCall(second, stop.signal);
        await settles(() => scope()?.waiting.live === 1, 'the request waits in its scope');
        const refusedBefore = sandbox.admin.stats().faults.quotaExhausted;
        clock.advance(MAX_RETRY_AFTER_MS);
        await eventually(
          () =>
            sandbox.admin.stats().faults.quotaExhausted === refusedBefore + 1 && scope()?.waiting.live === 1,
          10_000,
          'the request tried again and waits again',
        );
        expect(scope()).toMatchObject({ heldUntilMs: clock.now() + MAX_RETRY_AFTER_MS, throttled: true });
        stop.abort(new Error('test over'));
        await expect(pending).rejects.toThrow('test over');
      } finally {
        await transport.close();
      }
    },
  );

  it('honours a plausible reset in epoch milliseconds shorter than maxRetryAfterMs, to the millisecond', async () => {
    announceQuota({ quota: 1, quotaWindowSeconds: 30, headers: 'x-ratelimit', resetForm: 'epoch-ms' });
    const { clock, log, transport, client, scope } = await manualClockClient();
    try {
      const [first, second] = uids();
      const before = sandbox.admin.now().getTime();
      await expect(client.getCall(first)).resolves.not.toBeNull();
      const after = sandbox.admin.now().getTime();
      // The reset is the quota window's end on the sandbox clock: the window began with this request.
      const heldUntilMs = scope()?.heldUntilMs ?? 0;
      expect(heldUntilMs).toBeGreaterThanOrEqual(before + 30_000);
      expect(heldUntilMs).toBeLessThanOrEqual(after + 30_000);
      expect(scope()?.throttled).toBe(false);

      const pending = client.getCall(second);
      await settles(() => scope()?.waiting.live === 1, 'the request waits in its scope');
      const gets = sandbox.admin.stats().getRequests;
      // One millisecond before the reset the request still waits: it has not left the limiter, the hold stands,
      // and the sandbox saw nothing, however many turns the event loop takes.
      clock.advance(heldUntilMs - 1 - clock.now());
      await idles();
      expect(scope()).toMatchObject({ heldUntilMs, waiting: { live: 1 } });
      expect(sandbox.admin.stats().getRequests).toBe(gets);
      // The window ends on both clocks: the request goes at the reset itself, and is answered.
      sandbox.admin.advanceClock(30_000);
      clock.advance(1);
      await settles(() => scope()?.waiting.live === 0, 'the request leaves its scope at the reset');
      await expect(pending).resolves.not.toBeNull();
      expect(log.lines()).toEqual([]);
    } finally {
      await transport.close();
    }
  });

  it('reads a reset written on an API clock two hours ahead of ours against its Date: it holds for the 30 s it means', async () => {
    announceQuota({ quota: 1, quotaWindowSeconds: 30, headers: 'x-ratelimit', resetForm: 'epoch-seconds' });
    const { clock, log, transport, client, scope } = await manualClockClient();
    try {
      // The API’s clock (its Date header and its resets alike) runs two hours ahead of ours (its tokens last 10 h).
      sandbox.admin.advanceClock(2 * 3600_000);
      const [first] = uids();
      await expect(client.getCall(first)).resolves.not.toBeNull();
      // Read on our clock the reset asked for two hours, and the scope was parked at maxRetryAfterMs.
      const heldUntilMs = scope()?.heldUntilMs ?? 0;
      expect(heldUntilMs).toBeGreaterThanOrEqual(clock.now() + 29_000);
      expect(heldUntilMs).toBeLessThanOrEqual(clock.now() + 31_000);
      expect(scope()?.throttled).toBe(false);
      expect(log.lines()).toEqual([]);
    } finally {
      await transport.close();
    }
  });

  it('holds a refusal whose Retry-After is an HTTP-date an hour ahead for maxRetryAfterMs only', async () => {
    announceQuota({ quota: 1, quotaWindowSeconds: 3600 }, 'http-date');
    const { clock, log, transport, client, scope } = await manualClockClient();
    try {
      const [first, second] = uids();
      await expect(client.getCall(first)).resolves.not.toBeNull();
      expect(scope()?.heldUntilMs).toBeNull();
      const stop = new AbortController();
      const pending = client.getCall(second, stop.signal);
      // It waits for the pace (1 ms at 1000/s) on the manual clock, then is refused.
      await settles(() => scope()?.waiting.live === 1, 'the request waits for its pace');
      clock.advance(1);
      await eventually(() => scope()?.throttled === true, 10_000, 'the scope parked');
      expect(scope()).toMatchObject({ heldUntilMs: clock.now() + MAX_RETRY_AFTER_MS, waiting: { live: 1 } });
      expect(log.lines()).toMatchObject([{ level: 30, header: 'retry-after', form: 'http-date' }]);
      stop.abort(new Error('test over'));
      await expect(pending).rejects.toThrow('test over');
    } finally {
      await transport.close();
    }
  });
});
