/**
 * The one ownership seam of both modes: turns assignments of offsets-topic partitions into work. For each
 * partition this instance holds, a sink and the scheduled locations whose offset keys hash there; this module
 * takes partitions over and lets them go, one step at a time. Distributed mode feeds it the instances group's
 * assignments (kafka/group/instance-presence.ts); single mode one fixed assignment of every partition at start
 * (runtime/steps/ownership.ts).
 *
 * Producer scopes: the partitions taken over are grouped into scopes (`scopesOf`), one sink each: distributed
 * exactly-once, one per partition (transactional id `…-p<P>`); single mode, one for all of them (the connector's
 * transactional id). A scope is taken over and let go as a whole.
 *
 * Taking over a scope (assigned, or still assigned after being dropped): open its sink (exactly-once: a
 * transactional producer whose initialisation fences the previous owner and settles its open transaction), THEN
 * read its partitions of the offsets topic to their end (read_committed), then hand its locations to the
 * scheduler with those offsets, due at once. A scope holding none of the configured locations costs nothing (no
 * producer, no read). A takeover from the group that fails (Kafka unavailable) is tried again after
 * `retryDelayMs` while the partitions stay assigned; the fixed takeover (`assignFixed`) fails instead, for the
 * start-up to wait or stop.
 *
 * Letting go (revoked): the scheduler stops taking pages of the scope's locations; a page in flight may finish for
 * up to `revokeBoundMs`, then it is aborted; then the scope's sink is closed within the same bound (what it has
 * not committed is aborted, at the latest by the next owner's initialisation).
 *
 * Fenced (taken over, distributed mode): a sink was fenced by a new owner whose assignment this instance has not
 * seen yet (a rebalance in progress, or it was paused past its session timeout). Its partitions are dropped at
 * once, with a warning and calls_connector_partitions_taken_over_total, never with a write after it. Should a
 * partition still be assigned here once two heartbeats succeeded after the drop (the group is stable in a
 * generation that gives it to this instance: the fencing came from a member of an older generation), it is taken
 * over again.
 *
 * Contract: the group membership calls `onAssignment` / `onHeartbeat`, or the start-up `assignFixed` once; the
 * sinks call `takenOver`; all the work is queued and runs one step at a time (an assignment superseded while
 * queued is skipped: the newer one decides). `close()` at shutdown, after the scheduler stopped: closes the sinks
 * within the bound.
 */
import { diffAssignment } from '../kafka/group/assignment.js';
import { heldLocationsChange } from './held-locations-change.js';
import type { Assignment } from '../kafka/group/instance-presence.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationSync } from '../sync/location/location-sync.js';
import type { LocationOffset } from '../sync/model.js';
import type { RecordSink } from '../sync/ports.js';
import type { Scheduler } from '../sync/scheduler/scheduler.js';
import type { Clock } from '../time/clock.js';
/** The metrics the handover keeps: what this instance owns, and how ownership moved. */
export type HandoverMetrics = Pick<
  ConnectorMetrics,
  | 'forgetLocations'
  | 'locationHandover'
  | 'ownedLocations'
  | 'ownedPartitions'
  | 'partitionsTakenOver'
  | 'rebalances'
>;

export type PartitionSink = RecordSink & { close(timeoutMs?: number): Promise<void> };

/** What the handover needs from Kafka and the sync core, wired by runtime/steps/ownership.ts. */
export interface HandoverPorts {
  /** `partitions` grouped into producer scopes, one sink each (every partition in exactly one scope). */
  scopesOf(partitions: readonly number[]): number[][];
  /** Builds and starts a scope's sink; `takenOver` is called if it is fenced later (distributed mode). */
  openSink(scope: readonly number[], takenOver: () => void): Promise<PartitionSink>;
  /** Reads the partitions of the offsets topic to their end (read_committed): stored offsets by location. */
  loadOffsets(partitions: readonly number[]): Promise<Map<string, LocationOffset>>;
  /**
   * A LocationSync for a location taken over, starting from its stored offset (undefined: none stored) and
   * writing to its scope's sink (whose commit outcomes say what is stored when that is in doubt).
   */
  syncFor(locationUid: string, offset: LocationOffset | undefined, sink: RecordSink): LocationSync;
}

