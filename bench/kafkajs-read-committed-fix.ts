/**
 * A fix, for the bench's own readers, of kafkajs 2.2.4's read_committed filter (consumer/filterAbortedMessages.js).
 *
 * kafkajs drops the records of aborted transactions client-side, from the list of aborted transactions a fetch
 * response carries. It activates at most one of them per delivered record (`if`, where a loop is needed), in the
 * order the broker listed them: when a fetch starts inside several aborted transactions of different producers,
 * only the first is skipped and the others' records are delivered as if committed. On a calls partition shared
 * by many per-partition producers this happens after a kill -9: the killed instance's open page is aborted by
 * the survivor's fencing while other producers' transactions interleave. The distributed bench counted that
 * page's 96 records as doubled versions; with this filter the same topic reads exactly the sandbox's versions.
 *
 * kafkajs's Batch captures the filter when it is loaded, so this module must be evaluated before anything loads
 * kafkajs: bench/run.ts imports it first. `installed` says whether it took effect (false: kafkajs was already
 * loaded, or its internals moved).
 */
import { createRequire } from 'node:module';

export interface FetchedRecord {
  offset: string;
  isControlRecord?: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}

export interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

/**
 * The records of a fetch that a read_committed consumer may see, control records included (kafkajs drops those
 * after this filter): every aborted transaction whose first offset a record has reached is active until its
 * producer's control record (the abort marker) ends it, and an active producer's transactional records are left out.
 */
export function withoutAborted({
  messages,
  abortedTransactions,
}: {
  messages: readonly FetchedRecord[];
  abortedTransactions?: readonly AbortedTransaction[] | null;
}): FetchedRecord[] {
  if (abortedTransactions === undefined || abortedTransactions === null || abortedTransactions.length === 0)
    return [...messages];
  const pending = [...abortedTransactions].sort((a, b) =>
    BigInt(a.firstOffset) < BigInt(b.firstOffset)
      ? -1
      : BigInt(a.firstOffset) > BigInt(b.firstOffset)
        ? 1
        : 0,
  );
  const active = new Set<string>();
  return messages.filter((record) => {
    const offset = BigInt(record.offset);
    for (let next = pending[0]; next !== undefined && offset >= BigInt(next.firstOffset); next = pending[0]) {
      active.add(next.producerId);
      pending.shift();
    }
    const { producerId, inTransaction } = record.batchContext;
    if (record.isControlRecord === true) {
      active.delete(producerId);
      return true;
    }
    return !(inTransaction && active.has(producerId));
  });
}

function install(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const filterPath = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
    const batchPath = require.resolve('kafkajs/src/consumer/batch.js');
    if (require.cache[batchPath] !== undefined) return false; // too late: Batch holds the original
    const original = require(filterPath) as unknown;
    if (typeof original !== 'function') return false;
    const cached = require.cache[filterPath];
    if (cached === undefined) return false;
    cached.exports = withoutAborted;
    return true;
  } catch {
    return false;
  }
}

export const installed = install();
