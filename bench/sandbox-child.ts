/**
 * The parent side of bench/sandbox-process.ts: a sandbox in a child process, so that what the bench process
 * measures (CPU time, RSS) is the connector's alone.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  options: Pick<SandboxOptions, 'faults' | 'live' | 'webhooks'> = {},
): Promise<SandboxChild> {
  const child = fork(
    new URL('./sandbox-process.js', import.meta.url),
    [String(locations), String(calls), JSON.stringify(options)],
    { execArgv: ['--max-old-space-size=8192'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  const [ready] = (await once(child, 'message')) as [WorkerReady];
  const dir = await mkdtemp(join(tmpdir(), 'calls-bench-'));
  const caFile = join(dir, 'sandbox-ca.pem');
  await writeFile(caFile, ready.caCertPem ?? '');
  return {
    ready,
    pid: child.pid,
    caFile,
    stats: async () => {
      child.send('stats');
      const [answer] = (await once(child, 'message')) as [{ stats: SandboxStats }];
      return answer.stats;
    },
    truth: async () => {
      child.send('truth');
      const [answer] = (await once(child, 'message')) as [{ truth: string[] }];
      return answer.truth;
    },
    webhooks: async () => {
      child.send('webhooks');
      const [answer] = (await once(child, 'message')) as [
        { webhooks: { stats: WebhookStats; deliveries: WebhookDeliveryRecord[] } },
      ];
      return answer.webhooks;
    },
    close: async () => {
      child.send('close');
      await once(child, 'exit');
    },
  };
}
