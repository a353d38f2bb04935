/**
 * Webhooks in distributed mode (issue 33, items 5 and 9): deliveries reach one instance only (as a load balancer
 * may send them all to one), and each change still comes in through the instance that owns its location, over
 * the nudge topic.
 *
 * 1. A reconcile interval of a day: after the first traversals, only nudges bring changes in.
 * 2. The faults a real sender and an attacker bring (forged, badly signed, replayed, duplicated, delayed,
 *    reordered and dropped deliveries) with a reconcile interval of a few seconds: a read_committed consumer
 *    sees every version once (0 lost, 0 duplicated), the receiver refuses the forged and replayed ones, and the
 *    dropped ones are published by the owners' reconciliation polls, counted as missed deliveries.
 * 3. A nudge written while the owner's nudge reader was away from its group (a rejoin): the owner still reads it
 *    once it rejoins, and polls the location (issue 40).
 * 4. A delivery taken by one instance, replayed to the other once that one read its nudge: refused as replayed,
 *    nudging nothing (the replay key travels with the nudge into every instance's replay window; issue 40).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { decodeNudge } from '../../../src/kafka/nudges/nudge-topic.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { parseConfig } from '../../../src/config/load.js';
import { keyPartition } from '../../../src/kafka/group/location-partition.js';
import { offsetKey } from '../../../src/kafka/offsets/offset-codec.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { standardWebhooksSignature } from '../../../src/webhooks/signature/standard-webhooks.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { runConnector, type ExpectedVersion, type RunningConnector } from '../../support/connector.js';
import { counterValue, eventually, readCommitted, testKafka } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';
import * as webhooks from '../../support/webhooks.js';

const GROUP = { groupSessionTimeoutMs: 6_000, groupHeartbeatIntervalMs: 1_000 };
/** The two instances' receivers of each test. */
const PORTS = {
  nudged: [25_441, 25_442],
  faults: [25_443, 25_444],
  rejoin: [23_345, 23_346],
  replayElsewhere: [26_141, 26_142],
} as const;

