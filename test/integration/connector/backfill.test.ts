/**
 * The whole connector against the real sandbox (HTTPS) and the real Kafka + registry: what a downstream
 * read_committed consumer sees must be exactly the API's truth.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Kafka } from 'kafkajs';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorConfig,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type RunningConnector,
} from '../../support/connector.js';
import { eventually, testKafka } from '../../support/kafka.js';

describe('the connector end to end', () => {
  let sandbox: RunningSandbox;
  let kafka: Kafka;
  let config: ConnectorConfig;
  let connector: RunningConnector;

  const traversalsCompleted = () =>
    Math.min(...connector.runtime.status().map((s) => s.totals.traversalsCompleted));

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: {
        seed: 7,
        locations: 3,
        callsPerLocation: 250,
        privateRatio: 0.3,
        // A group of calls sharing one updatedAt larger than a page (pageSize 40).
        sameInstantGroups: { count: 1, size: 90 },
      },
    });
    kafka = testKafka();
    config = connectorConfig(sandbox);
    connector = await runConnector({ config, logger: silentLogger() });
  });

  afterAll(async () => {
    await connector.stop();
    await sandbox.close();
  });

  it('publishes every listed call exactly once, keyed by uid, equal to the sandbox truth', async () => {
    await eventually(() => traversalsCompleted() >= 1, 90_000, 'a complete traversal of every location');
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);

    expect(published.map(versionId).sort()).toEqual(truth.map(versionId).sort());
    expect(new Set(published.map(versionId)).size).toBe(published.length);
    for (const call of published) expect(call.key).toBe(call.uid);
  });

  it('never publishes the customer number of a private or unknown-privacy call', async () => {
    const calls = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, calls);
    const truth = new Map(calls.map((call) => [call.uid, call]));
    const privateCalls = published.filter((call) => truth.get(call.uid)?.isPrivate === true);
    expect(privateCalls.length).toBeGreaterThan(0);
    for (const call of privateCalls) expect(call.customerPhoneNumber).toBeNull();
    const publicCalls = published.filter((call) => truth.get(call.uid)?.isPrivate === false);
    expect(publicCalls.some((call) => call.customerPhoneNumber !== null)).toBe(true);
    for (const call of publicCalls)
      expect(call.customerPhoneNumber).toBe(truth.get(call.uid)?.customerPhoneNumber);
  });

  it('publishes an updated call as a new version on the next traversal, without repeating the others', async () => {
    const before = traversalsCompleted();
    const location = sandbox.locations[0]!;
    const target = sandbox.admin.truth(location)[5]!;
    const updated = sandbox.admin.upsertCall({ uid: target.uid, locationUid: location });
    await eventually(() => traversalsCompleted() >= before + 2, 60_000, 'two more traversals');

    const current = sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
    const published = await publishedCalls(kafka, config, [...current, target]);
    const versions = published.filter((call) => call.uid === target.uid).map(versionId);
    expect(versions).toContain(versionId(target));
    expect(versions).toContain(versionId(updated));
    const truthCount = sandbox.locations.reduce((n, l) => n + sandbox.admin.truth(l).length, 0);
    // Every current version once, plus the one superseded version of the updated call.
    expect(published.length).toBe(truthCount + 1);
    expect(new Set(published.map(versionId)).size).toBe(published.length);
  });
});
