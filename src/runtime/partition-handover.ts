/**
 * Distributed mode's handover: turns the group's assignments (kafka/group/partition-ownership.ts) into work.
 * For each partition of the offsets topic this instance holds, a sink and the scheduled locations whose
 * offset keys hash there; this module takes partitions over and lets them go, one step at a time.
 *
 * Taking over partition P (assigned, or still assigned after being dropped): open P's sink (exactly-once:
 * a transactional producer with P's own transactional id, whose initialisation fences the previous owner and
 * settles its open transaction), THEN read P of the offsets topic to its end (read_committed), then hand
 * P's locations to the scheduler with those offsets, due at once. A partition holding none of the
 * configured locations costs nothing (no producer, no read). A takeover that fails (Kafka unavailable) is
 * tried again after `retryDelayMs` while P stays assigned.
 *
 * Letting P go (revoked): the scheduler stops taking pages of P's locations; a page in flight may finish for
 * up to `revokeBoundMs`, then it is aborted; then P's sink is closed within the same bound (what it has not
 * committed is aborted, at the latest by the next owner's initialisation).
 *
 * Fenced (taken over): P's sink was fenced by a new owner whose assignment this instance has not seen yet
 * (a rebalance in progress, or it was paused past its session timeout). P is dropped at once, with a warning
 * and calls_connector_partitions_taken_over_total, never with a write after it. Should P still be assigned
 * here once two heartbeats succeeded after the drop (the group is stable in a generation that gives P to this
 * instance: the fencing came from a member of an older generation), P is taken over again.
 *
 * Contract: the ownership module calls `onAssignment` / `onHeartbeat`, the sinks `takenOver`; all the work is
 * queued and runs one step at a time (an assignment superseded while queued is skipped: the newer one decides).
 * `close()` at shutdown, after the scheduler stopped: closes the sinks within the bound.
 */
import { diffAssignment } from '../kafka/group/assignment.js';
import type { Assignment } from '../kafka/group/partition-ownership.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationSync } from '../sync/location-sync.js';
import type { LocationOffset } from '../sync/model.js';
import type { RecordSink } from '../sync/ports.js';
import type { Scheduler } from '../sync/scheduler.js';
import type { Clock } from '../time/clock.js';

export type PartitionSink = RecordSink & { close(timeoutMs?: number): Promise<void> };

/** What the handover needs from Kafka and the sync core, wired by runtime/connector.ts. */
export interface PartitionWork {
  /** Builds and starts P's sink; `takenOver` is called if it is fenced later. */
  openSink(partition: number, takenOver: () => void): Promise<PartitionSink>;
  /** Reads the partitions of the offsets topic to their end (read_committed): stored offsets by location. */
  loadOffsets(partitions: readonly number[]): Promise<Map<string, LocationOffset>>;
  /** A LocationSync for a location taken over, starting from its stored offset (undefined: none stored). */
  syncFor(
    locationUid: string,
    partition: number,
    offset: LocationOffset | undefined,
    sink: RecordSink,
  ): LocationSync;
}

export interface PartitionHandoverOptions {
  /** The configured locations by offsets-topic partition (group/location-partition.ts). */
  locationsByPartition: ReadonlyMap<number, readonly string[]>;
  work: PartitionWork;
  scheduler: Pick<Scheduler, 'add' | 'remove'>;
  metrics: ConnectorMetrics;
  logger: Logger;
  clock: Clock;
  /** How long a revoked location's page in flight may go on, and a revoked sink may take to close. */
  revokeBoundMs: number;
  retryDelayMs: number;
}

interface Held {
  /** null: the partition holds no configured location. */
  sink: PartitionSink | null;
  uids: readonly string[];
}

export class PartitionHandover {
  private readonly held = new Map<number, Held>();
  private queue: Promise<void> = Promise.resolve();
  private latest: Assignment | null = null;
  /** The next step must let go of everything first (joined as a new member). */
  private renew = false;
  /** Partitions dropped as taken over while still assigned: heartbeats seen since, and when. */
  private readonly dropped = new Map<number, { heartbeats: number; at: number }>();
  private closed = false;
  private readonly log: Logger;

  constructor(private readonly options: PartitionHandoverOptions) {
    this.log = options.logger.child({ component: 'partition-handover' });
  }

  /** Partitions held now (taken over and not let go). */
  get partitions(): number[] {
    return [...this.held.keys()].sort((a, b) => a - b);
  }

  /** Locations scheduled here now. */
  get locations(): number {
    let count = 0;
    for (const { uids } of this.held.values()) count += uids.length;
    return count;
  }

  onAssignment(assignment: Assignment): void {
    this.latest = assignment;
    if (assignment.fresh) this.renew = true;
    this.dropped.clear();
    this.options.metrics.rebalances.inc();
    this.enqueue(() => this.apply(assignment, assignment.rebalanceStartedAt));
  }

  onHeartbeat(): void {
    const latest = this.latest;
    for (const [partition, drop] of this.dropped) {
      if (latest === null || !latest.partitions.includes(partition)) {
        this.dropped.delete(partition);
        continue;
      }
      drop.heartbeats += 1;
      if (drop.heartbeats < 2) continue;
      this.dropped.delete(partition);
      this.log.warn(
        { partition, generationId: latest.generationId },
        'a partition dropped as taken over is still assigned to this instance: taking it over again',
      );
      this.enqueue(() => this.apply(latest, drop.at));
    }
  }