export interface PartitionHandoverOptions {
  /** The configured locations by offsets-topic partition (group/location-partition.ts). */
  locationsByPartition: ReadonlyMap<number, readonly string[]>;
  ports: HandoverPorts;
  scheduler: Pick<Scheduler, 'add' | 'remove'>;
  metrics: HandoverMetrics;
  logger: Logger;
  clock: Clock;
  /** How long a revoked location's page in flight may go on, and a revoked sink may take to close. */
  revokeBoundMs: number;
  retryDelayMs: number;
  /** Called after each step that may have changed what is held (a takeover, a revoke, a reload). */
  onChanged?: () => void;
}

interface HeldPartition {
  /** null: the partition's scope holds no configured location. Shared by every partition of the scope. */
  sink: PartitionSink | null;
  uids: readonly string[];
}

export class PartitionHandover {
  private readonly held = new Map<number, HeldPartition>();
  private queue: Promise<void> = Promise.resolve();
  private latest: Assignment | null = null;
  /** The next step must let go of everything first (joined as a new member). */
  private mustRevokeAll = false;
  /** Partitions dropped as taken over while still assigned: heartbeats seen since, and when. */
  private readonly droppedAsTakenOver = new Map<number, { heartbeats: number; at: number }>();
  private closed = false;
  private readonly log: Logger;
  /** The configured locations by partition: the options' at start, a reload's since (`reconfigure`). */
  private locationsByPartition: ReadonlyMap<number, readonly string[]>;

  constructor(private readonly options: PartitionHandoverOptions) {
    this.log = options.logger.child({ component: 'partition-handover' });
    this.locationsByPartition = options.locationsByPartition;
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

  /** An assignment of the instances group (distributed mode). */
  onAssignment(assignment: Assignment): void {
    this.latest = assignment;
    if (assignment.fresh) this.mustRevokeAll = true;
    this.droppedAsTakenOver.clear();
    this.options.metrics.rebalances.inc();
    void this.enqueue(() => this.apply(assignment, assignment.rebalanceStartedAt));
  }

  onHeartbeat(): void {
    const latest = this.latest;
    for (const [partition, drop] of this.droppedAsTakenOver) {
      if (latest === null || !latest.partitions.includes(partition)) {
        this.droppedAsTakenOver.delete(partition);
        continue;
      }
      drop.heartbeats += 1;
      if (drop.heartbeats < 2) continue;
      this.droppedAsTakenOver.delete(partition);
      this.log.warn(
        { partition, generationId: latest.generationId },
        'a partition dropped as taken over is still assigned to this instance: taking it over again',
      );
      void this.enqueue(() => this.apply(latest, drop.at));
    }
  }

  /**
   * Single mode: takes over the one fixed assignment (`partitions`: all of them) now. Rejects with what failed,
   * holding nothing, when a sink cannot be opened or the offsets cannot be read; may be called again then.
   */
  assignFixed(partitions: readonly number[]): Promise<void> {
    const assignment: Assignment = {
      partitions: [...partitions].sort((a, b) => a - b),
      generationId: null,
      fresh: false,
      rebalanceStartedAt: this.options.clock.now(),
    };
    this.latest = assignment;
    return this.enqueue(async () => {
      const { assigned } = diffAssignment(this.partitions, assignment.partitions);
      await this.takeOver(assigned, assignment, null, 'throw');
      this.updateOwnershipGauges();
    });
  }

  /**
   * The configured locations changed while running (a reload): from now on `locationsByPartition` says which
   * locations each partition holds, for what is held now and for every later takeover. Of the partitions held:
   * a location no longer listed is unscheduled (a page in flight may finish and commit for up to
   * `revokeBoundMs`, then it stops), a location newly listed is scheduled from its stored offset (read again from
   * its partition: it may have run elsewhere before), and a location listed before and after is not touched. A
   * partition held without a sink (it held no location) that now holds some is taken over like an assigned one.
   * Queued after the steps before it; resolves with the uids added and removed here, or rejects when the
   * offsets could not be read (the removals stand; the same call again adds what is missing).
   */
  reconfigure(
    locationsByPartition: ReadonlyMap<number, readonly string[]>,
  ): Promise<{ added: string[]; removed: string[] }> {
    const result = { added: [] as string[], removed: [] as string[] };
    return this.enqueue(async () => {
      const { ports, scheduler, metrics, revokeBoundMs } = this.options;
      this.locationsByPartition = locationsByPartition;
      const held = new Map([...this.held].map(([p, h]) => [p, { hasSink: h.sink !== null, uids: h.uids }]));
      const { removed, adding, takeOver } = heldLocationsChange(held, locationsByPartition);
      result.removed.push(...removed);
      if (result.removed.length > 0) {
        await scheduler.remove(result.removed, revokeBoundMs);
        metrics.forgetLocations(result.removed);
        const gone = new Set(result.removed);
        for (const [partition, held] of this.held)
          this.held.set(partition, { sink: held.sink, uids: held.uids.filter((uid) => !gone.has(uid)) });
      }
      if (adding.size > 0) {
        const offsets = await ports.loadOffsets([...adding.keys()].sort((a, b) => a - b));
        for (const [partition, added] of adding) {
          const held = this.held.get(partition);
          if (held?.sink == null) continue;
          const { sink } = held;
          scheduler.add(added.map((uid) => ports.syncFor(uid, offsets.get(uid), sink)));
          this.held.set(partition, { sink, uids: [...held.uids, ...added] });
          result.added.push(...added);
        }
      }
      if (takeOver.length > 0 && this.latest !== null) {
        for (const partition of takeOver) this.held.delete(partition);
        await this.takeOver(takeOver, this.latest, null, 'retry');
        for (const partition of takeOver) result.added.push(...(this.held.get(partition)?.uids ?? []));
      }
      this.updateOwnershipGauges();
      if (result.added.length > 0 || result.removed.length > 0)
        this.log.info(
          { added: result.added.length, removed: result.removed.length },
          'configured locations changed: scheduled the new ones, unscheduled the ones removed',
        );
    }).then(() => result);
  }

  /** Resolves once every step queued so far has run (tests; shutdown). */
  async idle(): Promise<void> {
    let seen: Promise<void> | undefined;
    while (seen !== this.queue) {
      seen = this.queue;
      await seen;
    }
  }

  /**
   * Lets go of everything (shutdown; the scheduler has stopped). The locations stay in the stopped scheduler,
   * so the runtime's status() still shows their final offsets after close (a caller's summary, tests).
   */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    await this.revoke(this.partitions, 'shutdown', { keepScheduled: true });
  }

