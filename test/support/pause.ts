/**
 * Pausing a connector process (SIGSTOP) at a chosen kind of moment, for tests of what a frozen VM or a stopped
 * container does to the writers around it.
 */
import type { ChildProcess } from 'node:child_process';
import { lastStableOffsets } from '../../tools/chaos/last-stable-offsets.js';
import { eventually } from './kafka.js';
import { stackEndpoints } from './stack.js';

/**
 * Pauses `child` while it has a transaction open on `topic` (some partition's last stable offset below its
 * high watermark, still so a moment later: a commit already under way would have moved it). Only `child` may
 * write to `topic` meanwhile, or another writer's transaction would be taken for its. When the pause lands
 * between two transactions, the process is resumed and paused again a little later. Resolves with the number
 * of tries; throws after `maxTries`.
 */
export async function pauseInsideTransaction(
  child: ChildProcess,
  topic: string,
  partitions: number[],
  maxTries = 100,
): Promise<number> {
  const broker = stackEndpoints().brokers[0] ?? '127.0.0.1:9092';
  const open = async () =>
    (await lastStableOffsets(broker, topic, partitions)).some((p) => p.lastStable < p.high);
  for (let attempt = 1; attempt <= maxTries; attempt++) {
    child.kill('SIGSTOP');
    if ((await open()) && (await settleThen(open))) return attempt;
    child.kill('SIGCONT');
    await settleThen(async () => undefined, 10 + ((attempt * 37) % 90)); // land elsewhere in the cycle
  }
  throw new Error(`paused ${maxTries} times, never inside a transaction on ${topic}`);
}

async function settleThen<T>(check: () => Promise<T>, ms = 300): Promise<T> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  return check();
}

/**
 * The fault path of a pause: waits until the woken process logged `text` after `from` (its output's length
 * when the pause began), so that a test whose pause caught nothing fails instead of passing vacuously. The
 * failure carries what the process logged instead.
 */
export async function awaitFaultPath(
  process: { output(): string },
  from: number,
  text: string,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const since = () => process.output().slice(from);
  await eventually(() => since().includes(text), timeoutMs, what).catch((error: unknown) => {
    throw new Error(`${String(error)}; its log since the pause:\n${since().slice(-6000)}`);
  });
}
