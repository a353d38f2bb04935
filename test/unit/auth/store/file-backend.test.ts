/** The file backend's lock between processes, with its waits on an injected clock. */
import { mkdtemp, stat, utimes, writeFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileBackend } from '../../../../src/auth/store/file-backend.js';
import type { ConnectorError } from '../../../../src/errors/index.js';
import { ManualClock } from '../../../support/clock.js';
import { rejectionOf } from '../../../support/rejection.js';

const entry = (current: ReadonlyMap<string, Buffer>) => ({
  changes: new Map([['grant', Buffer.from('sealed')]]),
  result: current.size,
});

/** A store path whose lock another process holds, taken at `lockedAt` (ms since epoch). */
async function lockedStore(lockedAt: number): Promise<{ path: string; lockPath: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'file-backend-'));
  const path = join(dir, 'tokens.enc');
  const lockPath = `${path}.lock`;
  await writeFile(lockPath, '12345', { mode: 0o600 });
  await utimes(lockPath, lockedAt / 1000, lockedAt / 1000);
  return { path, lockPath };
}

/** Advances `clock` over each wait of `work` until it settles. */
async function driveUntilSettled(clock: ManualClock, work: Promise<unknown>): Promise<void> {
  let settled = false;
  void work.finally(() => (settled = true)).catch(() => undefined);
  while (!settled) {
    await Promise.race([clock.sleeping(), work.catch(() => undefined)]);
    const next = clock.sleeps.at(-1);
    if (clock.pending > 0 && next !== undefined) clock.advance(next);
  }
}

describe('FileBackend lock', () => {
  it("waits for another process's lock with growing pauses on its clock, then gives up as retriable AUTH_STORE_LOCKED", async () => {
    const lockedAt = 1_800_000_000_000;
    const { path } = await lockedStore(lockedAt);
    const clock = new ManualClock(lockedAt);
    const backend = new FileBackend({ path, lockTimeoutMs: 1_000, staleLockMs: 30_000, clock });

    const update = rejectionOf(backend.update(entry));
    await driveUntilSettled(clock, update);

    const error = (await update) as ConnectorError;
    expect(error.code).toBe('AUTH_STORE_LOCKED');
    expect(error.disposition).toBe('retriable');
    expect(clock.sleeps.slice(0, 6)).toEqual([10, 20, 40, 80, 160, 250]);
    expect(clock.now() - lockedAt).toBeGreaterThan(1_000);
  });

  it('takes the lock as soon as the other process releases it', async () => {
    const lockedAt = 1_800_000_000_000;
    const { path, lockPath } = await lockedStore(lockedAt);
    const clock = new ManualClock(lockedAt);
    const backend = new FileBackend({ path, clock });

    const update = backend.update(entry);
    await clock.sleeping();
    await rm(lockPath);
    clock.advance(10);
    expect(await update).toBe(0);
    expect(clock.sleeps).toEqual([10]);
  });

  it('breaks a lock older than staleLockMs on its clock, left by a crashed process, without waiting', async () => {
    const lockedAt = 1_800_000_000_000;
    const { path } = await lockedStore(lockedAt);
    const clock = new ManualClock(lockedAt + 30_001);
    const backend = new FileBackend({ path, staleLockMs: 30_000, clock });

    expect(await backend.update(entry)).toBe(0);
    expect(clock.sleeps).toEqual([]);
    expect((await stat(path)).isFile()).toBe(true);
  });
});
