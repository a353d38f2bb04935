/**
 * Issue 23 on the real stack: while two locations backfill their history under a rate limit, calls changed or
 * created meanwhile are readable by a read_committed consumer within the poll interval and one round (the
 * live lanes go first), and at the end the topic is the truth with no call ever read at an older version
 * after a newer one. Without lanes, each change would wait for its location's whole backfill.
 */
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Consumer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorConfig,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type PublishedCall,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually, testKafka } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';

const INTERVAL_MS = 1_000;
/**
 * One round after the interval: the listing, the single call, the Kafka transaction and the consumer's fetch
 * (a round of idle polls of two locations at 50 requests/s is 40 ms; the rest is Kafka's, with room for a
 * loaded CI machine). Measured: at most 1.4 s with lanes; 5.3 to 8.1 s with `lanes.enabled: false`.
 */
const ROUND_MS = 2_000;
const CHANGES = 8;

describe('lanes: the present first while history backfills', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  let consumer: Consumer;
  /** When each version ("uid@updatedAt") became readable (read_committed), ms since epoch. */
  const readAt = new Map<string, number>();

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 23, locations: 2, callsPerLocation: 400, privateRatio: 0.3 },
    });
    // 50 requests/s for 800 single calls and the listings: a backfill of about 17 s.
    config = connectorConfig(sandbox, {
      api: { requestsPerSecond: 50 },
      poll: { intervalMs: INTERVAL_MS, maxLocationsInFlight: 2 },
    });
    const kafka = testKafka();
    const registry = new SchemaRegistry({ host: config.schemaRegistry.url });
    consumer = kafka.consumer({ groupId: uniqueName('lanes-reader'), maxWaitTimeInMs: 50 });
    connector = await runConnector({ config, logger: silentLogger() });
    await consumer.connect();
    await consumer.subscribe({ topic: config.kafka.topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value === null) return;
        const call = (await registry.decode(message.value)) as PublishedCall;
        readAt.set(versionId(call), Date.now());
      },
    });
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await connector?.stop();
    await sandbox?.close();
  });

  it('publishes changes made during a backfill within the interval and one round, and ends on the truth without regressions', async () => {
    const splitLocations = () =>
      connector.runtime.status().filter((s) => s.offset.history !== undefined).length;
    await eventually(() => splitLocations() === 2, 15_000, 'both locations split into lanes');

    // Changes while both backfill: an old call changed (it leaves the history range), and a new call.
    const changes: { id: string; at: number }[] = [];
    for (let i = 0; i < CHANGES; i++) {
      const location = sandbox.locations[i % 2]!;
      const truth = sandbox.admin.truth(location);
      const changed =
        i % 2 === 0
          ? sandbox.admin.upsertCall({ uid: truth[10 + i * 7]!.uid, locationUid: location })
          : sandbox.admin.upsertCall({ locationUid: location, isPrivate: false });
      changes.push({ id: versionId(changed), at: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    await eventually(() => changes.every((c) => readAt.has(c.id)), 15_000, 'every change readable');
    // The changes were read while history was still being read: the test measured a backfill.
    expect(splitLocations()).toBeGreaterThan(0);
    const latencies = changes.map((c) => readAt.get(c.id)! - c.at);
    expect(Math.max(...latencies), `latencies ${latencies.join(', ')} ms`).toBeLessThanOrEqual(
      INTERVAL_MS + ROUND_MS,
    );

    await eventually(
      () => connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
      40_000,
      'both locations caught up (history merged)',
    );
    expect(splitLocations()).toBe(0);
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(testKafka(), config, truth);
    // Per uid, in the order a consumer reads them (one partition per key): never back to an older version.
    const newest = new Map<string, string>();
    const regressed: string[] = [];
    for (const call of published) {
      const before = newest.get(call.uid);
      if (before !== undefined && Date.parse(call.updatedAtIso) < Date.parse(before))
        regressed.push(versionId(call));
      newest.set(call.uid, call.updatedAtIso);
    }
    expect(regressed).toEqual([]);
    // The topic's end is the truth, every version once (an old version of a changed call at most once).
    const last = new Map(published.map((call) => [call.uid, versionId(call)]));
    expect([...last.values()].sort()).toEqual(truth.map(versionId).sort());
    const ids = published.map(versionId);
    expect(ids.length).toBe(new Set(ids).size);
  });
});
