/**
 * HandoverCatchUp: a partition newly owned is answered only once the signal reader's position there reached the
 * end read after the ownership was seen; a partition lost is held again, and an end read before a loss and a
 * new ownership does not release the new one.
 */
import { describe, expect, it } from 'vitest';
import { HandoverCatchUp } from '../../../../src/runtime/signals/handover-catch-up.js';

const at = (positions: Record<number, bigint>) => (partition: number) => positions[partition] ?? 0n;

describe('the catch-up after a handover', () => {
  it('answers no partition before it is owned and its end reached', () => {
    const catchUp = new HandoverCatchUp();
    expect(catchUp.answers(0)).toBe(false);
    catchUp.owned([0, 2]);
    expect(catchUp.answers(0)).toBe(false);
    // The end not read yet: no position releases it.
    expect(catchUp.reached(at({ 0: 100n, 2: 100n }))).toEqual([]);
    const request = catchUp.endsToRead();
    expect([...(request?.partitions.keys() ?? [])]).toEqual([0, 2]);
    if (request === null) throw new Error('no request');
    catchUp.endsRead(
      request,
      new Map([
        [0, 7n],
        [1, 9n],
        [2, 3n],
      ]),
    );
    expect(catchUp.endsToRead()).toBeNull();
    expect(catchUp.reached(at({ 0: 6n, 2: 3n }))).toEqual([2]);
    expect(catchUp.answers(2)).toBe(true);
    expect(catchUp.answers(0)).toBe(false);
    expect(catchUp.reached(at({ 0: 7n }))).toEqual([0]);
    expect(catchUp.answers(0)).toBe(true);
    expect(catchUp.answers(1)).toBe(false);
  });

  it('keeps answering a partition still owned, and holds one lost and owned again until its new end is reached', () => {
    const catchUp = new HandoverCatchUp();
    catchUp.owned([0]);
    const first = catchUp.endsToRead();
    if (first === null) throw new Error('no request');
    catchUp.endsRead(first, new Map([[0, 0n]]));
    expect(catchUp.reached(at({}))).toEqual([0]);
    catchUp.owned([0, 1]);
    expect(catchUp.answers(0)).toBe(true);
    expect([...(catchUp.endsToRead()?.partitions.keys() ?? [])]).toEqual([1]);

    catchUp.owned([1]);
    expect(catchUp.answers(0)).toBe(false);
    catchUp.owned([0, 1]);
    expect(catchUp.answers(0)).toBe(false);
    const again = catchUp.endsToRead();
    if (again === null) throw new Error('no request');
    catchUp.endsRead(
      again,
      new Map([
        [0, 5n],
        [1, 5n],
      ]),
    );
    expect(catchUp.reached(at({ 0: 4n, 1: 5n }))).toEqual([1]);
    expect(catchUp.answers(0)).toBe(false);
  });

  it('ignores an end read for an ownership lost meanwhile, even when the partition is owned again', () => {
    const catchUp = new HandoverCatchUp();
    catchUp.owned([0]);
    const stale = catchUp.endsToRead();
    if (stale === null) throw new Error('no request');
    // Lost and owned again while the end was read: that end is older than the new ownership.
    catchUp.owned([]);
    catchUp.owned([0]);
    catchUp.endsRead(stale, new Map([[0, 2n]]));
    expect(catchUp.reached(at({ 0: 2n }))).toEqual([]);
    expect(catchUp.answers(0)).toBe(false);
    const fresh = catchUp.endsToRead();
    if (fresh === null) throw new Error('no request');
    catchUp.endsRead(fresh, new Map([[0, 4n]]));
    expect(catchUp.reached(at({ 0: 4n }))).toEqual([0]);
  });

  it('releases a partition the end read does not list (nothing written there)', () => {
    const catchUp = new HandoverCatchUp();
    catchUp.owned([3]);
    const request = catchUp.endsToRead();
    if (request === null) throw new Error('no request');
    catchUp.endsRead(request, new Map());
    expect(catchUp.reached(at({}))).toEqual([3]);
  });
});
