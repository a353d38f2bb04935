/**
 * Distributed mode across real processes (issue 14 point 4): built CLIs of one connector name share the
 * locations of one in-process sandbox through the Kafka group, while live updates and new calls keep pages
 * flowing. One sequence shares the processes (CI time): three instances split the locations; one is killed
 * with SIGKILL and the others take its locations; one is SIGSTOPped inside a transaction past its session
 * timeout and resumed, meets the new owner's fencing (asserted: the fault path was taken) and rejoins; two are added and one removed. Throughout, a background watcher samples every instance's
 * /status: a partition that two instances hold in the same generation must be let go by the old holder within
 * the handover's bound (eager rebalancing: the old holder learns of the new assignment when the new one does,
 * and its page in flight is fenced meanwhile); held longer, it is two owners. At the end a read_committed
 * reader must find every current call version of the sandbox exactly once: a stale page written by the
 * paused instance, or a page polled twice across a handover, would show as a doubled version.
 *
 * Timing is never asserted by sleeping or by the clock: each phase waits for an observable condition (statuses),
 * and the takeover after the kill is held to its order (the survivors own the orphaned locations in a generation
 * after the one before the kill, and traverse them after it). How long it took is logged as a figure; the
 * bench measures it (bench/distributed.ts, "takeover after kill -9").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedCalls } from '../../support/connector.js';
import { doubledAndMissing } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import {
  alive,
  awaitSettled,
  diagnostics,
  metricOf,
  statusOf,
  traversedSince,
  watchOwnership,
  type DistributedStatus,
  type Instance,
} from '../../support/distributed.js';
import { eventually } from '../../support/kafka.js';
import { pauseInsideTransaction, wakeToFaultPath } from '../../support/pause.js';

const SESSION_TIMEOUT_MS = 6000;
const POLL_INTERVAL_MS = 500;
/** Bounds how long a revoked partition's page in flight may go on (poll.shutdownTimeoutMs). */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** A partition may be held by its old and its new owner until the old one's page in flight ends: at most the
 * bound above, plus this for the status to show it on a loaded machine. Longer is two owners for real. */
const OVERLAP_SLACK_MS = 5_000;

