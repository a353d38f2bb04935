import { describe, expect, it } from 'vitest';
import {
  withoutAbortedRecords,
  type FetchedRecord,
} from '../../../../src/kafka/client/kafkajs-read-committed-fix.js';

const A = '1000';
const B = '2000';
const C = '3000';

function record(offset: number, producerId: string, inTransaction = true): FetchedRecord {
  return { offset: String(offset), batchContext: { producerId, inTransaction } };
}
function marker(offset: number, producerId: string): FetchedRecord {
  return { ...record(offset, producerId), isControlRecord: true };
}
const offsets = (records: readonly FetchedRecord[]) =>
  records.filter((r) => r.isControlRecord !== true).map((r) => Number(r.offset));

describe('withoutAbortedRecords', () => {
  it('leaves out the records of every aborted transaction a fetch starts inside, not only the first listed', () => {
    // Offsets 0 (A) and 1 (B) began two transactions, both aborted; this fetch starts at 1, inside both.
    // kafkajs 2.2.4 activated one aborted transaction per record and delivered 1 and 3 as committed.
    const messages = [record(1, B), record(2, A), record(3, B), marker(4, A), marker(5, B), record(6, C)];
    const abortedTransactions = [
      { producerId: A, firstOffset: '0' },
      { producerId: B, firstOffset: '1' },
    ];
    expect(offsets(withoutAbortedRecords({ messages, abortedTransactions }))).toEqual([6]);
  });

  it('takes the aborted transactions in order of their first offset, however the broker listed them', () => {
    const messages = [record(0, A), record(1, B), record(2, C), marker(3, B), record(4, A), marker(5, A)];
    const abortedTransactions = [
      { producerId: A, firstOffset: '4' },
      { producerId: B, firstOffset: '1' },
    ];
    expect(offsets(withoutAbortedRecords({ messages, abortedTransactions }))).toEqual([0, 2]);
  });

  it("keeps a producer's records after its abort marker (its next transaction committed)", () => {
    const messages = [record(0, A), marker(1, A), record(2, A), marker(3, A)];
    expect(
      offsets(
        withoutAbortedRecords({ messages, abortedTransactions: [{ producerId: A, firstOffset: '0' }] }),
      ),
    ).toEqual([2]);
  });

  it('keeps records written outside a transaction by an aborting producer id, and everything when nothing aborted', () => {
    const messages = [record(0, A), record(1, A, false), marker(2, A)];
    expect(
      offsets(
        withoutAbortedRecords({ messages, abortedTransactions: [{ producerId: A, firstOffset: '0' }] }),
      ),
    ).toEqual([1]);
    expect(offsets(withoutAbortedRecords({ messages, abortedTransactions: [] }))).toEqual([0, 1]);
    expect(offsets(withoutAbortedRecords({ messages, abortedTransactions: null }))).toEqual([0, 1]);
  });
});
