import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { DEFAULT_FAULTS } from '../../../packages/sandbox/src/index.js';
import { systemClock } from '../../../src/time/clock.js';
import { DEFAULT_STOPPED_RETRY } from '../../../src/sync/scheduler/health-rule.js';
import { Scheduler } from '../../../src/sync/scheduler/scheduler.js';
import { counterValue, eventually } from '../../support/kafka.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import {
  byUpdatedAtThenUid,
  expectedCall,
  locationSync,
  traverseResiliently,
  sandboxSuite,
} from '../../support/sync/sandbox-harness.js';
import { runTraversal } from '../../support/sync/run-traversal.js';

describe('sync engine against the sandbox: backfill, boundary, faults, privacy, live updates', () => {
  // Groups of 120 calls sharing one updatedAt, larger than the page of 50.
  const suite = sandboxSuite(
    {
      data: {
        locations: 3,
        callsPerLocation: 400,
        sameInstantGroups: { count: 2, size: 120 },
        privateRatio: 0.3,
      },
    },
    { pageSize: 50 },
  );
  afterEach(() => suite.sandbox.admin.setFaults(DEFAULT_FAULTS));

  it('backfills every location through the scheduler so that the published calls equal the truth, once each', async () => {
    const sink = new InMemorySink();
    const syncs = suite.sandbox.locations.map((uid) => locationSync(suite.harness, uid, sink));
    const scheduler = new Scheduler({
      locations: syncs,
      settings: {
        maxLocationsInFlight: 2,
        intervalMs: 60_000,
        pagesPerTurn: 2,
        shutdownTimeoutMs: 5_000,
        failureBackoff: DEFAULT_RETRY_POLICY,
        stoppedRetry: DEFAULT_STOPPED_RETRY,
      },
      metrics: suite.harness.metrics,
      logger: silentLogger(),
      clock: systemClock,
    });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted >= 1),
      60_000,
      'every location traversed',
    );
    stop.abort();
    await running;
    for (const uid of suite.sandbox.locations) {
      const published = sink.callsOf(uid);
      expect(published).toEqual(suite.sandbox.admin.truth(uid).map(expectedCall));
      expect(new Set(published.map((c) => c.uid)).size).toBe(published.length);
    }
  });

  it('never publishes the customer number of a private call', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[1] ?? '';
    await runTraversal(locationSync(suite.harness, location, sink));
    const privateCalls = sink.calls.filter((c) => c.isPrivate !== false);
    expect(privateCalls.length).toBeGreaterThan(0);
    expect(privateCalls.every((c) => c.customerPhoneNumber === null)).toBe(true);
    expect(sink.calls.some((c) => c.isPrivate === false && c.customerPhoneNumber !== null)).toBe(true);
    const published = JSON.stringify(sink.calls);
    for (const truth of suite.sandbox.admin
      .truth(location)
      .filter((c) => c.isPrivate && c.customerPhoneNumber !== null)) {
      expect(published).not.toContain(truth.customerPhoneNumber);
    }
  });

  it('publishes nothing again on the next traversal and picks up a live update and a new call', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[2] ?? '';
    const sync = locationSync(suite.harness, location, sink);
    await runTraversal(sync);
    const before = sink.calls.length;
    await runTraversal(sync);
    expect(sink.calls.length).toBe(before);

    const existing = suite.sandbox.admin.truth(location)[5];
    suite.sandbox.admin.advanceClock(60_000);
    const updated = suite.sandbox.admin.upsertCall({
      uid: existing?.uid ?? '',
      isPrivate: false,
      customerPhoneNumber: '+15550199',
    });
    const created = suite.sandbox.admin.upsertCall({
      locationUid: location,
      isPrivate: true,
      customerPhoneNumber: '+15550198',
    });
    await runTraversal(sync);
    expect(sink.calls.slice(before).sort(byUpdatedAtThenUid)).toEqual(
      [updated, created].map(expectedCall).sort(byUpdatedAtThenUid),
    );
  });

  it('publishes a call changed a second time within one updatedAt value, instead of skipping it at the boundary', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[2] ?? '';
    const sync = locationSync(suite.harness, location, sink);
    await runTraversal(sync);
    const newest = suite.sandbox.admin.truth(location).at(-1);
    expect(sync.offset.boundary).toContain(newest?.uid);
    const before = sink.calls.length;

    // Changed again, and the API keeps its updatedAt (a second change within the same instant).
    const changed = suite.sandbox.admin.upsertCall({
      uid: newest?.uid ?? '',
      updatedAt: newest?.updatedAt ?? '',
      isPrivate: false,
      customerPhoneNumber: '+15550177',
    });
    await runTraversal(sync);
    expect(sink.calls.slice(before)).toEqual([expectedCall(changed)]);
    await runTraversal(sync);
    expect(sink.calls).toHaveLength(before + 1);
  });

  it('restarts inside a same-instant group larger than a page when the cursor expires, losing and doubling nothing', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[0] ?? '';
    const sync = locationSync(suite.harness, location, sink);
    const truth = suite.sandbox.admin.truth(location);
    const sizes = new Map<string, number>();
    for (const c of truth) sizes.set(c.updatedAt, (sizes.get(c.updatedAt) ?? 0) + 1);
    const [groupInstant, groupSize] = [...sizes].sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
    expect(groupSize).toBeGreaterThan(50);
    // Cursors live 1 s on the sandbox clock. Advance page by page until the committed boundary is part-way
    // through the group, then move the clock past the cursor's expiry.
    suite.sandbox.admin.setFaults({ cursorTtlMs: 1_000 });
    await eventually(
      async () => {
        await sync.runPage();
        return (
          sync.offset.watermark === groupInstant &&
          sync.offset.boundary.length < groupSize &&
          sync.offset.cursor !== null
        );
      },
      30_000,
      'a checkpoint inside the group',
    );
    suite.sandbox.admin.advanceClock(5_000);
    const restarts = () => counterValue(suite.harness.metrics.cursorRestarts);
    const before = await restarts();
    await sync.runPage();
    expect(await restarts()).toBe(before + 1);
    suite.sandbox.admin.setFaults({ cursorTtlMs: DEFAULT_FAULTS.cursorTtlMs });
    await runTraversal(sync);
    expect(sink.calls).toEqual(truth.map(expectedCall));
    expect(
      await counterValue(suite.harness.metrics.recordsSkipped, { location, reason: 'boundary_dedupe' }),
    ).toBeGreaterThan(0);
  });

  it('loses and doubles nothing under 429s, server errors, dropped connections and malformed bodies', async () => {
    suite.sandbox.admin.setFaults({
      rateLimitRate: 0.05,
      retryAfterSeconds: 0,
      serverErrorRate: 0.1,
      dropConnectionRate: 0.05,
      malformedJsonRate: 0.05,
      seed: 11,
    });
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[1] ?? '';
    await runTraversal(locationSync(suite.harness, location, sink));
    expect(sink.calls).toEqual(suite.sandbox.admin.truth(location).map(expectedCall));
    expect(
      await counterValue(suite.harness.metrics.apiRateLimited, { endpoint: 'get_call' }),
    ).toBeGreaterThan(0);
  });
});