  /** Queues a step; the promise returned rejects with its error (the queue goes on: the error is logged). */
  private enqueue(step: () => Promise<void>): Promise<void> {
    const run = this.queue.then(() => (this.closed ? undefined : step()));
    this.queue = run.catch((error: unknown) =>
      this.log.error({ err: error }, 'partition handover step failed'),
    );
    return run;
  }

  private async apply(assignment: Assignment, since: number): Promise<void> {
    if (assignment !== this.latest) return; // a newer assignment is queued: it decides
    if (this.mustRevokeAll) {
      this.mustRevokeAll = false;
      await this.revoke(this.partitions, 'rejoined');
    }
    const { assigned, revoked } = diffAssignment(this.partitions, assignment.partitions);
    if (revoked.length > 0) await this.revoke(revoked, 'revoked');
    if (assigned.length > 0) await this.takeOver(assigned, assignment, since, 'retry');
    this.updateOwnershipGauges();
  }

  /**
   * `since`: when the partitions lost their previous owner (calls_connector_location_handover_seconds), null for
   * the fixed assignment. `onFailure`: retry later (the group's assignment stays), or throw holding nothing.
   */
  private async takeOver(
    partitions: readonly number[],
    assignment: Assignment,
    since: number | null,
    onFailure: 'retry' | 'throw',
  ): Promise<void> {
    const { ports, metrics, clock, scheduler } = this.options;
    const { locationsByPartition } = this;
    const holdsLocations = (p: number) => (locationsByPartition.get(p) ?? []).length > 0;
    const scopes = ports.scopesOf(partitions);
    const empty = scopes.filter((scope) => !scope.some(holdsLocations)).flat();
    for (const p of empty) this.held.set(p, { sink: null, uids: [] });
    const sinks = new Map<readonly number[], PartitionSink>();
    const failed: number[] = [];
    let failure: unknown;
    await Promise.all(
      scopes
        .filter((scope) => scope.some(holdsLocations))
        .map(async (scope) => {
          try {
            const opened: { sink?: PartitionSink } = {};
            const sink = await ports.openSink(scope, () => this.takenOver(opened.sink));
            opened.sink = sink;
            sinks.set(scope, sink);
          } catch (error) {
            failed.push(...scope);
            failure ??= error;
            if (onFailure === 'retry')
              this.log.warn(
                { err: error, partitions: scope },
                'cannot take the partition over yet; trying again',
              );
          }
        }),
    );
    const giveUp = async (error: unknown) => {
      await Promise.all(
        [...sinks.values()].map((sink) => sink.close(this.options.revokeBoundMs).catch(() => undefined)),
      );
      if (onFailure === 'retry') return this.retryLater(assignment, since ?? clock.now());
      for (const p of empty) this.held.delete(p);
      throw error;
    };
    if (onFailure === 'throw' && failed.length > 0) return giveUp(failure);
    const read = [...sinks.keys()].flat().sort((a, b) => a - b);
    let offsets: Map<string, LocationOffset>;
    try {
      offsets = await ports.loadOffsets(read);
    } catch (error) {
      if (onFailure === 'retry')
        this.log.warn(
          { err: error, partitions: read },
          'cannot read the partitions taken over yet; trying again',
        );
      return giveUp(error);
    }
    const now = clock.now();
    let locations = 0;
    for (const [scope, sink] of [...sinks].sort(([a], [b]) => a[0]! - b[0]!)) {
      for (const partition of [...scope].sort((a, b) => a - b)) {
        const uids = locationsByPartition.get(partition) ?? [];
        // The scheduler takes ScheduledLocations (sync/scheduler/scheduled-location.ts): a LocationSync is one, checked here.
        scheduler.add(uids.map((uid) => ports.syncFor(uid, offsets.get(uid), sink)));
        this.held.set(partition, { sink, uids });
        locations += uids.length;
        if (since !== null && uids.length > 0)
          metrics.locationHandover.observe(Math.max(0, now - since) / 1000);
      }
    }
    this.log.info(
      {
        partitions: [...partitions].filter((p) => !failed.includes(p)),
        locations,
        generationId: assignment.generationId,
      },
      'partitions assigned',
    );
    if (failed.length > 0) this.retryLater(assignment, since ?? now);
  }

