/**
 * Webhooks on the real stack, single mode (issue 33): the sandbox sends signed call.* deliveries to the
 * connector's receiver, with the faults a real sender and an attacker bring. A read_committed consumer must
 * see every version once (0 lost, 0 duplicated); forged and replayed deliveries are refused.
 *
 * 1. A reconcile interval of a day: after the first traversal, only nudges can bring a change in, so every
 *    change seen published came through its delivery (badly signed first, duplicated, replayed).
 * 2. A reconcile interval of a second or two and dropped deliveries: the reconciliation polls publish the
 *    dropped changes, and count them as missed deliveries.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { runConnector, type ExpectedVersion, type RunningConnector } from '../../support/connector.js';
import { counterValue, eventually } from '../../support/kafka.js';
import {
  deliveries,
  expectEachVersionOnce,
  receiverUrl,
  sendForgedDelivery,
  startWebhookSandbox,
  webhookDocument,
} from '../../support/webhooks.js';

/** This helper's port range (25400-25499). */
const RECEIVER_PORTS = { nudged: 25_431, reconciled: 25_432 };

interface Setup {
  sandbox: RunningSandbox;
  config: ConnectorConfig;
  connector: RunningConnector;
  metrics: ConnectorMetrics;
  url: string;
  /** Every version the sandbox held or made: each must be published once. */
  expected: ExpectedVersion[];
}

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) await close();
});

async function setUp(port: number, reconcileIntervalMs: number): Promise<Setup> {
  const { sandbox, env } = await startWebhookSandbox({ seed: 33, locations: 2, callsPerLocation: 8 });
  opened.push(() => sandbox.close());
  const config = parseConfig(
    webhookDocument(sandbox, { port, reconcileIntervalMs, missedGraceMs: 1_000 }),
    env,
  );
  const metrics = testMetrics();
  const connector = await runConnector({ config, logger: silentLogger(), metrics, env });
  opened.push(() => connector.stop());
  await eventually(
    () => connector.runtime.status().every((s) => s.totals.traversalsCompleted >= 1),
    30_000,
    'the first traversal of every location',
  );
  const url = receiverUrl(port);
  sandbox.admin.webhooks.addTarget(url);
  const expected: ExpectedVersion[] = sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
  return { sandbox, config, connector, metrics, url, expected };
}

const published = (s: Setup) => s.connector.runtime.status().reduce((sum, l) => sum + l.totals.published, 0);

/** Makes one change (an update of an existing call, or a new call) and waits until a poll published it. */
async function change(s: Setup, input: { uid: string } | { locationUid: string }): Promise<void> {
  const before = published(s);
  s.expected.push(s.sandbox.admin.upsertCall(input));
  await eventually(() => published(s) > before, 20_000, 'the change published');
  await s.sandbox.admin.webhooks.idle();
}

describe('webhooks nudging the connector (single mode)', () => {
  it('publishes each change through its nudge, once, and refuses forged and replayed deliveries', async () => {
    const s = await setUp(RECEIVER_PORTS.nudged, 24 * 3_600_000);
    const [first, second] = s.sandbox.locations as [string, string];
    const existing = s.sandbox.admin.truth(first).slice(0, 3);

    s.sandbox.admin.webhooks.failNext('badSignature'); // refused (401); the sender's retry is signed right
    await change(s, { uid: existing[0]!.uid });
    s.sandbox.admin.webhooks.failNext('duplicate'); // the second copy is a replay of a taken id
    await change(s, { uid: existing[1]!.uid });
    s.sandbox.admin.webhooks.failNext('replay'); // an attacker sends the accepted request again
    await change(s, { uid: existing[2]!.uid });
    await change(s, { locationUid: second });
    await change(s, { uid: existing[0]!.uid });

    // A forgery: well-formed, fresh, signed with a key that is not the sandbox's.
    const forged = await sendForgedDelivery(s.url, { uid: existing[0]!.uid, locationUid: first });
    expect(forged.status).toBe(401);

    await expectEachVersionOnce(s.config, s.expected);
    // The sender's faults happened: one badly signed first attempt, one duplicate, one replay.
    expect(s.sandbox.admin.webhooks.stats().faults).toMatchObject({
      badSignature: 1,
      duplicate: 1,
      replay: 1,
    });
    expect(await deliveries(s.metrics, 'accepted')).toBe(5);
    expect(await deliveries(s.metrics, 'bad_signature')).toBe(2);
    expect(await deliveries(s.metrics, 'replayed')).toBe(2);
    // Every change came in through a nudge. Each accepted delivery reached its location's scheduler (no nudge
    // held or unknown) and each nudge was timed to its publish...
    expect(await counterValue(s.metrics.webhookNudgeOutcomes)).toBe(5);
    expect(await counterValue(s.metrics.webhookNudgeOutcomes, { outcome: 'held' })).toBe(0);
    expect(await counterValue(s.metrics.webhookNudgeOutcomes, { outcome: 'unknown' })).toBe(0);
    const timed = (await s.metrics.webhookNudgeToPublished.get()).values.find(
      (v) => v.metricName === 'calls_connector_webhook_nudge_to_published_seconds_count',
    );
    expect(timed?.value).toBe(5);
    expect(await counterValue(s.metrics.webhookMissedDeliveries)).toBe(0);
    // ...and no scheduled poll could have found them: with webhooks on, a location's next scheduled poll is at
    // least half its (day-long) interval after its last traversal, and the test lasts seconds.
    const soonestScheduled = Date.now() + 12 * 3_600_000 - 60_000;
    for (const location of s.connector.runtime.status())
      expect(location.nextRunAt ?? 0, location.locationUid).toBeGreaterThan(soonestScheduled);
  });

  it('publishes the changes whose deliveries were dropped at the next reconciliation poll, counted as missed', async () => {
    const s = await setUp(RECEIVER_PORTS.reconciled, 2_000);
    const [first, second] = s.sandbox.locations as [string, string];
    const existing = s.sandbox.admin.truth(first).slice(0, 1);

    s.sandbox.admin.webhooks.failNext('drop');
    await change(s, { uid: existing[0]!.uid });
    s.sandbox.admin.webhooks.failNext('drop');
    await change(s, { locationUid: second });
    expect(await deliveries(s.metrics, 'accepted')).toBe(0);
    await expectEachVersionOnce(s.config, s.expected);

    // Missed once webhooks.missedGraceMs (1 s) has passed with no delivery for them: the next delivery settles.
    const droppedPublishedAt = Date.now();
    await eventually(() => Date.now() > droppedPublishedAt + 1_000, 5_000, 'the grace of the dropped ones');
    await change(s, { locationUid: first });
    await eventually(
      async () => (await counterValue(s.metrics.webhookMissedDeliveries)) === 2,
      10_000,
      'two missed deliveries',
    );
    expect(await deliveries(s.metrics, 'accepted')).toBe(1);
    await expectEachVersionOnce(s.config, s.expected);
  });
});
