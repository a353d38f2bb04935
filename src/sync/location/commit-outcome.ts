/**
 * The one rule for "did the commit happen, and what is stored", over plain data. Sinks report
 * facts (Kafka committed the write, aborted it, or its outcome is unknown; and, when they read it, what
 * the offsets topic holds for each page's location); `commitOutcomes` alone turns them into the typed
 * outcome that `RecordSink.commitPage` resolves to. One equality decides (traversal.ts sameOffset).
 *
 * Why a value that is neither the location's committed offset nor its page's is not simply taken: a
 * location's sink is its only writer while it writes (single mode: a newer instance fences this one, which
 * then stands by; distributed mode: a partition's locations are dropped with it). A third value is
 * legitimate only when read after the sink's producer initialised again (a newer instance ran meanwhile and
 * is gone), and never when it is behind the committed one: the offsets topic is read to its last stable
 * offset, which lags a committed transaction while its markers are pending (a broker restart, a leader
 * move), so such a read shows an OLDER offset. Adopting it would move the location backwards and publish
 * its last pages again. The sink reads again instead ('read-again'), after its producer has initialised,
 * which waits for this producer's pending markers; unless the write's fate is known without the store (it was
 * aborted, or its records say, see below): then the page is committed again, or its offset written again,
 * which moves the location forward only. (A committed page's offset record aborted by an operator, see below,
 * reads as such a stale value until the location commits again.)
 *
 * Why a transaction's records can outvote its offset record: Kafka commits a transaction's partitions
 * together, but a broker killed inside a commit can leave one partition's record without its marker (a
 * hanging transaction, KIP-890's case), which only `kafka-transactions.sh abort` ends, aborting that
 * record alone. When it is a page's offset record, the store shows the location's committed offset although
 * the page's calls are visible: re-publishing the page would show them twice. So a write of unknown outcome
 * whose records a read_committed reader can see (`published`) committed, and its pages whose offset the store
 * lost are answered 'rewrite-offset': the sink writes their offsets again, alone, then stores them.
 */
import type { RetriableError } from '../../errors/index.js';
import { parseInstant, toEpochMillis } from '../../time/instant.js';
import { EMPTY_OFFSET, type LocationOffset } from '../model.js';
import type { CommitOutcome } from '../ports.js';
import { sameOffset } from './traversal.js';

/** One page of a write, as the rule needs it. */
export interface PageAtStake {
  /** The offset the page's location knows to be stored (its last commit); null: not told (see below). */
  committed: LocationOffset | null;
  /** The offset the page stores. */
  offset: LocationOffset;
}

/** What the store holds for each page's location, read after the write failed. */
export interface StoreRead {
  /** Per page, in the order of the pages: the location's stored offset, null when none is stored. */
  stored: readonly (LocationOffset | null)[];
  /** Read after the sink's producer initialised again (its pending markers are written by then). */
  afterInit: boolean;
  /** The sink generation (RecordSink.generation) the read was made under: pages built on it carry it. */
  generation?: number;
}

/**
 * What a sink knows of one write (a transaction, a produce request, one refused page):
 * - 'committed': Kafka acknowledged it;
 * - 'aborted': nothing of it is visible (a failed send, an abort, a page refused before any write);
 * - 'unknown': it may or may not have taken effect (EndTxn failed).
 * `read`, when the sink read the offsets topic for the pages' locations. `published`, for an unknown write:
 * whether a record it sent to another topic than the offsets topic (a call, a dead letter) is visible to a
 * read_committed reader, i.e. whether the transaction committed; undefined when not checked or not known (no
 * such record, or it is gone). An aborted write's is ignored.
 */
export type WriteFacts =
  | { write: 'committed' }
  | { write: 'aborted' | 'unknown'; reason: RetriableError; read?: StoreRead; published?: Published };

/**
 * Whether a write's records outside the offsets topic are visible (publishedFrom): all of them (true), none
 * (false), or 'partly': its transaction committed, and an operator aborted some partitions' part since.
 */
export type Published = boolean | 'partly';

/**
 * A page's verdict: its outcome; 'read-again' when the facts do not decide it yet (a stale read, none); or
 * 'rewrite-offset' when its write committed but the store lost its offset record (see the module comment):
 * the sink writes the offset again before the page is stored.
 */
export type Verdict = CommitOutcome | 'read-again' | 'rewrite-offset' | 'republish-lost';

/**
 * How a page's stored offset reads against its committed offset and its own: 'behind' (older than the
 * committed one, or none), 'stale' (another value read before the producer initialised again).
 */
type Reading = 'unmoved' | 'old' | 'new' | 'other' | 'behind' | 'stale';

/**
 * The verdict for each page of one write (same order). Pages of one transaction commit or abort together,
 * so a page whose stored offset shows its own offset proves the transaction committed, and one that shows
 * its committed offset proves it aborted; a page that leaves its offset as it was ('unmoved') proves
 * nothing and takes the transaction's verdict. `published` proves the commit too (and, false, the abort).
 * When nothing proves either (every page unmoved, not published), an
 * unmoved page is rejected: committed again rather than possibly lost (its records may repeat). A page
 * without `committed` (a caller that did not say) is recognised by its own offset only; any other
 * stored value rejects it.
 */
