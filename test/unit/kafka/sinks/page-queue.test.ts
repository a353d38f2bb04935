/**
 * The queue both record sinks put pages in: how many pages the next group takes, how each page settles with
 * its verdict, and one drain at a time, which picks up pages queued while it ran.
 */
import { describe, expect, it } from 'vitest';
import type { PageMessages } from '../../../../src/kafka/records/page-messages.js';
import {
  groupSize,
  hasRecords,
  PageQueue,
  settlePages,
  type PendingPage,
} from '../../../../src/kafka/sinks/page-queue.js';
import type { CommitOutcome } from '../../../../src/sync/ports.js';
import { encoder, page } from '../../../support/scripted-kafka.js';

function pending(bytes: number, settled: { outcome?: CommitOutcome; error?: Error } = {}): PendingPage {
  const messages: PageMessages = {
    locationUid: 'a',
    calls: [],
    deadLetters: [],
    divertedCodes: [],
    bytes,
  } as unknown as PageMessages;
  return {
    messages,
    generation: undefined,
    at: { committed: null, offset: page('a', '1').offset },
    resolve: (outcome) => (settled.outcome = outcome),
    reject: (error) => (settled.error = error),
  };
}

describe('groupSize', () => {
  it('takes pages while their bytes stay within the cap', () => {
    expect(groupSize([pending(40), pending(40), pending(40)], 100)).toBe(2);
    expect(groupSize([pending(50), pending(50), pending(1)], 100)).toBe(2);
  });

  it('takes a page larger than the cap alone, and nothing of an empty queue', () => {
    expect(groupSize([pending(500), pending(1)], 100)).toBe(1);
    expect(groupSize([], 100)).toBe(0);
  });

  it('takes at most maxPages pages', () => {
    expect(groupSize([pending(1), pending(1), pending(1)], 100, 2)).toBe(2);
  });
});

describe('settlePages', () => {
  it('resolves each page with its own decided verdict, in order', () => {
    const [first, second] = [{} as { outcome?: CommitOutcome }, {} as { outcome?: CommitOutcome }];
    settlePages(
      [pending(1, first), pending(1, second)],
      [{ kind: 'stored' }, { kind: 'stored', generation: 2 }],
    );
    expect(first.outcome).toEqual({ kind: 'stored' });
    expect(second.outcome).toEqual({ kind: 'stored', generation: 2 });
  });

  it('rejects a page whose verdict is undecided or missing, never settling it silently', () => {
    const [undecided, missing] = [{} as { error?: Error }, {} as { error?: Error }];
    settlePages([pending(1, undecided), pending(1, missing)], ['read-again']);
    expect(undecided.error).toBeInstanceOf(RangeError);
    expect(missing.error).toBeInstanceOf(RangeError);
  });
});

describe('hasRecords', () => {
  it('is true of a page with a record (a dead letter counts) and false of an offset-only page', () => {
    const messages = pending(0).messages;
    expect(hasRecords(messages)).toBe(false);
    expect(hasRecords({ ...messages, deadLetters: [{ value: null }] })).toBe(true);
  });
});

describe('PageQueue', () => {
  it('runs one drain at a time and drains pages queued meanwhile in the next group', async () => {
    const groups: string[][] = [];
    let running = 0;
    let maxRunning = 0;
    let release: () => void = () => undefined;
    const queue = new PageQueue({
      encoder,
      connectorName: 'conn',
      drain: async (pages) => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        const group = pages.splice(0, pages.length);
        groups.push(group.map((p) => p.messages.locationUid));
        if (groups.length === 1) await new Promise<void>((resolve) => (release = resolve));
        for (const p of group) p.resolve({ kind: 'stored' });
        running -= 1;
      },
    });
    const first = queue.offer(page('a', '1'), new Date());
    const second = queue.offer(page('b', '1'), new Date());
    const third = queue.offer(page('c', '1'), new Date());
    release();
    await expect(Promise.all([first, second, third])).resolves.toEqual([
      { kind: 'stored' },
      { kind: 'stored' },
      { kind: 'stored' },
    ]);
    await queue.drained();
    expect(groups).toEqual([['a'], ['b', 'c']]);
    expect(maxRunning).toBe(1);
  });

  it('rejects at once a page it cannot encode, queueing nothing', async () => {
    let drains = 0;
    const queue = new PageQueue({
      encoder: {
        ...encoder,
        encodeValue: () => {
          throw new Error('no schema for this call');
        },
      },
      connectorName: 'conn',
      drain: () => {
        drains += 1;
        return Promise.resolve();
      },
    });
    await expect(queue.offer(page('a', '1'), new Date())).rejects.toThrow('no schema for this call');
    expect(queue.pages).toEqual([]);
    expect(drains).toBe(0);
  });
});
