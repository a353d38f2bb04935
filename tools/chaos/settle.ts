/**
 * The end of the fault phase: faults off, live changes stopped, every process the driver is replacing
 * stopped; then the wait until every location's stored offset is at the newest `updatedAt` of the truth with
 * no cursor (and no history lane) left, in distributed mode the final ownership, and the final SIGTERM of
 * every instance, which must exit 0.
 */
import { finalOwnership, type DistributedDriver } from './distributed.js';
import { NO_FAULTS } from './faults/background.js';
import type { Fleet } from './instances.js';
import type { TruthCall } from './judge.js';
import type { LiveChanges } from './live-changes.js';
import { sleep, until } from './processes.js';
import { probeTopic } from './progress-probe.js';
import { offsetKey, TOPICS } from './run-names.js';
import type { SandboxAdmin } from './sandbox-admin.js';
import type { RunSummary } from './summary.js';

export interface SettleContext {
  admin: Pick<SandboxAdmin, 'call'>;
  live: Pick<LiveChanges, 'stop' | 'done'>;
  fleet: Fleet;
  brokers: string;
  locations: readonly string[];
  settleTimeoutMs: number;
  distributed: boolean;
  driver: DistributedDriver;
  say: (message: string) => void;
  violation: (message: string) => void;
}

/** What settling found, written as it is known (a failure half-way leaves what was found so far). */
export type SettleFacts = Pick<RunSummary, 'settled' | 'settleMs' | 'finalOwnership' | 'finalExit'>;

export async function settle(context: SettleContext, facts: SettleFacts): Promise<void> {
  const { admin, fleet, locations, say, violation } = context;
  context.live.stop();
  say('fault phase over: faults off, live changes stopped; waiting for the connector to catch up');
  await admin.call('PUT', 'faults', NO_FAULTS);
  await context.live.done;
  const currents = new Set(fleet.currentRunning());
  for (const instance of fleet.all)
    if (instance.running && !currents.has(instance)) {
      fleet.retire(instance);
      instance.signal('SIGTERM');
    }
  for (let slot = 0; slot < fleet.size; slot++) fleet.running(slot);
  const start = Date.now();
  const newest = new Map<string, number>();
  for (const location of locations) {
    const { data } = await admin.call<{ data: TruthCall[] }>(
      'GET',
      `truth?locationUid=${encodeURIComponent(location)}`,
    );
    newest.set(location, Math.max(0, ...data.map((c) => Date.parse(c.updatedAt))));
  }
  /** Where each location's offset records actually are (distributed mode checks it against its owner). */
  const recordPartitions = new Map<string, Set<number>>();
  const caughtUp = async (): Promise<boolean> => {
    const offsets = new Map<string, { cursor: string | null; watermark: string | null; history?: unknown }>();
    await probeTopic(
      context.brokers,
      TOPICS.offsets,
      (m, partition) => {
        const key = m.key?.toString() ?? '';
        recordPartitions.set(key, (recordPartitions.get(key) ?? new Set()).add(partition));
        if (m.value !== null) offsets.set(key, JSON.parse(m.value.toString()) as never);
      },
      2000,
    );
    const behind = locations.filter((l) => {
      const o = offsets.get(offsetKey(l));
      const n = newest.get(l) ?? 0;
      return (
        n > 0 &&
        (o === undefined ||
          o.cursor !== null ||
          o.watermark === null ||
          Date.parse(o.watermark) !== n ||
          // A split location has caught up only when its history lane reached T0 too (issue 23).
          (o.history !== undefined && o.history !== null))
      );
    });
    if (behind.length > 0) say(`settling: ${behind.length} of ${locations.length} locations behind`);
    return behind.length === 0;
  };
  // Every 5 s: with webhooks on, the last changes whose delivery was dropped wait for reconciliation (every 12 s),
  // and a coarser probe would add its granularity to every run.
  facts.settled = await until(caughtUp, context.settleTimeoutMs, 5000);
  facts.settleMs = Date.now() - start;
  if (!facts.settled) violation(`the connector did not catch up within ${context.settleTimeoutMs / 1000} s`);
  if (context.distributed) {
    facts.finalOwnership = await finalOwnership(context.driver, (location) => [
      ...(recordPartitions.get(offsetKey(location)) ?? []),
    ]);
    say(`final ownership ${facts.finalOwnership}`);
  }
  const exits = await Promise.all(
    fleet.currentRunning().map(async (last) => {
      fleet.retire(last);
      last.signal('SIGTERM');
      const exit = await Promise.race([last.exited, sleep(60_000).then(() => null)]);
      const text = exit === null ? 'no exit within 60 s of SIGTERM' : `exit ${exit.code ?? exit.signal}`;
      fleet.fact(last).finalExit = text;
      if (exit === null || exit.code !== 0) violation(`final SIGTERM of ${fleet.label(last)}: ${text}`);
      return context.distributed ? `${fleet.label(last)} ${text}` : text;
    }),
  );
  facts.finalExit = exits.join(', ');
  say(`settled=${facts.settled} after ${(facts.settleMs / 1000).toFixed(0)} s; final ${facts.finalExit}`);
}
