/**
 * What a split location's live lane published while history pages are in flight, and the rule that keeps a
 * history page from taking a call back to an older version (lanes.ts: "No version of a call goes backwards").
 * Pure: no I/O, no clock. Debezium's incremental snapshot has the same shape: the streaming side notifies the
 * snapshot's window (`LiveWindow.record`), and a chunk emits only what the stream did not supersede
 * (`withoutSupersededByLive`).
 */
import { compareInstants, parseInstant, type Instant } from '../../time/instant.js';
import type { PreparedPage } from '../location/page-pipeline.js';

/**
 * What the live lane published since the oldest history page in flight was listed: per uid, the newest
 * updatedAt and the sequence number of its commit. A history page carries the sequence number taken when
 * its listing was requested (`mark`) and drops every call the live lane published after that at a newer
 * updatedAt (`supersededByLive`). `prune` forgets what no page in flight can need.
 */
export class LiveWindow {
  private seq = 0;
  private readonly published = new Map<string, { at: Instant; seq: number }>();

  /** The sequence number to carry with a history listing requested now. */
  mark(): number {
    return this.seq;
  }

  /** A live page committed these calls (in its order). */
  record(calls: readonly { uid: string; updatedAt: string }[]): void {
    if (calls.length === 0) return;
    this.seq += 1;
    for (const call of calls) {
      const at = parseInstant(call.updatedAt);
      if (at === null) continue;
      const known = this.published.get(call.uid);
      if (known === undefined || compareInstants(at, known.at) >= 0)
        this.published.set(call.uid, { at, seq: this.seq });
    }
  }

  /** Whether the live lane published `uid` after `mark` at an updatedAt newer than `updatedAt`. */
  supersededByLive(uid: string, updatedAt: string, mark: number): boolean {
    const known = this.published.get(uid);
    if (known === undefined || known.seq <= mark) return false;
    const at = parseInstant(updatedAt);
    return at === null || compareInstants(known.at, at) > 0;
  }

  /** Forgets what was published at or before `oldestMark` (the oldest history page in flight), or all when none is. */
  prune(oldestMark: number | null): void {
    if (oldestMark === null) {
      this.published.clear();
      return;
    }
    for (const [uid, entry] of this.published) if (entry.seq <= oldestMark) this.published.delete(uid);
  }

  /** Entries kept (for tests and bounds). */
  get size(): number {
    return this.published.size;
  }
}

/**
 * A history page listed at `mark` without the calls the live lane published since at a newer version:
 * publishing them would take their key back to an older version. `superseded`: how many were dropped.
 */
export function withoutSupersededByLive(
  prepared: PreparedPage,
  window: LiveWindow,
  mark: number,
): { kept: PreparedPage; superseded: number } {
  if (window.size === 0) return { kept: prepared, superseded: 0 };
  const enriched = prepared.enriched.filter(
    (item) => !window.supersededByLive(item.listed.uid, item.listed.updatedAt, mark),
  );
  return { kept: { ...prepared, enriched }, superseded: prepared.enriched.length - enriched.length };
}
