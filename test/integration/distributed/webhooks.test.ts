/**
 * Webhooks in distributed mode (issue 33, item 5): deliveries reach one instance only (as a load balancer may
 * send them all to one), and each change still comes in through the instance that owns its location, over the
 * nudge topic. The reconcile interval is a day: after the first traversals, only nudges bring changes in.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import {
  connectorDocument,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type ExpectedVersion,
  type RunningConnector,
} from '../../support/connector.js';
import { counterValue, eventually, testKafka } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';

const GROUP = { groupSessionTimeoutMs: 6_000, groupHeartbeatIntervalMs: 1_000 };
/** This helper's port range (24100-24199). */
const PORTS = [24_141, 24_142] as const;
const SECRET_ENV = 'CALLS_CONNECTOR_WEBHOOK_SECRET';

describe('webhooks in distributed mode', () => {
  const closing: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closing.reverse()) await close().catch(() => undefined);
  });

  it('nudges the owner of each location over the nudge topic, whichever instance took the delivery', async () => {
    const sandbox = await startTestSandbox({
      data: { seed: 52, locations: 8, callsPerLocation: 4 },
      webhooks: { retry: { initialDelayMs: 5, maxDelayMs: 20 } },
    });
    closing.push(() => sandbox.close());
    const env = { [SECRET_ENV]: sandbox.admin.webhooks.secret };
    const name = uniqueName('it-nudges');
    const document = connectorDocument(sandbox, {
      kafka: { offsetsTopicPartitions: 4, ...GROUP },
      lanes: { enabled: false },
    });
    const configOf = (port: number) =>
      parseConfig(
        {
          ...document,
          connector: { name, mode: 'distributed' },
          webhooks: { enabled: true, host: '127.0.0.1', port, reconcileIntervalMs: 24 * 3_600_000 },
        },
        env,
      );
    const metrics = [new ConnectorMetrics(), new ConnectorMetrics()] as const;
    const start = async (i: 0 | 1): Promise<RunningConnector> => {
      const connector = await runConnector({
        config: configOf(PORTS[i]),
        logger: silentLogger(),
        metrics: metrics[i],
        env,
      });
      closing.push(() => connector.stop());
      return connector;
    };
    const first = await start(0);
    await eventually(() => first.runtime.assignment()?.partitions.length === 4, 60_000, 'the first owns all');
    const second = await start(1);
    const instances = [first, second] as const;
    const owned = (c: RunningConnector) => c.runtime.status().map((s) => s.locationUid);
    await eventually(
      () =>
        instances.every((c) => owned(c).length > 0) &&
        owned(first).length + owned(second).length === sandbox.locations.length &&
        instances.every((c) => c.runtime.status().every((s) => s.totals.traversalsCompleted >= 1)),
      60_000,
      'the locations split between the two, each traversed once',
    );

    // Every delivery goes to the first instance.
    sandbox.admin.webhooks.addTarget(`http://127.0.0.1:${PORTS[0]}/webhooks/calls`);
    const expected: ExpectedVersion[] = sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
    const published = (c: RunningConnector) =>
      c.runtime.status().reduce((sum, s) => sum + s.totals.published, 0);
    for (const [owner, index] of [
      [second, 1],
      [first, 0],
      [second, 1],
    ] as const) {
      const location = owned(owner)[0] as string;
      const before = published(owner);
      expected.push(sandbox.admin.upsertCall({ locationUid: location }));
      await eventually(
        () => published(owner) > before,
        20_000,
        `instance ${index + 1} publishing the change`,
      );
      await sandbox.admin.webhooks.idle();
    }

    const calls = await publishedCalls(testKafka(), configOf(PORTS[0]), expected);
    expect(calls.map(versionId).sort()).toEqual(expected.map(versionId).sort());
    expect(await counterValue(metrics[0].webhookDeliveries, { outcome: 'accepted' })).toBe(3);
    expect(await counterValue(metrics[1].webhookDeliveries)).toBe(0);
    // Each owner acted on its own nudges only (neither counts the other's as unknown).
    const acted = async (i: 0 | 1) =>
      (await counterValue(metrics[i].webhookNudgeOutcomes)) -
      (await counterValue(metrics[i].webhookNudgeOutcomes, { outcome: 'unknown' }));
    expect(await acted(0)).toBe(1);
    expect(await acted(1)).toBe(2);
    expect(await counterValue(metrics[1].webhookNudgeOutcomes, { outcome: 'unknown' })).toBe(0);
  });
});
