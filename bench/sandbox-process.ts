/**
 * Runs a sandbox in a child process for bench/idle.ts, so that the bench process's CPU time is the
 * connector's alone. Started with fork(); receives the data size as argv, sends back what the client needs
 * (the same WorkerReady as sandbox-worker.ts), and exits when sent 'close'.
 */
import { startSandbox } from '../packages/sandbox/src/index.js';
import type { WorkerReady } from './sandbox-worker.js';

const [locations, calls] = process.argv.slice(2).map((a) => Number.parseInt(a, 10));
const t0 = performance.now();
const sandbox = await startSandbox({
  data: { seed: 1, locations: locations ?? 1, callsPerLocation: calls ?? 0 },
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
process.once('message', () => {
  void sandbox.close().then(() => process.exit(0));
});
