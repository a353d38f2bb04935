/**
 * Runs a sandbox in a child process for the benchmarks that measure the connector's own CPU and memory
 * (idle, rate-limited, scale, freshness): the bench process's CPU time and RSS are then the connector's
 * alone. Started by startSandboxChild() (bench/sandbox-child.ts) with fork(); receives the data size and the
 * options (faults, live rates) as argv, sends back what the client needs (the same WorkerReady as
 * sandbox-worker.ts), then answers 'stats' with the sandbox's counters, 'truth' with every current call version
 * (`uid@updatedAt`, ISO, for an exactly-once check), 'webhooks' with its webhook counters and last deliveries, and
 * exits when sent 'close' or when the parent disconnects.
 */
import { startSandbox, type SandboxOptions } from '../packages/sandbox/src/index.js';
import type { WorkerReady } from './sandbox-worker.js';

const [locations, calls] = process.argv.slice(2, 4).map((a) => Number.parseInt(a, 10));
const { data, ...options } = JSON.parse(process.argv[4] ?? '{}') as Pick<
  SandboxOptions,
  'faults' | 'live' | 'webhooks' | 'data' | 'port'
>;
const t0 = performance.now();
const sandbox = await startSandbox({
  data: { seed: 1, ...data, locations: locations ?? 1, callsPerLocation: calls ?? 0 },
  ...options,
});
const ready: WorkerReady = {
  baseUrl: sandbox.baseUrl,
  caCertPem: sandbox.caCertPem,
  accessToken: sandbox.issueTokens().accessToken,
  locations: sandbox.locations,
  uids: [],
  startMs: performance.now() - t0,
  heapMb: process.memoryUsage().heapUsed / 2 ** 20,
};
process.send?.(ready);
// The parent gone (ended or crashed) ends the sandbox too: a bench never leaves a process behind.
process.on('disconnect', () => process.exit(0));
process.on('message', (message) => {
  if (message === 'stats') process.send?.({ stats: sandbox.admin.stats() });
  else if (message === 'webhooks')
    process.send?.({
      webhooks: { stats: sandbox.admin.webhooks.stats(), deliveries: sandbox.admin.webhooks.deliveries() },
    });
  else if (message === 'truth')
    process.send?.({
      truth: sandbox.locations.flatMap((l) =>
        sandbox.admin.truth(l).map((c) => `${c.uid}@${new Date(c.updatedAt).toISOString()}`),
      ),
    });
  else void sandbox.close().then(() => process.exit(0));
});
