/**
 * Freshness across a crash: one connector instance (single mode, exactly-once, an OS process: the built CLI)
 * polls a few locations every second while the sandbox changes calls; it is killed with SIGKILL and started
 * again at once, as a supervisor (systemd, Docker's restart policy, a Kubernetes pod's container) restarts a
 * crashed process, REPETITIONS times. Figures per kill: the delay of the changes made from one interval before the
 * kill to the end of its window (a change's `updatedAt` to a read_committed consumer receiving its record),
 * and where the restart's time goes: the process's start to each of its start-up log lines, and the kill to the
 * new instance's first record. The goal is issue 39's: with no rate limit and a kill -9, p99 ≤ 8 s at 1 s polls.
 *
 * A single-mode instance starting after a kill -9 waits for its killed predecessor's member of the instances
 * group to expire before its producer fences anyone (kafka/group/instance-presence.ts `newest`, a 6 s session):
 * most of the restart.
 *
 * With BENCH_RESTART_INSTANCES above 1 the instances run in distributed mode (issue 39's case of three instances,
 * 12 locations at 500 ms): one of them is killed and started again at once each time; its locations wait for its
 * member of the instances group to expire (`kafka.groupSessionTimeoutMs`, 6 s by default) and are then handed
 * over. "kill to the new instance's first record" is left out there (the others write throughout).
 *
 * Knobs (env): BENCH_RESTART_LOCATIONS (4), BENCH_RESTART_INTERVAL_MS (1000), BENCH_RESTART_UPDATES (changes/s,
 * 2), BENCH_RESTART_CREATES (creations/s, 1), BENCH_RESTART_WINDOW_S (seconds from a kill to the next, 20),
 * BENCH_RESTART_INSTANCES (1).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { writeFile } from 'node:fs/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { benchDocument } from './connector.js';
import { readFirstArrivals } from './lanes.js';
import { get, killInstance, startInstance, stopAll, type Instance } from './instance-process.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const P99 = 'delay p99, changes made around the kill';
/** The start-up log lines timed from the process's start, in the order a start writes them. */
const START_LINES = [
  'metrics, /healthz and /readyz listening',
  'schemas registered',
  'producer ready',
  'connector started',
] as const;

interface Arrival {
  updatedAtMs: number;
  receivedAtMs: number;
}

/** Every location has completed a traversal at the instance that runs it (their /status). */
async function caughtUp(instances: readonly Instance[], locations: number): Promise<boolean> {
  const done = new Set<string>();
  for (const instance of instances) {
    const status = await get(instance, '/status');
    if (status === undefined) return false;
    const tasks =
      (JSON.parse(status) as { tasks?: Array<{ id: string; last_success_at: string | null }> }).tasks ?? [];
    for (const task of tasks) if (task.last_success_at !== null) done.add(task.id);
  }
  return done.size === locations;
}

const seconds = (ms: number) => ms / 1000;

