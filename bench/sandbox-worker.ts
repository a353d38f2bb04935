/**
 * Runs a sandbox in a worker thread for bench/sandbox.ts, so the server has an event loop of its own and
 * the client's work does not count against it. Receives the data size in workerData, posts back what the
 * client needs, and closes the sandbox when told 'close'.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { startSandbox } from '../packages/sandbox/src/index.js';

export interface WorkerReady {
  baseUrl: string;
  caCertPem: string | null;
  accessToken: string;
  locations: string[];
  /** Listable uids of the first locations, for single-call gets. */
  uids: string[];
  startMs: number;
  heapMb: number;
}

const { locations, calls } = workerData as { locations: number; calls: number };
const heapBefore = process.memoryUsage().heapUsed;
const t0 = performance.now();
const sandbox = await startSandbox({ data: { seed: 1, locations, callsPerLocation: calls } });
const startMs = performance.now() - t0;
const ready: WorkerReady = {
  baseUrl: sandbox.baseUrl,
  caCertPem: sandbox.caCertPem,
  accessToken: sandbox.issueTokens().accessToken,
  locations: sandbox.locations,
  uids: sandbox.locations.slice(0, 200).flatMap((l) => sandbox.admin.truth(l).map((c) => c.uid)),
  startMs,
  heapMb: (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20,
};
parentPort?.postMessage(ready);
parentPort?.once('message', () => {
  void sandbox.close().then(() => parentPort?.close());
});
