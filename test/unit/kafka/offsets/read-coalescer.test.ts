import { describe, expect, it } from 'vitest';
import { ReadCoalescer } from '../../../../src/kafka/offsets/read-coalescer.js';

/** A read whose completion the test controls; each read returns its sequence number. */
function controlledReads() {
  const finish: Array<(fail?: boolean) => void> = [];
  let started = 0;
  const read = (): Promise<number> => {
    started += 1;
    const n = started;
    return new Promise<number>((resolve, reject) =>
      finish.push((fail) => (fail ? reject(new Error(`read ${n} failed`)) : resolve(n))),
    );
  };
  return { read, finish, started: () => started };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 10; i += 1) await Promise.resolve();
}

describe('ReadCoalescer', () => {
  it('gives callers that arrive during a read the next read, shared, never the running one', async () => {
    const { read, finish, started } = controlledReads();
    const reads = new ReadCoalescer(read);

    const first = reads.get();
    const second = reads.get();
    const third = reads.get();
    expect(started()).toBe(1);

    finish[0]?.();
    expect(await first).toBe(1);
    await settle();
    expect(started()).toBe(2);
    finish[1]?.();
    expect(await second).toBe(2);
    expect(await third).toBe(2);
    expect(started()).toBe(2);
  });

  it('starts the next read even when the running one fails, and reports each read its own failure', async () => {
    const { read, finish, started } = controlledReads();
    const reads = new ReadCoalescer(read);

    const first = reads.get();
    const second = reads.get();
    finish[0]?.(true);
    await expect(first).rejects.toThrow('read 1 failed');
    await settle();
    finish[1]?.();
    expect(await second).toBe(2);
    expect(started()).toBe(2);
  });

  it('starts a fresh read for a call after the previous reads ended', async () => {
    const { read, finish } = controlledReads();
    const reads = new ReadCoalescer(read);
    const first = reads.get();
    finish[0]?.();
    await first;
    const later = reads.get();
    finish[1]?.();
    expect(await later).toBe(2);
  });
});
