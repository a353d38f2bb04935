/**
 * Distributed mode's own process faults (`--distributed`): several instances of one connector name share the
 * locations through Kafka's group membership, so a fault hits one instance while the others go on, and the
 * group, not the driver, moves the work. Kills, broker kills and registry stops are the single mode's (run.ts,
 * on a random instance); what differs is here:
 *
 * - SIGSTOP (short: past the group session timeout; long: past kafka.transactionTimeoutMs and kafkajs's
 *   request timeout too) of one instance with no replacement: the others must take its partitions (the
 *   handover), and once resumed it must neither fence them back nor exit, but rejoin the group.
 * - Rolling restart of every instance in turn: a new process per slot, ready before the old one gets SIGTERM,
 *   which must exit 0.
 *
 * "Ownership whole" is ownershipProblems() of instances.ts holding for the instances expected to run.
 */
import { ownershipProblems, type Fleet } from './instances.js';
import { sleep, until, type LoggedProcess } from './processes.js';
import type { Random } from './random.js';
import type { PlannedFault } from './schedule.js';

/** How long the driver waits for ownership to become whole after a fault (beyond a SIGSTOP's own pause). */
export const OWNERSHIP_CAP_MS = 120_000;

export interface DistributedDriver {
  fleet: Fleet;
  /** Every configured location and its partition of the offsets topic. */
  partitionOf: () => Promise<ReadonlyMap<string, number>>;
  violation: (message: string) => void;
}

export interface Ownership {
  /** When ownership became whole (epoch ms); null when it did not within the time given. */
  at: number | null;
  /** What was wrong at the last look. */
  problems: string[];
}

/**
 * Waits until the processes `expected()` names (re-evaluated at every look, since the supervisor may restart
 * one meanwhile) are exactly the ones answering, and ownership among them is whole.
 */
export async function awaitOwnership(
  driver: DistributedDriver,
  expected: () => LoggedProcess[],
  timeoutMs: number,
): Promise<Ownership> {
  const partitionOf = await driver.partitionOf();
  let problems: string[] = [];
  const whole = await until(
    async () => {
      const instances = expected();
      problems = ownershipProblems(
        await driver.fleet.views(instances),
        partitionOf,
        instances.map((i) => i.name),
      );
      return problems.length === 0;
    },
    timeoutMs,
    250,
  );
  return { at: whole ? Date.now() : null, problems };
}

const s = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/**
 * SIGSTOP of a random instance for the fault's duration, no replacement: the others take its partitions once
 * its session expires; SIGCONT; it must rejoin. Resolves with the moment it was resumed and the texts for
 * the report (`handoverMs`: SIGSTOP to ownership whole among the others).
 */
export async function distributedSigstop(
  driver: DistributedDriver,
  fault: PlannedFault,
  random: Random,
): Promise<{ end: number; handoverMs: number | null; text: string }> {
  const { fleet } = driver;
  const frozen = fleet.running(random.int(0, fleet.size - 1));
  const label = fleet.label(frozen);
  fleet.fact(frozen).sigstops++;
  frozen.signal('SIGSTOP');
  const stoppedAt = Date.now();
  const others = (): LoggedProcess[] => fleet.currentRunning().filter((p) => p !== frozen);
  const handover = await awaitOwnership(driver, others, fault.durationMs + OWNERSHIP_CAP_MS);
  await sleep(Math.max(0, stoppedAt + fault.durationMs - Date.now()));
  frozen.signal('SIGCONT');
  const wokeAt = Date.now();
  const rejoin = await awaitOwnership(driver, () => fleet.currentRunning(), OWNERSHIP_CAP_MS);
  const handoverMs = handover.at === null ? null : handover.at - stoppedAt;
  const fate = frozen.running
    ? rejoin.at === null
      ? `did NOT rejoin within ${s(OWNERSHIP_CAP_MS)} (${rejoin.problems.slice(0, 3).join('; ')})`
      : `rejoined ${s(rejoin.at - wokeAt)} after SIGCONT`
    : `EXITED ${frozen.exit?.code ?? frozen.exit?.signal} after SIGCONT`;
  const text =
    `${label} stopped ${s(wokeAt - stoppedAt)}, ` +
    (handoverMs === null
      ? `its partitions NOT taken over (${handover.problems.slice(0, 3).join('; ')})`
      : `its partitions taken over in ${s(handoverMs)}`) +
    `, ${fate}`;
  if (handoverMs === null || rejoin.at === null) driver.violation(`SIGSTOP: ${text}`);
  return { end: wokeAt, handoverMs, text };
}

