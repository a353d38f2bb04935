/**
 * Self-healing of the traversal and the enrichment, end to end (issue 9, points 1 and 4): the real sandbox
 * over HTTPS, the shared Kafka broker and schema registry, the connector in-process with its default
 * api.* error settings. A read_committed consumer must see exactly the sandbox's truth, each version once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { planSingleCallFault } from '../../../packages/sandbox/src/faults/faults.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import type { LocationOffset } from '../../../src/sync/model.js';
import type { LocationStatus } from '../../../src/sync/scheduler/scheduled-location.js';
import {
  connectorDocument,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type PublishedCall,
} from '../../support/connector.js';
import { counterValue, eventually, readCommitted, testKafka } from '../../support/kafka.js';

/** Every location completed a traversal; a stopped location fails the test at once, with its error. */
function doneOrStopped(status: LocationStatus[]): boolean {
  const stopped = status.find((s) => s.state === 'stopped');
  if (stopped !== undefined) throw new Error(`location stopped: ${JSON.stringify(stopped.lastError)}`);
  return status.every((s) => s.totals.traversalsCompleted >= 1);
}

function duplicatesAndMissing(published: PublishedCall[], truth: { uid: string; updatedAt: string }[]) {
  const counts = new Map<string, number>();
  for (const call of published) counts.set(versionId(call), (counts.get(versionId(call)) ?? 0) + 1);
  return {
    doubled: [...counts].filter(([, n]) => n > 1).map(([id]) => id),
    missing: truth.map(versionId).filter((id) => !counts.has(id)),
    extra: [...counts.keys()].filter((id) => !truth.some((t) => versionId(t) === id)),
  };
}

/** Cursors an offset holds: its live lane's and, while it backfills behind the present, its history lane's. */
function cursorsOf(offset: LocationOffset): number {
  return [offset.cursor, offset.history?.cursor ?? null].filter((c) => c !== null).length;
}

describe('a stored cursor the API no longer accepts, refused with a 400 of a shape no setting names', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 31, locations: 2, callsPerLocation: 160, sameInstantGroups: { count: 1, size: 30 } },
      faults: {
        cursorTtlMs: 60_000,
        cursorRejection: {
          status: 400,
          body: '{"errors":[{"reason":"PAGINATION_TOKEN_STALE","detail":"the page token is no longer valid"}]}',
          contentType: 'application/json',
        },
        // Slow enough that the first run can be stopped in the middle of its traversals.
        latency: { medianMs: 15, p99Ms: 40 },
      },
    });
    config = parseConfig(
      connectorDocument(sandbox, { api: { pageSize: 10, enrichConcurrency: 2 }, poll: { pagesPerTurn: 1 } }),
      {},
    );
  });

  afterAll(async () => {
    await sandbox.close();
  });

  it('restarts from the watermark after a restart, and publishes the truth with no loss and no duplicate', async () => {
    // First run: stopped while some location is mid-traversal, so its stored offset holds a cursor.
    const first = await runConnector({ config, logger: silentLogger(), metrics: testMetrics() });
    await eventually(
      () => first.runtime.status().some((s) => cursorsOf(s.offset) > 0 && s.totals.published > 0),
      60_000,
      'a location committed a page in the middle of its traversal',
    );
    await first.stop();
    const stored = new Map(first.runtime.status().map((s) => [s.locationUid, s.offset]));
    expect([...stored.values()].some((offset) => cursorsOf(offset) > 0)).toBe(true);

    // Time passes: the stored cursors expire, and the API refuses them with its own 400 body.
    sandbox.admin.advanceClock(120_000);
    sandbox.admin.setFaults({ latency: null });
    const metrics = testMetrics();
    const second = await runConnector({ config, logger: silentLogger(), metrics });
    try {
      await eventually(
        () => doneOrStopped(second.runtime.status()),
        90_000,
        'every location completed a traversal after the restart',
      );
    } finally {
      await second.stop();
    }

    const restarts = await counterValue(metrics.cursorRestarts, { reason: 'rejected_4xx' });
    expect(restarts).toBe([...stored.values()].reduce((n, offset) => n + cursorsOf(offset), 0));
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    expect(duplicatesAndMissing(published, truth)).toEqual({ doubled: [], missing: [], extra: [] });
  });
});

describe('single-call failures: transient ones, refusals and other versions', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 37, locations: 2, callsPerLocation: 120, privateRatio: 0.3 },
      faults: {
        seed: 9,
        singleCallFailures: [
          // Transient: more failures than the client's attempts, so pages fail and are fetched again.
          {
            rate: 0.06,
            attempts: 3,
            answer: { status: 503, body: '<h1>upstream down</h1>', contentType: 'text/html' },
          },
          { rate: 0.06, attempts: 3, answer: { status: 200, body: 'not json', contentType: 'text/plain' } },
          // Refused for good, with a body of no known shape.
          {
            rate: 0.05,
            attempts: 0,
            answer: { status: 422, body: '{"problem":"archived"}', contentType: 'application/json' },
          },
        ],
        singleCallVersionSkewRate: 0.04,
      },
    });
    config = parseConfig(
      connectorDocument(sandbox, {
        api: { pageSize: 15, retry: { maxAttempts: 2, initialDelayMs: 5, maxDelayMs: 50 } },
      }),
      {},
    );
  });

  afterAll(async () => {
    await sandbox.close();
  });

  it('publishes every call once, never dead-letters a good call, and leaves only refused or skewed calls unenriched', async () => {
    const metrics = testMetrics();
    const connector = await runConnector({ config, logger: silentLogger(), metrics });
    try {
      await eventually(
        () => doneOrStopped(connector.runtime.status()),
        90_000,
        'every location completed a traversal under single-call failures',
      );
    } finally {
      await connector.stop();
    }

    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    expect(duplicatesAndMissing(published, truth)).toEqual({ doubled: [], missing: [], extra: [] });
    expect(await readCommitted(testKafka(), config.kafka.dlqTopic)).toEqual([]);

    // Which calls end unenriched is decided by the seed: the refused ones and the skewed ones.
    const faults = sandbox.admin.faults();
    const unenriched = new Set(
      truth.filter((call) => planSingleCallFault(faults, call.uid, 1_000) !== null).map((call) => call.uid),
    );
    expect(unenriched.size).toBeGreaterThan(0);
    expect(sandbox.admin.stats().faults.singleCallFailures).toBeGreaterThan(unenriched.size);
    for (const call of published) {
      if (unenriched.has(call.uid))
        expect(call).toMatchObject({ isPrivate: null, customerPhoneNumber: null });
      else expect(call.isPrivate).not.toBeNull();
    }
    const counted =
      (await counterValue(metrics.recordsUnenriched, { reason: 'refused' })) +
      (await counterValue(metrics.recordsUnenriched, { reason: 'version_mismatch' }));
    expect(counted).toBe(unenriched.size);
    expect(await counterValue(metrics.apiRetries, { endpoint: 'get_call' })).toBeGreaterThan(0);
  });
});