  private retryLater(assignment: Assignment, since: number): void {
    void this.options.clock
      .sleep(this.options.retryDelayMs)
      .then(() => this.enqueue(() => this.apply(assignment, since)));
  }

  /**
   * Lets go of `partitions`; a sink is closed once no partition held still shares it. `keepScheduled`: the
   * scheduler has stopped (shutdown), so its locations are left listed rather than removed.
   */
  private async revoke(
    partitions: readonly number[],
    reason: string,
    { keepScheduled = false }: { keepScheduled?: boolean } = {},
  ): Promise<void> {
    if (partitions.length === 0) return;
    const letGo = partitions.map((p) => [p, this.held.get(p)] as const);
    const uids = letGo.flatMap(([, held]) => held?.uids ?? []);
    if (!keepScheduled) {
      await this.options.scheduler.remove(uids, this.options.revokeBoundMs);
      this.options.metrics.forgetLocations(uids);
    }
    for (const [partition] of letGo) this.held.delete(partition);
    const stillHeld = new Set([...this.held.values()].map((held) => held.sink));
    const closing = new Map<PartitionSink, number[]>();
    for (const [partition, held] of letGo) {
      if (held?.sink == null || stillHeld.has(held.sink)) continue;
      closing.set(held.sink, [...(closing.get(held.sink) ?? []), partition]);
    }
    await Promise.all(
      [...closing].map(([sink, scope]) =>
        sink.close(this.options.revokeBoundMs).catch((error: unknown) => {
          this.log.warn({ err: error, partitions: scope }, 'closing the sink of a revoked partition failed');
        }),
      ),
    );
    this.updateOwnershipGauges();
    this.log.info({ partitions: [...partitions], locations: uids.length, reason }, 'partitions revoked');
  }

  /** A sink was fenced: another instance owns its partitions now. Called by the sink (once). */
  private takenOver(sink: PartitionSink | undefined): void {
    const at = this.options.clock.now();
    void this.enqueue(async () => {
      const scope = [...this.held].filter(([, held]) => sink !== undefined && held.sink === sink);
      if (scope.length === 0) return; // already let go
      const partitions = scope.map(([partition]) => partition);
      this.options.metrics.partitionsTakenOver.inc(partitions.length);
      this.log.warn(
        {
          partitions,
          locations: scope.reduce((count, [, held]) => count + held.uids.length, 0),
        },
        'another instance took this partition over (fenced): dropping it and its locations',
      );
      await this.revoke(partitions, 'taken over');
      for (const partition of partitions)
        if (this.latest?.partitions.includes(partition) === true)
          this.droppedAsTakenOver.set(partition, { heartbeats: 0, at });
    });
  }

  private updateOwnershipGauges(): void {
    this.options.metrics.ownedPartitions.set(this.held.size);
    this.options.metrics.ownedLocations.set(this.locations);
    this.options.onChanged?.();
  }
}