interface TwoInstances {
  sandbox: RunningSandbox;
  config: ConnectorConfig;
  instances: readonly [RunningConnector, RunningConnector];
  metrics: readonly [ConnectorMetrics, ConnectorMetrics];
  /** Every version the sandbox held or made: each must be published once. */
  expected: ExpectedVersion[];
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

/**
 * Two instances sharing the sandbox's 8 locations, each having traversed its own once; every delivery goes to
 * the first one's receiver.
 */
async function twoInstances(
  seed: number,
  ports: readonly [number, number],
  receiver: { reconcileIntervalMs: number; missedGraceMs?: number },
): Promise<TwoInstances> {
  const { sandbox, env } = await webhooks.startWebhookSandbox({ seed, locations: 8, callsPerLocation: 4 });
  closing.push(() => sandbox.close());
  const name = uniqueName('it-nudges');
  // One document (its topics are fresh names), each instance's receiver on its own port.
  const document = webhooks.webhookDocument(
    sandbox,
    { port: ports[0], ...receiver },
    { offsetsTopicPartitions: 4, ...GROUP },
  );
  const configOf = (port: number) =>
    parseConfig(
      {
        ...document,
        connector: { name, mode: 'distributed' },
        webhooks: { ...(document['webhooks'] as Record<string, unknown>), port },
      },
      env,
    );
  const metrics = [testMetrics(), testMetrics()] as const;
  const start = async (i: 0 | 1): Promise<RunningConnector> => {
    const connector = await runConnector({
      config: configOf(ports[i]),
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
  await eventually(
    () =>
      instances.every((c) => owned(c).length > 0) &&
      owned(first).length + owned(second).length === sandbox.locations.length &&
      instances.every((c) => c.runtime.status().every((s) => s.totals.traversalsCompleted >= 1)),
    60_000,
    'the locations split between the two, each traversed once',
  );
  sandbox.admin.webhooks.addTarget(webhooks.receiverUrl(ports[0]));
  const expected: ExpectedVersion[] = sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
  return { sandbox, config: configOf(ports[0]), instances, metrics, expected };
}

const owned = (c: RunningConnector): string[] => c.runtime.status().map((s) => s.locationUid);
const published = (c: RunningConnector): number =>
  c.runtime.status().reduce((sum, s) => sum + s.totals.published, 0);

/** Makes changes (updates of existing calls, or new calls), then waits until `owner` published them all. */
async function changes(
  t: TwoInstances,
  owner: RunningConnector,
  inputs: ReadonlyArray<{ uid: string } | { locationUid: string }>,
): Promise<void> {
  const before = published(owner);
  for (const input of inputs) t.expected.push(t.sandbox.admin.upsertCall(input));
  await eventually(() => published(owner) >= before + inputs.length, 20_000, 'the changes published');
  await t.sandbox.admin.webhooks.idle();
}

describe('webhooks in distributed mode', () => {
  it('nudges the owner of each location over the nudge topic, whichever instance took the delivery', async () => {
    const t = await twoInstances(52, PORTS.nudged, { reconcileIntervalMs: 24 * 3_600_000 });
    const [first, second] = t.instances;
    for (const owner of [second, first, second])
      await changes(t, owner, [{ locationUid: owned(owner)[0] as string }]);

    await webhooks.expectEachVersionOnce(t.config, t.expected);
    expect(await webhooks.deliveries(t.metrics[0], 'accepted')).toBe(3);
    expect(await counterValue(t.metrics[1].webhookDeliveries)).toBe(0);
    // Each owner acted on its own nudges only (neither counts the other's as unknown).
    const acted = async (i: 0 | 1) =>
      (await counterValue(t.metrics[i].webhookNudgeOutcomes)) -
      (await counterValue(t.metrics[i].webhookNudgeOutcomes, { outcome: 'unknown' }));
    expect(await acted(0)).toBe(1);
    expect(await acted(1)).toBe(2);
    expect(await counterValue(t.metrics[1].webhookNudgeOutcomes, { outcome: 'unknown' })).toBe(0);
  });

  it('publishes every change once through forged, replayed, duplicated, reordered and dropped deliveries', async () => {
    const t = await twoInstances(53, PORTS.faults, { reconcileIntervalMs: 3_000, missedGraceMs: 1_000 });
    const faults = t.sandbox.admin.webhooks;
    // `second` owns two of the locations changed and `first` one: which instance owns two or more depends on
    // the split the group made (8 locations over 4 partitions: one instance may own a single location). The
    // deliveries all go to instance 0, whichever role it has.
    const [first, second] =
      owned(t.instances[1]).length >= 2 ? t.instances : ([t.instances[1], t.instances[0]] as const);
    const [a, c] = owned(second) as [string, string];
    const b = owned(first)[0] as string;
    expect(
      [a, b, c].every((l) => l !== undefined),
      'locations of both owners',
    ).toBe(true);
    const existing = t.sandbox.admin.truth(a)[0]!.uid;

    faults.failNext('badSignature'); // refused (401); the sender's retry is signed right
    await changes(t, second, [{ uid: existing }]);
    faults.failNext('duplicate'); // the second copy is a replay of a taken id
    await changes(t, first, [{ locationUid: b }]);
    faults.failNext('replay'); // an attacker sends the accepted request again
    await changes(t, second, [{ locationUid: c }]);
    faults.failNext('delay');
    await changes(t, second, [{ uid: existing }]);
    faults.failNext('reorder'); // held until the next one was sent: the later change arrives first
    await changes(t, second, [{ locationUid: a }, { locationUid: c }]);
    // Dropped: only the owners' reconciliation polls find these.
    faults.failNext('drop');
    await changes(t, first, [{ locationUid: b }]);
    faults.failNext('drop');
    await changes(t, second, [{ locationUid: c }]);

    const forged = await webhooks.sendForgedDelivery(webhooks.receiverUrl(PORTS.faults[0]), {
      uid: existing,
      locationUid: a,
    });
    expect(forged.status).toBe(401);
    await webhooks.expectEachVersionOnce(t.config, t.expected);

    // The sender's faults happened, the delayed and reordered deliveries included.
    expect(faults.stats().faults).toMatchObject({
      badSignature: 1,
      duplicate: 1,
      replay: 1,
      delay: 1,
      reorder: 1,
      drop: 2,
    });
    const [taker, other] = t.metrics;
    expect(await webhooks.deliveries(taker, 'bad_signature')).toBe(2);
    expect(await webhooks.deliveries(taker, 'replayed')).toBe(2);
    expect(await webhooks.deliveries(taker, 'accepted')).toBe(6);
    expect(await counterValue(other.webhookDeliveries)).toBe(0);

    // The dropped changes count as missed at their owners once webhooks.missedGraceMs (1 s) has passed with no
    // delivery for them: each owner's next delivery settles it.
    const droppedPublishedAt = Date.now();
    await eventually(() => Date.now() > droppedPublishedAt + 1_000, 5_000, 'the grace of the dropped ones');
    await changes(t, first, [{ locationUid: b }]);
    await changes(t, second, [{ locationUid: a }]);
    // One dropped change is each owner's: each counts its own.
    const metricsOf = (owner: RunningConnector) => t.metrics[t.instances.indexOf(owner) as 0 | 1];
    const missed = async (owner: RunningConnector) => counterValue(metricsOf(owner).webhookMissedDeliveries);
    await eventually(
      async () => (await missed(first)) === 1 && (await missed(second)) === 1,
      10_000,
      'one missed delivery at each owner',
    );
    expect(await webhooks.deliveries(taker, 'accepted')).toBe(8);
    await webhooks.expectEachVersionOnce(t.config, t.expected);
  });

  it('nudges the owner when the nudge was written while its nudge reader rejoined its group', async () => {
    const t = await twoInstances(54, PORTS.rejoin, { reconcileIntervalMs: 24 * 3_600_000 });
    const name = t.config.connector.name;
    const kafka = testKafka();
    const admin = kafka.admin();
    await admin.connect();
    closing.push(() => admin.disconnect());
    // Each instance's nudge group is `<name>-nudges-<host>-<pid>-<its start time>`: the later start is `second`.
    const { groups } = await admin.listGroups();
    const nudgeGroups = groups
      .map((g) => g.groupId)
      .filter((id) => id.startsWith(`${name}-nudges-`))
      .sort((x, y) => Number(x.split('-').at(-1)) - Number(y.split('-').at(-1)));
    expect(nudgeGroups).toHaveLength(2);
    const [first, second] = t.instances;
    const readerGroup = nudgeGroups[1] as string;
    const topic = `${t.config.kafka.offsetsTopic}-nudges`;
    // A location of the second, and the partition of the nudge topic its nudges are written to.
    const gapLocation = owned(second)[0] as string;
    const gapPartition = keyPartition(offsetKey(name, gapLocation), 4);
    // Three more members join the second's nudge group: each holds a partition, the reader only one, until they
    // leave and it rejoins with all four. They read nothing and commit nothing. kafkajs's round-robin assignor
    // hands the sorted member ids (`<client id>-<uuid>`) the partitions in order: the extra members' client id
    // sorts them all before the reader's (which then holds partition 3), or all after it when the gap is on 3
    // (the reader then holds partition 0).
    const readerClientId = t.config.kafka.clientId ?? name;
    const clientId = gapPartition === 3 ? `${readerClientId}~extra` : '!extra';
    const assigned: number[][] = [[], [], []];
    const members = [0, 1, 2].map(() =>
      testKafka(clientId).consumer({
        groupId: readerGroup,
        sessionTimeout: 6_000,
        heartbeatInterval: 500,
        rebalanceTimeout: 10_000,
      }),
    );
    const leave = async () => {
      await Promise.all(members.map((member) => member.disconnect()));
    };
    closing.push(leave);
    await Promise.all(
      members.map(async (member, i) => {
        member.on(member.events.GROUP_JOIN, ({ payload }) => {
          assigned[i] = payload.memberAssignment[topic] ?? [];
          member.pause([{ topic }]);
        });
        await member.connect();
        await member.subscribe({ topic, fromBeginning: false });
        await member.run({ autoCommit: false, eachMessage: async () => undefined });
      }),
    );
    // Each member's latest assignment: once the three hold three partitions, the reader holds the fourth.
    await eventually(
      () => new Set(assigned.flat()).size === 3 && assigned.every((a) => a.length === 1),
      60_000,
      'the extra members holding three partitions',
    );
    expect(assigned.flat(), 'the partitions away from the reader').toContain(gapPartition);

    const before = published(second);
    t.expected.push(t.sandbox.admin.upsertCall({ locationUid: gapLocation }));
    await eventually(
      async () => (await webhooks.deliveries(t.metrics[0], 'accepted')) === 1,
      20_000,
      'the delivery taken (its nudge written)',
    );
    expect(published(second)).toBe(before);
    await leave(); // the extra members leave: the reader rejoins
    await eventually(() => published(second) >= before + 1, 60_000, 'the owner nudged after its rejoin');
    await webhooks.expectEachVersionOnce(t.config, t.expected);
    expect(published(first)).toBeGreaterThan(0);
  });

  it('refuses as replayed, nudging nothing, a delivery taken by one instance and replayed to the other', async () => {
    const t = await twoInstances(55, PORTS.replayElsewhere, { reconcileIntervalMs: 24 * 3_600_000 });
    const second = t.instances[1];
    const location = owned(second)[0] as string;
    const uid = t.sandbox.admin.truth(location)[0]!.uid;
    // One signed request, as an attacker on the wire captures it: taken by the first instance...
    const secret = t.sandbox.admin.webhooks.secret;
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const id = `msg_${uniqueName('replayed').replaceAll('-', '')}`;
    const seconds = Math.floor(Date.now() / 1000);
    const body = Buffer.from(JSON.stringify({ type: 'call.updated', data: { uid, locationUid: location } }));
    const send = (port: number) =>
      fetch(webhooks.receiverUrl(port), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(seconds),
          'webhook-signature': standardWebhooksSignature(key, id, seconds, body),
        },
        body,
      });
    const nudgedAtSecond = () => counterValue(t.metrics[1].webhookNudgeOutcomes);
    const before = await nudgedAtSecond();
    const taken = await send(PORTS.replayElsewhere[0]);
    expect(taken.status).toBe(202);
    // ...whose nudge the second, the location's owner, has read (it acted on it)...
    await eventually(async () => (await nudgedAtSecond()) === before + 1, 20_000, 'the owner read the nudge');

    // ...then sent again to the second: refused as a replay, nothing nudged.
    const replayed = await send(PORTS.replayElsewhere[1]);
    expect(replayed.status).toBe(200);
    expect(await replayed.json()).toEqual({ status: 'replayed' });
    expect(await webhooks.deliveries(t.metrics[1], 'replayed')).toBe(1);
    expect(await webhooks.deliveries(t.metrics[1], 'accepted')).toBe(0);
    expect(await counterValue(t.metrics[1].webhookNudges)).toBe(0);
    const nudges = (await readCommitted(testKafka(), `${t.config.kafka.offsetsTopic}-nudges`)).filter(
      (r) => decodeNudge(r.value)?.uid === uid,
    );
    expect(nudges, 'the nudges written for the call').toHaveLength(1);
    expect(await nudgedAtSecond()).toBe(before + 1);
  });
});