  /** Resolves once every step queued so far has run (tests; shutdown). */
  async idle(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.queue) {
      seen = this.queue;
      await seen;
    }
  }

  /** Lets go of everything (shutdown; the scheduler has stopped). */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.revoke(this.partitions, 'shutdown');
  }

  private enqueue(step: () => Promise<void>): void {
    this.queue = this.queue
      .then(() => (this.closed ? undefined : step()))
      .catch((error: unknown) => this.log.error({ err: error }, 'partition handover step failed'));
  }

  private async apply(assignment: Assignment, since: number): Promise<void> {
    if (assignment !== this.latest) return; // a newer assignment is queued: it decides
    if (this.renew) {
      this.renew = false;
      await this.revoke(this.partitions, 'rejoined');
    }
    const { assigned, revoked } = diffAssignment(this.partitions, assignment.partitions);
    if (revoked.length > 0) await this.revoke(revoked, 'revoked');
    if (assigned.length > 0) await this.takeOver(assigned, assignment, since);
    this.publish();
  }

  private async takeOver(
    partitions: readonly number[],
    assignment: Assignment,
    since: number,
  ): Promise<void> {
    const { work, locationsByPartition, metrics, clock, scheduler } = this.options;
    const busy = partitions.filter((p) => (locationsByPartition.get(p) ?? []).length > 0);
    for (const p of partitions) if (!busy.includes(p)) this.held.set(p, { sink: null, uids: [] });
    const sinks = new Map<number, PartitionSink>();
    const failed: number[] = [];
    await Promise.all(
      busy.map(async (partition) => {
        try {
          const opened: { sink?: PartitionSink } = {};
          const sink = await work.openSink(partition, () => this.takenOver(partition, opened.sink));
          opened.sink = sink;
          sinks.set(partition, sink);
        } catch (error) {
          failed.push(partition);
          this.log.warn({ err: error, partition }, 'cannot take the partition over yet; trying again');
        }
      }),
    );
    let offsets: Map<string, LocationOffset>;
    try {
      offsets = await work.loadOffsets([...sinks.keys()]);
    } catch (error) {
      this.log.warn(
        { err: error, partitions: [...sinks.keys()] },
        'cannot read the partitions taken over yet; trying again',
      );
      await Promise.all(
        [...sinks.values()].map((sink) => sink.close(this.options.revokeBoundMs).catch(() => undefined)),
      );
      this.retryLater(assignment, since);
      return;
    }
    const now = clock.now();
    let locations = 0;
    for (const [partition, sink] of [...sinks].sort(([a], [b]) => a - b)) {
      const uids = locationsByPartition.get(partition) ?? [];
      scheduler.add(uids.map((uid) => work.syncFor(uid, partition, offsets.get(uid), sink)));
      this.held.set(partition, { sink, uids });
      locations += uids.length;
      metrics.locationHandover.observe(Math.max(0, now - since) / 1000);
    }
    this.log.info(
      {
        partitions: [...partitions].filter((p) => !failed.includes(p)),
        locations,
        generationId: assignment.generationId,
      },
      'partitions assigned',
    );
    if (failed.length > 0) this.retryLater(assignment, since);
  }

  private retryLater(assignment: Assignment, since: number): void {
    void this.options.clock
      .sleep(this.options.retryDelayMs)
      .then(() => this.enqueue(() => this.apply(assignment, since)));
  }

  private async revoke(partitions: readonly number[], reason: string): Promise<void> {
    if (partitions.length === 0) return;
    const letGo = partitions.map((p) => [p, this.held.get(p)] as const);
    const uids = letGo.flatMap(([, held]) => held?.uids ?? []);
    await this.options.scheduler.remove(uids, this.options.revokeBoundMs);
    this.options.metrics.forgetLocations(uids);
    await Promise.all(
      letGo.map(async ([partition, held]) => {
        this.held.delete(partition);
        await held?.sink?.close(this.options.revokeBoundMs).catch((error: unknown) => {
          this.log.warn({ err: error, partition }, 'closing the sink of a revoked partition failed');
        });
      }),
    );
    this.publish();
    this.log.info({ partitions: [...partitions], locations: uids.length, reason }, 'partitions revoked');
  }

  /** P's sink was fenced: another instance owns P now. Called by the sink (once). */
  private takenOver(partition: number, sink: PartitionSink | undefined): void {
    const at = this.options.clock.now();
    this.enqueue(async () => {
      const held = this.held.get(partition);
      if (held === undefined || held.sink !== sink) return; // already let go
      this.options.metrics.partitionsTakenOver.inc();
      this.log.warn(
        { partition, locations: held.uids.length },
        'another instance took this partition over (fenced): dropping it and its locations',
      );
      await this.revoke([partition], 'taken over');
      if (this.latest?.partitions.includes(partition) === true)
        this.dropped.set(partition, { heartbeats: 0, at });
    });
  }

  private publish(): void {
    this.options.metrics.ownedPartitions.set(this.held.size);
    this.options.metrics.ownedLocations.set(this.locations);
  }
}
