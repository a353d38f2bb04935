/**
 * The parent side of bench/sandbox-process.ts: a sandbox in a child process, so that what the bench process
 * measures (CPU time, RSS) is the connector's alone.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataOptions } from '../packages/sandbox/src/data/generator.js';
import type {
  SandboxOptions,
  SandboxStats,
  WebhookDeliveryRecord,
  WebhookStats,
} from '../packages/sandbox/src/index.js';
import type { WorkerReady } from './sandbox-worker.js';

export interface SandboxChild {
  ready: WorkerReady;
  /** The sandbox process's id (for its CPU time). */
  pid: number | undefined;
  /** The sandbox's CA, written to a file for api.caFile. */
  caFile: string;
  stats(): Promise<SandboxStats>;
  /** Every current call version of the sandbox, as `uid@updatedAt` (ISO). */
  truth(): Promise<string[]>;
  /** The webhook dispatcher's counters and its last deliveries (the last 1000). */
  webhooks(): Promise<{ stats: WebhookStats; deliveries: WebhookDeliveryRecord[] }>;
  close(): Promise<void>;
}

export async function startSandboxChild(
  locations: number,
  calls: number,
  options: Pick<SandboxOptions, 'faults' | 'live' | 'webhooks' | 'port'> & {
    /** Data set options beyond the size (same-instant groups, ratios); seed 1 unless given. */
    data?: Omit<DataOptions, 'locations' | 'callsPerLocation'>;
  } = {},
): Promise<SandboxChild> {
  const child = fork(
    new URL('./sandbox-process.js', import.meta.url),
    [String(locations), String(calls), JSON.stringify(options)],
    { execArgv: ['--max-old-space-size=8192'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  // Each question waits for the child's answer or its exit, so a sandbox that died fails the bench instead of
  // hanging it.
  const exited = once(child, 'exit').then(([code]: unknown[]) => {
    throw new Error(`the sandbox process exited (code ${String(code)})`);
  });
  exited.catch(() => undefined);
  const ask = async <T>(question?: string): Promise<T> => {
    if (question !== undefined) child.send(question);
    const [answer] = (await Promise.race([once(child, 'message'), exited])) as [T];
    return answer;
  };
  const ready = await ask<WorkerReady>();
  const dir = await mkdtemp(join(tmpdir(), 'calls-bench-'));
  const caFile = join(dir, 'sandbox-ca.pem');
  await writeFile(caFile, ready.caCertPem ?? '');
  return {
    ready,
    pid: child.pid,
    caFile,
    stats: async () => (await ask<{ stats: SandboxStats }>('stats')).stats,
    truth: async () => (await ask<{ truth: string[] }>('truth')).truth,
    webhooks: async () =>
      (await ask<{ webhooks: { stats: WebhookStats; deliveries: WebhookDeliveryRecord[] } }>('webhooks'))
        .webhooks,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exit = once(child, 'exit');
      if (child.connected) child.send('close');
      // A sandbox that does not close within 10 s is killed: a bench never leaves a process behind.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
    },
  };
}