describe('sync engine against the sandbox: short and empty pages', () => {
  const suite = sandboxSuite(
    {
      data: {
        locations: 1,
        callsPerLocation: 200,
        unrepresentableRatio: 0.6,
        thirdPartyRatio: 0.2,
        sameInstantGroups: { count: 0, size: 1 },
      },
    },
    { pageSize: 5, enrich: false },
  );

  it('follows the cursor through short and empty pages to the end', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[0] ?? '';
    const pages: Array<{ items: number; more: boolean }> = [];
    const listPage = suite.harness.client.listPage.bind(suite.harness.client);
    suite.harness.client.listPage = async (request, signal) => {
      const page = await listPage(request, signal);
      pages.push({ items: page.items.length, more: page.nextCursor !== null });
      return page;
    };
    const sync = locationSync(suite.harness, location, sink);
    await runTraversal(sync);
    const truth = suite.sandbox.admin.truth(location);
    expect(sink.calls.map((c) => c.uid)).toEqual(truth.map((c) => c.uid));
    expect(pages.some((p) => p.items === 0 && p.more)).toBe(true);
    expect(pages.some((p) => p.items > 0 && p.items < 5 && p.more)).toBe(true);
    // Fewer than 5 per page on average: pages ran short while the cursor was set.
    expect(sync.totals.pages).toBeGreaterThan(Math.ceil(truth.length / 5));
    expect(sink.calls.every((c) => c.customerPhoneNumber === null && !c.enriched)).toBe(true);
  });
});

describe('sync engine against the sandbox: access tokens expiring early', () => {
  const suite = sandboxSuite(
    {
      data: { locations: 1, callsPerLocation: 150 },
      faults: { accessTokenEarlyExpiryRate: 0.05, seed: 5 },
    },
    { pageSize: 25 },
  );

  it('refreshes the token and completes the traversal without loss', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[0] ?? '';
    // A token refused again right after its refresh fails the page (retriable); the traversal resumes.
    const failures = await traverseResiliently(locationSync(suite.harness, location, sink));
    expect(failures.every((code) => code === 'API_UNAUTHORIZED')).toBe(true);
    expect(sink.calls).toEqual(suite.sandbox.admin.truth(location).map(expectedCall));
    expect(suite.harness.tokens.refreshes).toBeGreaterThan(0);
    expect(suite.harness.tokens.refreshes).toBe(suite.sandbox.admin.stats().faults.tokensExpiredEarly);
  });
});

describe('sync engine against the sandbox: live mode', () => {
  const suite = sandboxSuite(
    {
      data: { locations: 1, callsPerLocation: 600 },
      live: { updatesPerSecond: 300, createsPerSecond: 100 },
    },
    { pageSize: 20 },
  );

  it('publishes each call version once while calls change during the traversal, missing none below the watermark', async () => {
    const sink = new InMemorySink();
    const location = suite.sandbox.locations[0] ?? '';
    const sync = locationSync(suite.harness, location, sink);
    // Calls change while the first pages are read, then stop: a traversal reads faster than the API changes only
    // on a machine with CPU to spare (300 updates and 100 creates a second move calls ahead of the cursor), so
    // changes that never stop made the traversal chase them for ever on a busy CI machine (a 30 s timeout).
    let commits = 0;
    sink.beforeCommit = () => {
      if (++commits === 10) suite.sandbox.admin.setLive(false);
    };
    await runTraversal(sync);
    await runTraversal(sync);
    expect(commits).toBeGreaterThan(10);
    const truth = suite.sandbox.admin.truth(location);
    const watermark = sync.offset.watermark ?? '';
    const versions = sink.calls.map((c) => `${c.uid}@${c.updatedAt}`);
    expect(new Set(versions).size).toBe(versions.length);
    const published = new Set(versions);
    const missing = truth.filter((c) => c.updatedAt < watermark && !published.has(`${c.uid}@${c.updatedAt}`));
    expect(missing).toEqual([]);
    expect(suite.sandbox.admin.stats().live.updates).toBeGreaterThan(0);
  });
});