describe('connector processes sharing one name in distributed mode', () => {
  let scenario: ConnectorScenario;

  const start = (name: string): Instance => scenario.startInstance(name);
  const answering = (): Instance[] => scenario.instances.filter((i) => alive(i) && !i.paused);
  const settled = (
    names: string[],
    also?: (views: Map<string, DistributedStatus>) => boolean,
  ): Promise<Map<string, DistributedStatus>> =>
    awaitSettled(scenario.instances, scenario.sandbox.locations, names, also);

  const owned = (status: DistributedStatus | undefined): string[] => (status?.tasks ?? []).map((t) => t.id);

  beforeAll(async () => {
    scenario = await connectorScenario({
      mode: 'distributed',
      sandbox: {
        data: { seed: 41, locations: 24, callsPerLocation: 30, privateRatio: 0.3 },
        // Pages keep coming all along: changed calls move to the end of their location, new ones arrive.
        live: { updatesPerSecond: 4, createsPerSecond: 3 },
        // Latency keeps pages and transactions in flight when an instance is killed or paused.
        faults: { latency: { medianMs: 10, p99Ms: 60 } },
      },
      connector: {
        api: { pageSize: 20 },
        poll: {
          intervalMs: POLL_INTERVAL_MS,
          maxLocationsInFlight: 4,
          shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
        },
        kafka: {
          offsetsTopicPartitions: 6,
          groupSessionTimeoutMs: SESSION_TIMEOUT_MS,
          groupHeartbeatIntervalMs: 1000,
        },
      },
    });
  });

  afterAll(() => scenario.close());

  it('gives every location exactly one owner through kill -9, SIGSTOP, scale-up and scale-down, and publishes every call version once', async () => {
    const { sandbox, instances } = scenario;
    const watcher = watchOwnership(answering, SHUTDOWN_TIMEOUT_MS + OVERLAP_SLACK_MS);

    // (a) Three instances started together split the locations.
    const [i1, i2, i3] = [start('i1'), start('i2'), start('i3')];
    let views = await settled(['i1', 'i2', 'i3']);
    for (const [name, status] of views) {
      expect(status.assignment.partitions.length, name).toBeGreaterThan(0);
      expect(status.tasks.length, `${name} owns locations`).toBeGreaterThan(0);
    }
    const ownedGauges = await Promise.all(
      [i1, i2, i3].map((i) => metricOf(i, 'calls_connector_owned_locations')),
    );
    expect(ownedGauges.reduce((sum, n) => (sum ?? 0) + (n ?? 0), 0)).toBe(sandbox.locations.length);

    // (b) kill -9 one: the others take its locations (assigned, and each traversed by its new owner).
    const orphaned = owned(views.get('i3'));
    const generationAtKill = Math.max(...[...views.values()].map((s) => s.assignment.generationId ?? 0));
    const killedAt = Date.now();
    i3.child.kill('SIGKILL');
    await i3.exited;
    const afterKill = await settled(['i1', 'i2'], traversedSince(orphaned, killedAt));
    const takeoverMs = Date.now() - killedAt;
    // The order of a takeover: through the group (a later generation), then a traversal by the new owner.
    for (const [name, status] of afterKill)
      expect(status.assignment.generationId ?? 0, name).toBeGreaterThan(generationAtKill);
    // The metrics tell the same story: nothing unowned as the survivors see the group, handovers recorded.
    await eventually(
      async () =>
        (await Promise.all([i1, i2].map((i) => metricOf(i, 'calls_connector_unowned_locations')))).every(
          (n) => n === 0,
        ),
      30_000,
      'calls_connector_unowned_locations back to 0 on the survivors',
    );
    const handovers = await Promise.all(
      [i1, i2].map((i) => metricOf(i, 'calls_connector_location_handover_seconds_count')),
    );
    expect(handovers.reduce((sum, n) => (sum ?? 0) + (n ?? 0), 0)).toBeGreaterThan(0);

    // (c) SIGSTOP one past its session timeout, inside one of its transactions: the other takes everything
    // (its producers fencing the paused one's); SIGCONT: the paused one's transaction meets that fencing, it
    // drops the partition (KAFKA_PARTITION_TAKEN_OVER) and rejoins. The pause is taken while a transaction of
    // its own is open on a partition of the offsets topic it owns (only it writes there), so the woken
    // instance always has a commit to attempt: a pause between two transactions would prove nothing.
    const before = await statusOf(i2);
    const generationBefore = before?.assignment.generationId ?? null;
    const held = owned(before);
    const ownPartitions = before?.assignment.partitions ?? [];
    expect(ownPartitions.length, 'i2 owns partitions of the offsets topic').toBeGreaterThan(0);
    const pausedOutput = i2.output().length;
    i2.paused = true;
    await pauseInsideTransaction(i2.child, scenario.config.kafka.offsetsTopic, ownPartitions);
    const pausedAt = Date.now();
    await settled(['i1'], traversedSince(held, pausedAt));
    const pausedTakeoverMs = Date.now() - pausedAt;
    // Woken, the fault path: its open transaction met the new owner's fencing and it dropped the partition,
    // rather than committing (a doubled page) or re-initialising the producer (fencing i1 back).
    await wakeToFaultPath(
      i2,
      pausedOutput,
      'KAFKA_PARTITION_TAKEN_OVER',
      'the woken instance met the fencing (KAFKA_PARTITION_TAKEN_OVER)',
    );
    views = await settled(['i1', 'i2']);
    expect(alive(i2), diagnostics(instances)).toBe(true);
    expect(views.get('i2')?.assignment.generationId ?? 0).toBeGreaterThan(generationBefore ?? 0);

    // (d) Scale up by two, then down by one (graceful: SIGTERM), while pages flow.
    const [i4, i5] = [start('i4'), start('i5')];
    views = await settled(['i1', 'i2', 'i4', 'i5']);
    for (const [name, status] of views) expect(status.assignment.partitions.length, name).toBeGreaterThan(0);
    const leaving = owned(views.get('i4'));
    const leftAt = Date.now();
    i4.child.kill('SIGTERM');
    expect(await i4.exited, i4.output()).toBe(0);
    await settled(['i1', 'i2', 'i5'], traversedSince(leaving, leftAt));

    // (e) Quiesce: no more changes; once every location is at the sandbox's newest call, stop everyone.
    sandbox.admin.setLive(false);
    const newest = new Map(
      sandbox.locations.map((l) => [l, Date.parse(sandbox.admin.truth(l).at(-1)?.updatedAt ?? '')] as const),
    );
    await settled(['i1', 'i2', 'i5'], (v) =>
      [...v.values()].every((s) =>
        s.tasks.every(
          (t) =>
            t.offset.cursor === null &&
            t.offset.watermark !== null &&
            Date.parse(t.offset.watermark) === newest.get(t.id),
        ),
      ),
    );
    const watch = await watcher.stop();
    // The figures (docs/scaling.md quotes them): one line, so CI output stays short.
    console.info(
      `distributed: takeover after kill -9 ${takeoverMs} ms (${orphaned.length} locations; session timeout ` +
        `${SESSION_TIMEOUT_MS} ms + poll interval ${POLL_INTERVAL_MS} ms), after SIGSTOP ${pausedTakeoverMs} ms; ` +
        `resumed instance fenced on its transaction in flight; ` +
        `${watch.overlaps} partition(s) held by old and new owner during a handover, longest ${watch.longestOverlapMs} ms ` +
        `(${watch.samples} status samples)`,
    );
    expect(watch.samples).toBeGreaterThan(20);
    expect(watch.persistent).toEqual([]);
    for (const instance of [i1, i2, i5]) instance.child.kill('SIGTERM');
    for (const instance of [i1, i2, i5]) expect(await instance.exited, instance.output()).toBe(0);

    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(scenario.kafka, scenario.config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  });
});