export const restartBench: BenchModule = {
  name: 'restart',
  isolated: true,
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_RESTART_LOCATIONS', 4);
    const intervalMs = envInt('BENCH_RESTART_INTERVAL_MS', 1000);
    const updates = envInt('BENCH_RESTART_UPDATES', 2);
    const creates = envInt('BENCH_RESTART_CREATES', 1);
    const windowMs = envInt('BENCH_RESTART_WINDOW_S', 20) * 1000;
    const count = envInt('BENCH_RESTART_INSTANCES', 1);
    const distributed = count > 1;
    applyKafkajsIdleTimerFix();
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(locations, 20, {
      live: { updatesPerSecond: updates, createsPerSecond: creates },
    });
    const run = `bench-restart-${Date.now().toString(36)}`;
    const file = `${sandbox.caFile.slice(0, sandbox.caFile.lastIndexOf('/'))}/${run}.yaml`;
    const document = benchDocument({
      run,
      sandbox: sandbox.ready,
      caFile: sandbox.caFile,
      stack,
      ...(distributed && { connector: { mode: 'distributed' } }),
      api: { requestsPerSecond: 100, enrich: true },
      poll: { intervalMs },
      metrics: { enabled: true, port: 0 },
      logging: { level: 'info', format: 'json' },
    });
    await writeFile(file, JSON.stringify(document)); // JSON is YAML
    const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const registry = new SchemaRegistry({ host: stack.registryUrl });
    const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
    const arrivals = new Map<string, Arrival>();
    const instances: Instance[] = [];
    const s = new Samples();
    const notes: string[] = [];
    try {
      for (let i = 1; i <= count; i++) instances.push(startInstance(`i${i}`, file));
      let current = instances.at(-1) as Instance;
      const firstDeadline = Date.now() + 120_000;
      while (!(await caughtUp(instances, locations))) {
        const exited = instances.find((i) => i.child.exitCode !== null);
        if (Date.now() > firstDeadline || exited !== undefined)
          throw new Error(
            `${run}: the instances did not catch up\n${(exited ?? current).output().slice(-3000)}`,
          );
        await sleep(200);
      }
      // The connector created the topic; every record from the first on is read.
      await consumer.connect();
      await consumer.subscribe({ topic: run, fromBeginning: true });
      await readFirstArrivals(consumer, registry, arrivals);
      // Steady state before the first kill: the reference the kills are read against.
      const steadyFrom = Date.now();
      await sleep(windowMs);
      const steady = [...arrivals.values()]
        .filter((a) => a.updatedAtMs >= steadyFrom && a.updatedAtMs < steadyFrom + windowMs - 2 * intervalMs)
        .map((a) => a.receivedAtMs - a.updatedAtMs)
        .sort((a, b) => a - b);
      s.add('delay p99, steady state before the kills', 's', seconds(percentile(steady, 0.99)));

      const kills: Array<{ at: number; instance: Instance }> = [];
      for (let rep = 0; rep < REPETITIONS; rep++) {
        await killInstance(current);
        const killedAt = Date.now();
        current = startInstance(`i${count + rep + 1}`, file);
        instances.push(current);
        kills.push({ at: killedAt, instance: current });
        await sleep(windowMs);
        if (current.child.exitCode !== null)
          throw new Error(`${run}: ${current.name} exited\n${current.output().slice(-3000)}`);
      }
      // The last window's changes arrive.
      await sleep(intervalMs + 5_000);

      for (const { at, instance } of kills) {
        const delays = [...arrivals.values()]
          .filter((a) => a.updatedAtMs >= at - intervalMs && a.updatedAtMs < at + windowMs - 2 * intervalMs)
          .map((a) => a.receivedAtMs - a.updatedAtMs)
          .sort((a, b) => a - b);
        s.add('delay p50, changes made around the kill', 's', seconds(percentile(delays, 0.5)));
        s.add(P99, 's', seconds(percentile(delays, 0.99)));
        s.add('delay max, changes made around the kill', 's', seconds(delays.at(-1) ?? Number.NaN));
        s.add('changes made around the kill', 'changes', delays.length);
        const started = instance.firstLogAt('connector started');
        const firstRecord = [...arrivals.values()]
          .filter((a) => started !== undefined && a.receivedAtMs >= started)
          .reduce((first, a) => Math.min(first, a.receivedAtMs), Number.POSITIVE_INFINITY);
        if (!distributed) s.add('kill to the new instance’s first record', 's', seconds(firstRecord - at));
        // Distributed mode has a producer per partition and says "producer ready" for none.
        for (const line of START_LINES.filter((l) => !distributed || l !== 'producer ready')) {
          const logged = instance.firstLogAt(line);
          s.add(`process start to "${line}"`, 's', seconds((logged ?? Number.NaN) - instance.startedAt));
        }
      }
      notes.push(
        `${locations} locations, poll.intervalMs ${intervalMs}, api.requestsPerSecond 100 (no limit in the sandbox), exactly-once, enrichment on; the sandbox changes ${updates} call(s)/s and creates ${creates}/s.`,
        `${REPETITIONS} kills (SIGKILL), each instance started again at once; a kill's changes: made from one interval before it to ${seconds(windowMs - 2 * intervalMs)} s after it. Delay: a read_committed consumer's wall clock on receipt − the record's updatedAt (the sandbox writes its wall clock).`,
        distributed
          ? `${count} instances in distributed mode (kafka.groupSessionTimeoutMs 6 s, the default): the killed instance's locations are handed over once its member of the instances group expired.`
          : 'The restart waits for the killed instance’s member of the instances group to expire (6 s session) before its producer fences anyone: "schemas registered" to "producer ready".',
      );
    } finally {
      await stopAll(instances);
      await consumer.disconnect().catch(() => undefined);
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: `restart: freshness across a kill -9, ${locations} locations at ${seconds(intervalMs)} s${distributed ? `, ${count} instances (distributed)` : ''}`,
      figures: s.figures(),
      goals: distributed
        ? []
        : [atMost('freshness across a kill -9, no limit, 1 s polls: p99 ≤ 8 s', P99, 8)],
      notes,
    };
  },
};
