import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { systemClock } from '../../../src/sync/clock.js';
import { Enricher } from '../../../src/sync/enricher.js';
import { LocationSync } from '../../../src/sync/location-sync.js';
import { EMPTY_OFFSET } from '../../../src/sync/model.js';
import { Scheduler, type SchedulerSettings } from '../../../src/sync/scheduler.js';
import { eventually } from '../../support/kafka.js';
import { FakeCallsApi, type FakeCall } from '../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';

const loc = (n: number) => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;
const t = (second: number) =>
  `2024-03-01T12:${String(Math.floor(second / 60)).padStart(2, '0')}:${String(second % 60).padStart(2, '0')}Z`;

function calls(location: string, count: number): FakeCall[] {
  return Array.from({ length: count }, (_, i) => ({
    uid: `${location.slice(-2)}-${i}`,
    locationUid: location,
    updatedAt: t(i),
  }));
}

function setup(api: FakeCallsApi, locations: string[], settings: Partial<SchedulerSettings> = {}) {
  const sink = new InMemorySink();
  const metrics = new ConnectorMetrics();
  const enricher = new Enricher({ api, enabled: false, concurrency: 1 });
  const syncs = locations.map(
    (locationUid) =>
      new LocationSync({
        locationUid,
        startOffset: EMPTY_OFFSET,
        api,
        enricher,
        sink,
        metrics,
        logger: silentLogger(),
        settings: {
          pageSize: 2,
          startSince: null,
          boundaryCap: 100,
          privacy: 'redact-unless-public',
          commitRetry: DEFAULT_RETRY_POLICY,
        },
        clock: systemClock,
      }),
  );
  const scheduler = new Scheduler({
    locations: syncs,
    settings: {
      maxLocationsInFlight: 2,
      intervalMs: 60_000,
      pagesPerTurn: 1,
      shutdownTimeoutMs: 1_000,
      failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1, maxDelayMs: 5 },
      ...settings,
    },
    metrics,
    logger: silentLogger(),
    clock: systemClock,
  });
  return { sink, metrics, scheduler };
}

describe('Scheduler', () => {
  it('completes a traversal of every location and then waits for the poll interval', async () => {
    const locations = [loc(1), loc(2), loc(3)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 5)));
    const { sink, scheduler } = setup(api, locations);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'every location traversed',
    );
    expect(sink.calls).toHaveLength(15);
    expect(
      scheduler.status().every((s) => s.state === 'waiting' && (s.nextRunAt ?? 0) > Date.now() + 30_000),
    ).toBe(true);
    stop.abort();
    await running;
  });

  it('interleaves locations page by page (fairness)', async () => {
    const locations = [loc(1), loc(2)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 8)));
    const { scheduler } = setup(api, locations, { maxLocationsInFlight: 1 });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'both traversed',
    );
    stop.abort();
    await running;
    const order = api.requests.map((r) =>
      r.kind === 'first'
        ? r.locationUid
        : (JSON.parse(Buffer.from(r.cursor, 'base64url').toString()) as { locationUid: string }).locationUid,
    );
    expect(order.slice(0, 4)).toEqual([loc(1), loc(2), loc(1), loc(2)]);
  });

  it('stops only the location with a fatal error; the others go on', async () => {
    const locations = [loc(1), loc(2)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 3)));
    api.listErrors.push(new FatalError('API_FORBIDDEN', 'no access'));
    const { sink, metrics, scheduler } = setup(api, locations, { maxLocationsInFlight: 1 });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().some((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'the healthy location traversed',
    );
    const [first, second] = scheduler.status();
    expect(first).toMatchObject({ state: 'stopped', lastError: { code: 'API_FORBIDDEN' } });
    expect(second?.totals.published).toBe(3);
    expect(sink.callsOf(loc(1))).toEqual([]);
    expect((await metrics.locationsStopped.get()).values[0]?.value).toBe(1);
    stop.abort();
    await running;
  });

  it('retries a location after a retriable error, resuming its traversal', async () => {
    const api = new FakeCallsApi(calls(loc(1), 5));
    const { sink, scheduler } = setup(api, [loc(1)]);
    const stop = new AbortController();
    api.listErrors.push(
      new RetriableError('API_UNAVAILABLE', 'down'),
      new RetriableError('API_UNAVAILABLE', 'down'),
    );
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status()[0]?.totals.traversalsCompleted === 1,
      5_000,
      'traversal after failures',
    );
    expect(sink.calls).toHaveLength(5);
    expect(scheduler.status()[0]?.lastError?.code).toBe('API_UNAVAILABLE');
    stop.abort();
    await running;
  });

  it('resolves run when every location is stopped', async () => {
    const api = new FakeCallsApi(calls(loc(1), 1));
    api.listErrors.push(new FatalError('API_FORBIDDEN', 'no'));
    const { scheduler } = setup(api, [loc(1)]);
    await scheduler.run(new AbortController().signal);
    expect(scheduler.status()[0]?.state).toBe('stopped');
  });

  it('finishes the page in flight on stop and starts no new one', async () => {
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)]);
    const stop = new AbortController();
    let release: () => void = () => {};
    sink.beforeCommit = () =>
      new Promise<void>((resolve) => {
        release = resolve;
        stop.abort();
      });
    const running = scheduler.run(stop.signal);
    await eventually(() => stop.signal.aborted, 5_000, 'first commit started');
    release();
    await running;
    expect(sink.commits).toBe(1);
    expect(api.requests).toHaveLength(1);
  });

  it('abandons a page still in flight when the shutdown timeout passes', async () => {
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)], { shutdownTimeoutMs: 10, pagesPerTurn: 100 });
    const stop = new AbortController();
    const original = api.listPage.bind(api);
    api.listPage = async (request, signal) => {
      if (api.requests.length >= 2) {
        stop.abort();
        await new Promise((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason as Error)),
        );
      }
      return original(request);
    };
    await scheduler.run(stop.signal);
    expect(sink.commits).toBe(2);
  });

  it('returns within the shutdown timeout even when a commit in flight never settles', async () => {
    // A sink stuck settling a commit (Kafka down) must not hold the process past poll.shutdownTimeoutMs.
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)], { shutdownTimeoutMs: 20 });
    const stop = new AbortController();
    sink.beforeCommit = () => {
      stop.abort();
      return new Promise<void>(() => {});
    };
    const outcome = await Promise.race([
      scheduler.run(stop.signal).then(() => 'returned'),
      new Promise((resolve) => setTimeout(resolve, 3_000, 'still waiting')),
    ]);
    expect(outcome).toBe('returned');
    expect(sink.commits).toBe(0);
  });
});
