/**
 * Issue 23 on the real stack: while two locations backfill their history under a rate limit, calls changed or
 * created meanwhile are readable by a read_committed consumer while their location's history is still being
 * read (the live lanes go first), and at the end the topic is the truth with no call ever read at an older
 * version after a newer one. Without lanes, each change would wait for its location's whole backfill.
 *
 * Ordering, not wall-clock time (issue 31): each change must be read before its location's history lane
 * merged, whatever the machine's speed. How soon it is read (the live freshness during a backfill) is a figure
 * of the bench (bench/lanes.ts), not a bound here.
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
/** Rounds of changes, one per location each, a round made once the last one is readable. */
const ROUNDS = 4;

describe('lanes: the present first while history backfills', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let connector: RunningConnector;
  let consumer: Consumer;
  /** Each version ("uid@updatedAt") read (read_committed): whether its location was still split then. */
  const splitWhenRead = new Map<string, boolean>();

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
        const location = connector.runtime.status().find((s) => s.locationUid === call.locationUid);
        if (!splitWhenRead.has(versionId(call)))
          splitWhenRead.set(versionId(call), location?.offset.history !== undefined);
      },
    });
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await connector?.stop();
    await sandbox?.close();
  });

  it('publishes changes made during a backfill while their location’s history is still read, and ends on the truth without regressions', async () => {
    const splitLocations = () =>
      connector.runtime.status().filter((s) => s.offset.history !== undefined).length;
    await eventually(() => splitLocations() === 2, 15_000, 'both locations split into lanes');

    // Changes while both backfill: an old call changed (it leaves the history range), and a new call; a round
    // of one per location, the next once both are readable (no sleeping: the reads pace the rounds).
    const changes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const made = sandbox.locations.slice(0, 2).map((location, i) => {
        const truth = sandbox.admin.truth(location);
        return versionId(
          i === 0
            ? sandbox.admin.upsertCall({ uid: truth[10 + round * 7]!.uid, locationUid: location })
            : sandbox.admin.upsertCall({ locationUid: location, isPrivate: false }),
        );
      });
      changes.push(...made);
      await eventually(
        () => made.every((id) => splitWhenRead.has(id)),
        15_000,
        `round ${round + 1} readable`,
      );
    }
    // Each change was read while its location's history was still being read: the present went first.
    expect(
      changes.filter((id) => splitWhenRead.get(id) !== true),
      'changes read only after their location merged its lanes',
    ).toEqual([]);

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
