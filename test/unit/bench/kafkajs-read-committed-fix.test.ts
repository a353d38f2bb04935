import { describe, expect, it } from 'vitest';
import { withoutAborted, type FetchedRecord } from '../../../bench/kafkajs-read-committed-fix.js';

const record = (offset: number, producerId: string, isControlRecord = false): FetchedRecord => ({
  offset: String(offset),
  isControlRecord,
  batchContext: { producerId, inTransaction: true },
});

// A fetch from offset 10: producers A and B each have an aborted transaction that began before it (at 4 and 7),
// C a committed one; A's and B's abort markers come at 13 and 14. The first record fetched is B's: kafkajs 2.2.4
// activated one aborted transaction per record (A's here) and delivered it.
const fetched = [
  record(10, 'B'),
  record(11, 'A'),
  record(12, 'C'),
  record(13, 'A', true),
  record(14, 'B', true),
  record(15, 'B'),
];
const aborted = [
  { producerId: 'A', firstOffset: '4' },
  { producerId: 'B', firstOffset: '7' },
];

describe('the read_committed filter for the bench readers', () => {
  it('leaves out the records of every aborted transaction a fetch starts inside, not just the first', () => {
    const kept = withoutAborted({ messages: fetched, abortedTransactions: aborted }).map((r) => r.offset);
    expect(kept).toEqual(['12', '13', '14', '15']);
  });

  it('does so whatever order the broker lists the aborted transactions in', () => {
    const kept = withoutAborted({ messages: fetched, abortedTransactions: [...aborted].reverse() });
    expect(kept.map((r) => r.offset)).toEqual(['12', '13', '14', '15']);
  });

  it('keeps every record when no transaction was aborted', () => {
    expect(withoutAborted({ messages: fetched, abortedTransactions: [] })).toHaveLength(6);
  });
});
