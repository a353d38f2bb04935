/**
 * Pausing a connector process (SIGSTOP) at a chosen kind of moment, for tests of what a frozen VM or a stopped
 * container does to the writers around it.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { lastStableOffsets } from '../../tools/chaos/last-stable-offsets.js';
import { eventually } from './kafka.js';
import { stackEndpoints } from './stack.js';

/**
 * Pauses `child` while it has a transaction open on `topic` (some partition's last stable offset below its
 * high watermark, still so a moment later: a commit already under way would have moved it). Only `child` may
 * write to `topic` meanwhile, or another writer's transaction would be taken for its.
 *
 * It watches the broker first and pauses the moment a transaction is seen open, rather than pausing blindly
 * and looking: a transaction lives for a few milliseconds of each poll, so blind pauses land between two
 * transactions most of the time (a run of 100 of them once missed every one). When the commit won the race
 * to the pause, the process is resumed and the watch goes on. Resolves with the number of pauses taken;
 * throws after `timeoutMs`.
 */
export async function pauseInsideTransaction(
  child: ChildProcess,
  topic: string,
  partitions: number[],
  timeoutMs = 90_000,
): Promise<number> {
  const broker = stackEndpoints().brokers[0] ?? '127.0.0.1:9092';
  const open = async () =>
    (await lastStableOffsets(broker, topic, partitions)).some((p) => p.lastStable < p.high);
  const deadline = Date.now() + timeoutMs;
  let pauses = 0;
  let looks = 0;
  while (Date.now() < deadline) {
    looks++;
    if (await open()) {
      child.kill('SIGSTOP');
      pauses++;
      if (await settleThen(open)) return pauses;
      child.kill('SIGCONT');
    }
    await sleep(2);
  }
  throw new Error(
    `watched ${topic} ${looks} times in ${timeoutMs} ms and paused ${pauses} times, never inside a transaction`,
  );
}

/** `check` once a commit already under way would have ended (300 ms later). */
async function settleThen<T>(check: () => Promise<T>): Promise<T> {
  await sleep(300);
  return check();
}

/** A process a test pauses: its child, its output, and (a distributed instance) whether it is paused now. */
export interface PausedProcess {
  child: ChildProcess;
  output(): string;
  paused?: boolean;
}

/**
 * Wakes a paused process (SIGCONT; `paused` cleared) and waits for the fault path its pause was taken for: `text`
 * logged after `from` (its output's length when the pause began), so that a test whose pause caught nothing
 * fails instead of passing vacuously. The failure carries what the process logged since the pause instead.
 */
export async function wakeToFaultPath(
  process: PausedProcess,
  from: number,
  text: string,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  process.child.kill('SIGCONT');
  if (process.paused !== undefined) process.paused = false;
  const since = () => process.output().slice(from);
  await eventually(() => since().includes(text), timeoutMs, what).catch((error: unknown) => {
    throw new Error(`${String(error)}; its log since the pause:\n${since().slice(-6000)}`);
  });
}
