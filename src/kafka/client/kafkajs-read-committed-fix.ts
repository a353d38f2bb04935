/**
 * A fix for kafkajs 2.2.4's read_committed filter (src/consumer/filterAbortedMessages.js; kafkajs is
 * unmaintained, so it will not be fixed upstream).
 *
 * A read_committed consumer drops the records of aborted transactions itself, from the list of aborted
 * transactions (producer id, first offset) that each fetch response carries. kafkajs activates at most one
 * of them per record it looks at (`if` where a loop is needed), in the order the broker listed them. When a
 * fetch starts inside aborted transactions of two or more producers, only the first is activated at the first
 * record, and the records of the others are delivered as if committed. That happens on any partition written
 * by several transactional producers: the calls topic in distributed mode (one producer per offsets partition,
 * all writing calls to every calls partition), an offsets topic shared by two connectors, and any read that
 * starts mid-partition (a fetch larger than its byte limit is cut into several). The distributed bench saw an
 * aborted page of 96 records delivered this way after a kill -9. For the offsets topic, an aborted offset
 * record taken as committed would skip its page's records: loss. Hence the fix in the product, not only in
 * the tests and the bench.
 *
 * The corrected filter: every aborted transaction whose first offset a record has reached is active (all of
 * them, in order of first offset) until its producer's next control record (its abort marker) ends it; the
 * transactional records of an active producer are left out. Control records pass (kafkajs drops them next).
 *
 * kafkajs's Batch captures the filter when kafkajs is loaded, so the fix must be installed before anything
 * loads kafkajs: `src/cli/main.ts` imports this module first, the tests' setup file and the bench likewise.
 * Installing is a side effect of evaluating this module; `readCommittedFixInstalled()` says whether it took
 * effect (createKafka warns when not: kafkajs was loaded first, or its internals moved).
 */
import { createRequire } from 'node:module';

/** A record of a fetch as kafkajs decodes it (the fields the filter reads). */
export interface FetchedRecord {
  offset: string;
  isControlRecord?: boolean;
  batchContext: { producerId: string; inTransaction: boolean };
}

/** An aborted transaction as a fetch response lists it. */
export interface AbortedTransaction {
  producerId: string;
  firstOffset: string;
}

/** The records a read_committed consumer may see, in order, control records included (see the module comment). */
export function withoutAbortedRecords<R extends FetchedRecord>({
  messages,
  abortedTransactions,
}: {
  messages: readonly R[];
  abortedTransactions?: readonly AbortedTransaction[] | null;
}): R[] {
  if (abortedTransactions === undefined || abortedTransactions === null || abortedTransactions.length === 0)
    return [...messages];
  const pending = abortedTransactions
    .map((t) => ({ producerId: t.producerId, firstOffset: BigInt(t.firstOffset) }))
    .sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : a.firstOffset > b.firstOffset ? 1 : 0));
  let next = 0;
  const active = new Set<string>();
  return messages.filter((record) => {
    const offset = BigInt(record.offset);
    for (; next < pending.length && offset >= pending[next]!.firstOffset; next++)
      active.add(pending[next]!.producerId);
    const { producerId, inTransaction } = record.batchContext;
    if (record.isControlRecord === true) {
      active.delete(producerId);
      return true;
    }
    return !(inTransaction && active.has(producerId));
  });
}

const FILTER_MODULE = 'kafkajs/src/consumer/filterAbortedMessages.js';
/** Marks the installed filter, so that a second evaluation of this module (test isolation) recognises it. */
const INSTALLED = Symbol.for('calls-connector.kafkajs-read-committed-fix');
const BATCH_MODULE = 'kafkajs/src/consumer/batch.js';

/** Replaces kafkajs's filter in the module cache, unless kafkajs's Batch already holds the original. */
function install(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const filterPath = require.resolve(FILTER_MODULE);
    const current = require(filterPath) as { [INSTALLED]?: true } | undefined;
    if (current?.[INSTALLED] === true) return true; // installed by an earlier evaluation
    if (require.cache[require.resolve(BATCH_MODULE)] !== undefined) return false; // too late
    const cached = require.cache[filterPath];
    if (cached === undefined || typeof cached.exports !== 'function') return false;
    cached.exports = Object.assign(
      (batch: Parameters<typeof withoutAbortedRecords>[0]) => withoutAbortedRecords(batch),
      { [INSTALLED]: true as const },
    );
    return true;
  } catch {
    return false; // kafkajs moved its internals: the caller warns
  }
}

const installed = install();

/** Whether kafkajs filters aborted records with the corrected filter in this process. */
export function readCommittedFixInstalled(): boolean {
  return installed || install();
}