export function commitOutcomes(pages: readonly PageAtStake[], facts: WriteFacts): Verdict[] {
  if (facts.write === 'committed') return pages.map(() => ({ kind: 'stored' }));
  const { reason, read } = facts;
  if (read === undefined)
    return pages.map(() => (facts.write === 'aborted' ? { kind: 'rejected', reason } : 'read-again'));
  const stored = pages.map((_, i) => read.stored[i] ?? null);
  const readings = pages.map((page, i) => reading(page, stored[i] ?? null, read.afterInit));
  const generation = read.generation === undefined ? {} : { generation: read.generation };
  const rejected: CommitOutcome = { kind: 'rejected', reason, ...generation };
  // A visible record of the write outvotes an offset record that shows the committed offset (module comment).
  const published = facts.write === 'unknown' ? facts.published : undefined;
  const committed =
    facts.write === 'unknown' && (readings.includes('new') || published === true || published === 'partly');
  const aborted =
    facts.write === 'aborted' || published === false || (readings.includes('old') && published === undefined);
  // Both proven: one of the reads lags the other (partitions read at different stable offsets).
  if (committed && aborted) return pages.map(() => 'read-again');
  return readings.map((r, i): Verdict => {
    const superseded = (): Verdict => ({
      kind: 'superseded',
      stored: stored[i] ?? { ...EMPTY_OFFSET, boundary: [] },
      reason,
      ...generation,
    });
    // Committed, then partly aborted: the page's records on the aborted partitions, and its offset, again.
    if (published === 'partly' && r !== 'stale' && r !== 'other') return 'republish-lost';
    switch (r) {
      case 'stale':
        return 'read-again';
      case 'behind':
        // Never adopted. Nothing of an aborted write is visible and a write proven by its records settles as
        // they show, whatever the store lags or lost: the page is committed again, or its offset written again.
        if (facts.write === 'aborted' || published === false) return rejected;
        return published === true ? 'rewrite-offset' : 'read-again';
      case 'other':
        return superseded();
      case 'old':
        if (!committed) return rejected;
        // Committed, yet the store shows the committed offset: its offset record was lost. A page that did not
        // say its committed offset is stored as it is (what the store held before cannot be judged).
        return pages[i]!.committed === null ? { kind: 'stored', ...generation } : 'rewrite-offset';
      case 'unmoved':
        return committed ? { kind: 'stored', ...generation } : rejected;
      case 'new':
        // Aborted, yet the store holds the page's offset: another writer stored it since.
        if (facts.write === 'aborted') return read.afterInit ? superseded() : 'read-again';
        return { kind: 'stored', ...generation };
    }
  });
}

function reading(page: PageAtStake, stored: LocationOffset | null, afterInit: boolean): Reading {
  const { committed, offset } = page;
  if (committed === null) return stored !== null && sameOffset(stored, offset) ? 'new' : 'old';
  const value = stored ?? EMPTY_OFFSET;
  if (sameOffset(value, committed)) return sameOffset(offset, committed) ? 'unmoved' : 'old';
  if (sameOffset(value, offset)) return 'new';
  if (!afterInit) return 'stale';
  // No offset stored although this location committed one, or an older watermark: the read lags, or the store
  // lost the offset record.
  if (stored === null || isBehind(stored, committed)) return 'behind';
  return 'other';
}

/**
 * Whether a write is published (WriteFacts.published), from the visibility of its first record on each partition
 * it wrote outside the offsets topic: true when every one is visible; false when none is (its transaction
 * aborted); 'partly' when some are and some are not (a committed transaction, some partitions' part of which an
 * operator aborted since: only a COMMIT marker makes a record visible); undefined when nothing is known (no such
 * record, or some are gone and none is invisible).
 */
export function publishedFrom(visibility: readonly (boolean | undefined)[]): Published | undefined {
  if (visibility.includes(false)) return visibility.includes(true) ? 'partly' : false;
  if (visibility.length === 0 || visibility.includes(undefined)) return undefined;
  return true;
}

/**
 * `stored` is behind `committed`: an earlier state of the same location, never a newer one. The live lanes'
 * watermarks decide when they differ. When they are the same instant, the history lane decides (a
 * split location's history pages move only `history`, so an aborted history page's predecessor differs from the
 * committed offset in its history lane alone): a history lane of the same `until` whose watermark is older, or a
 * history lane where the committed offset has none (the committed page merged the lanes), is behind.
 */
export function isBehind(stored: LocationOffset, committed: LocationOffset): boolean {
  const live = watermarkOrder(stored.watermark, committed.watermark);
  if (live !== 'same') return live === 'older';
  const storedHistory = stored.history;
  const committedHistory = committed.history;
  if (storedHistory === undefined) return false;
  if (committedHistory === undefined) return true;
  if (storedHistory.until !== committedHistory.until) return false;
  return watermarkOrder(storedHistory.watermark, committedHistory.watermark) === 'older';
}

/**
 * How a stored watermark stands against a committed one, as instants. A missing committed watermark is never
 * passed ('same' when both are missing); a missing or unreadable stored one counts as older.
 */
function watermarkOrder(stored: string | null, committed: string | null): 'older' | 'same' | 'newer' {
  if (committed === null) return stored === null ? 'same' : 'newer';
  if (stored === null) return 'older';
  const storedAt = parseInstant(stored);
  const committedAt = parseInstant(committed);
  if (storedAt === null || committedAt === null) return 'older';
  const difference = toEpochMillis(storedAt) - toEpochMillis(committedAt);
  return difference < 0 ? 'older' : difference > 0 ? 'newer' : 'same';
}