/**
 * Every instance in turn: a new process for its slot, ready (`/readyz`: it has an assignment) before the old
 * one gets SIGTERM, which must exit 0 within 60 s. `handoverMs`: from the first start to ownership whole.
 */
export async function distributedRollingRestart(
  driver: DistributedDriver,
): Promise<{ end: number; handoverMs: number | null; text: string }> {
  const { fleet } = driver;
  const began = Date.now();
  const steps: string[] = [];
  for (let slot = 0; slot < fleet.size; slot++) {
    const old = fleet.running(slot);
    const label = fleet.label(old);
    fleet.retire(old);
    const next = fleet.start(slot);
    const ready = await until(() => fleet.ready(next), 120_000, 500);
    old.signal('SIGTERM');
    const exit = await Promise.race([old.exited, sleep(60_000).then(() => null)]);
    if (exit === null) await fleet.kill9(old);
    const step = `${label} → ${next.name} (${ready ? 'ready' : 'NOT ready'}): ${exit === null ? 'no exit within 60 s of SIGTERM (killed)' : `exit ${exit.code ?? exit.signal}`}`;
    steps.push(step);
    if (exit === null || exit.code !== 0 || !ready) driver.violation(`rolling restart: ${step}`);
  }
  const whole = await awaitOwnership(driver, () => fleet.currentRunning(), OWNERSHIP_CAP_MS);
  const handoverMs = whole.at === null ? null : whole.at - began;
  return {
    end: Date.now(),
    handoverMs,
    text: `${steps.join('; ')}; ownership ${handoverMs === null ? `NOT whole (${whole.problems.slice(0, 3).join('; ')})` : `whole ${s(handoverMs)} after the first start`}`,
  };
}

/**
 * Once every location is caught up: every partition of the offsets topic holding configured locations has
 * exactly one owner among the live instances and every location is owned by the holder of its partition
 * (within OWNERSHIP_CAP_MS), and each location's offset records (`recordPartitionsOf`, read from the topic)
 * are in its key's partition. Fills in each slot's final partitions and locations; resolves with the text
 * for the report.
 */
export async function finalOwnership(
  driver: DistributedDriver,
  recordPartitionsOf: (location: string) => readonly number[],
): Promise<string> {
  const { fleet } = driver;
  const partitionOf = await driver.partitionOf();
  for (const [location, partition] of partitionOf) {
    const found = recordPartitionsOf(location);
    if (found.some((p) => p !== partition))
      driver.violation(
        `offset records of ${location} in partition(s) ${found.join(', ')}, its key's partition is ${partition}`,
      );
  }
  const whole = await awaitOwnership(driver, () => fleet.currentRunning(), OWNERSHIP_CAP_MS);
  const views = await fleet.views(fleet.currentRunning());
  for (const instance of fleet.currentRunning()) {
    const fact = fleet.fact(instance);
    const view = views.get(instance.name);
    fact.finalPartitions = [...(view?.assignment.partitions ?? [])].sort((a, b) => a - b);
    fact.finalLocations = view?.tasks.length ?? 0;
  }
  if (whole.at === null) {
    const text = `NOT whole within ${s(OWNERSHIP_CAP_MS)}: ${whole.problems.join('; ')}`;
    driver.violation(`final ownership ${text}`);
    return text;
  }
  const owners = fleet.facts.map(
    (f) => `${f.slot}: [${f.finalPartitions.join(',')}] ${f.finalLocations} locations`,
  );
  return (
    `whole: ${new Set(partitionOf.values()).size} partitions with locations, each held by one of ` +
    `${fleet.currentRunning().length} instances (${owners.join('; ')})`
  );
}
