import { describe, expect, it } from 'vitest';
import {
  commitOutcomes,
  isBehind,
  publishedFrom,
  type PageAtStake,
  type StoreRead,
  type Verdict,
  type WriteFacts,
} from '../../../../src/sync/location/commit-outcome.js';
import { RetriableError } from '../../../../src/errors/index.js';
import type { LocationOffset } from '../../../../src/sync/model.js';

const at = (watermark: string | null, cursor: string | null = null): LocationOffset => ({
  since: watermark,
  cursor,
  watermark,
  boundary: [],
});

const older = at('2024-05-01T09:00:00Z');
const committed = at('2024-05-01T10:00:00Z', 'c1');
const offset = at('2024-05-01T11:00:00Z', 'c2');
const newer = at('2024-05-01T12:00:00Z');
const reason = new RetriableError('KAFKA_TRANSACTION_ABORTED', 'scripted');

const moving: PageAtStake = { committed, offset };
const unmoved: PageAtStake = { committed, offset: committed };

function read(stored: (LocationOffset | null)[], afterInit = true, generation?: number): StoreRead {
  return { stored, afterInit, ...(generation === undefined ? {} : { generation }) };
}

const kinds = (verdicts: Verdict[]) => verdicts.map((v) => (typeof v === 'string' ? v : v.kind));

describe('commitOutcomes', () => {
  it('takes a committed write for stored, whatever the pages', () => {
    expect(kinds(commitOutcomes([moving, unmoved], { write: 'committed' }))).toEqual(['stored', 'stored']);
  });

  it('takes an aborted write without a read for rejected, with its reason', () => {
    expect(commitOutcomes([moving], { write: 'aborted', reason })).toEqual([{ kind: 'rejected', reason }]);
  });

  it('decides nothing for a write of unknown outcome until the store is read', () => {
    expect(commitOutcomes([moving], { write: 'unknown', reason })).toEqual(['read-again']);
  });

  it("reads a write of unknown outcome as stored when the store holds the page's offset, and as rejected when it holds the committed one", () => {
    expect(kinds(commitOutcomes([moving], { write: 'unknown', reason, read: read([offset]) }))).toEqual([
      'stored',
    ]);
    expect(kinds(commitOutcomes([moving], { write: 'unknown', reason, read: read([committed]) }))).toEqual([
      'rejected',
    ]);
  });

  it('rejects a page that leaves the offset unchanged when nothing else shows the outcome: committed again, never lost', () => {
    expect(kinds(commitOutcomes([unmoved], { write: 'unknown', reason, read: read([committed]) }))).toEqual([
      'rejected',
    ]);
  });

  it('gives an unchanged page the verdict its transaction shows through the other pages', () => {
    const facts = (stored: LocationOffset): WriteFacts => ({
      write: 'unknown',
      reason,
      read: read([committed, stored]),
    });
    expect(kinds(commitOutcomes([unmoved, moving], facts(offset)))).toEqual(['stored', 'stored']);
    expect(kinds(commitOutcomes([unmoved, moving], facts(committed)))).toEqual(['rejected', 'rejected']);
  });

  it('reads again when the pages of one transaction contradict each other (one partition read behind the other)', () => {
    const facts: WriteFacts = { write: 'unknown', reason, read: read([offset, committed]) };
    expect(commitOutcomes([moving, moving], facts)).toEqual(['read-again', 'read-again']);
  });

  it('never adopts an offset behind the committed one, nor a missing one, even after the producer initialised again', () => {
    for (const stored of [older, null]) {
      for (const afterInit of [false, true]) {
        // Unknown outcome: the read may lag the write's own offset record; read again.
        expect(
          commitOutcomes([moving], { write: 'unknown', reason, read: read([stored], afterInit) }),
        ).toEqual(['read-again']);
      }
      // Nothing of an aborted write is visible: the page is committed again (its offset written then), the older
      // value is not adopted. (Before: read again until the process stopped, when an operator had aborted the
      // offset record of a page already stored.) Read before an initialisation, it proves nothing yet.
      expect(
        kinds(commitOutcomes([moving], { write: 'aborted', reason, read: read([stored], true) })),
      ).toEqual(['rejected']);
      expect(commitOutcomes([moving], { write: 'aborted', reason, read: read([stored], false) })).toEqual([
        'read-again',
      ]);
    }
  });

  it('adopts a newer offset of another writer only when read after the producer initialised again', () => {
    for (const write of ['aborted', 'unknown'] as const) {
      expect(commitOutcomes([moving], { write, reason, read: read([newer], false) })).toEqual(['read-again']);
      expect(commitOutcomes([moving], { write, reason, read: read([newer], true, 3) })).toEqual([
        { kind: 'superseded', stored: newer, reason, generation: 3 },
      ]);
    }
  });

  it("takes the page's own offset found after an aborted write for another writer's, adopted only after an initialisation", () => {
    expect(commitOutcomes([moving], { write: 'aborted', reason, read: read([offset], false) })).toEqual([
      'read-again',
    ]);
    expect(kinds(commitOutcomes([moving], { write: 'aborted', reason, read: read([offset], true) }))).toEqual(
      ['superseded'],
    );
  });

  it('answers rejected with the generation the read was made under, so the page is committed again under it', () => {
    expect(commitOutcomes([moving], { write: 'aborted', reason, read: read([committed], true, 7) })).toEqual([
      { kind: 'rejected', reason, generation: 7 },
    ]);
  });

  it('recognises a page without a committed offset by its own offset only', () => {
    const blind: PageAtStake = { committed: null, offset };
    expect(kinds(commitOutcomes([blind], { write: 'unknown', reason, read: read([offset]) }))).toEqual([
      'stored',
    ]);
    for (const stored of [committed, newer, older, null])
      expect(kinds(commitOutcomes([blind], { write: 'unknown', reason, read: read([stored]) }))).toEqual([
        'rejected',
      ]);
  });

  it('takes a visible record of a write of unknown outcome for a commit, and rewrites the offset of a page whose offset record the store lost', () => {
    // The hanging transaction an operator aborted: the store shows the committed offset, the calls are visible.
    expect(
      commitOutcomes([moving], { write: 'unknown', reason, read: read([committed]), published: true }),
    ).toEqual(['rewrite-offset']);
    // Two offsets partitions: one kept the page's offset record, the other lost it (before: read again for ever).
    expect(
      kinds(
        commitOutcomes([moving, moving], {
          write: 'unknown',
          reason,
          read: read([offset, committed], true, 4),
          published: true,
        }),
      ),
    ).toEqual(['stored', 'rewrite-offset']);
    expect(
      commitOutcomes([unmoved], {
        write: 'unknown',
        reason,
        read: read([committed], true, 2),
        published: true,
      }),
    ).toEqual([{ kind: 'stored', generation: 2 }]);
    // Not visible: the write aborted, as the store shows; the page is committed again.
    expect(
      kinds(
        commitOutcomes([moving], { write: 'unknown', reason, read: read([committed]), published: false }),
      ),
    ).toEqual(['rejected']);
  });

  it('never lets a visible record move a location backwards, adopt a stale read, or store an aborted write', () => {
    // A read behind the committed offset is never adopted: the write's records decide (its offset written
    // again, or the page committed again); a newer writer's offset is still adopted as such.
    for (const stored of [older, null]) {
      expect(
        commitOutcomes([moving], { write: 'unknown', reason, read: read([stored]), published: true }),
      ).toEqual(['rewrite-offset']);
      expect(
        kinds(commitOutcomes([moving], { write: 'unknown', reason, read: read([stored]), published: false })),
      ).toEqual(['rejected']);
    }
    expect(
      kinds(commitOutcomes([moving], { write: 'unknown', reason, read: read([newer]), published: true })),
    ).toEqual(['superseded']);
    // A page that did not say its committed offset is stored, never rewritten over what the store holds.
    expect(
      kinds(
        commitOutcomes([{ committed: null, offset }], {
          write: 'unknown',
          reason,
          read: read([newer]),
          published: true,
        }),
      ),
    ).toEqual(['stored']);
    // Invisible records contradict an offset that shows the page's: read again.
    expect(
      commitOutcomes([moving], { write: 'unknown', reason, read: read([offset]), published: false }),
    ).toEqual(['read-again']);
    // An aborted write's 'published' is not asked for, and changes nothing.
    expect(
      kinds(commitOutcomes([moving], { write: 'aborted', reason, read: read([committed]), published: true })),
    ).toEqual(['rejected']);
  });

  it('over every combination, moves a location only forward and only on evidence', () => {
    const storedValues = [null, older, committed, offset, newer];
    const pages = [moving, unmoved];
    for (const page of pages)
      for (const other of [null, ...pages])
        for (const write of ['aborted', 'unknown'] as const)
          for (const afterInit of [false, true])
            for (const published of [undefined, false, true, 'partly'] as const)
              for (const mine of storedValues)
                for (const theirs of storedValues) {
                  const group = other === null ? [page] : [page, other];
                  const stored = other === null ? [mine] : [mine, theirs];
                  const verdicts = commitOutcomes(group, {
                    write,
                    reason,
                    read: read(stored, afterInit),
                    ...(published === undefined ? {} : { published }),
                  });
                  verdicts.forEach((verdict, i) => {
                    const p = group[i]!;
                    const s = stored[i] ?? null;
                    if (verdict === 'read-again') return;
                    if (verdict === 'republish-lost') {
                      expect([write, published]).toEqual(['unknown', 'partly']);
                      return;
                    }
                    if (verdict === 'rewrite-offset') {
                      // Only a committed write (its records visible) whose store shows this page's committed offset,
                      // or one behind it (or none), read after an initialisation: the location moves forward only.
                      expect([write, published]).toEqual(['unknown', true]);
                      if (s !== committed)
                        expect(afterInit && (s === null || isBehind(s, p.committed!))).toBe(true);
                      return;
                    }
                    if (verdict.kind === 'superseded') {
                      // Adopted: read after an initialisation, never behind, never a missing offset.
                      expect(afterInit).toBe(true);
                      expect(s).not.toBeNull();
                      expect(isBehind(verdict.stored, p.committed!)).toBe(false);
                      expect(verdict.stored).toBe(s);
                    }
                    // Stored: only when the write's records are visible, or some page of the transaction shows
                    // its own offset stored.
                    if (verdict.kind === 'stored') {
                      expect(write).toBe('unknown');
                      expect(
                        published === true ||
                          group.some(
                            (q, j) =>
                              q.offset !== q.committed && stored[j] !== null && stored[j] === q.offset,
                          ),
                      ).toBe(true);
                    }
                    // Rejected after an unknown write: the store shows this location's committed offset, or no
                    // record of the write is visible; never when one is.
                    if (verdict.kind === 'rejected' && write === 'unknown') {
                      expect(s === committed || published === false).toBe(true);
                      expect(published).not.toBe(true);
                    }
                  });
                }
  });
});

describe('publishedFrom', () => {
  it('calls a write published when its record on every partition is visible, partly when only some are, and not when none is', () => {
    expect(publishedFrom([true, true])).toBe(true);
    expect(publishedFrom([false, false])).toBe(false);
    // Only a commit marker makes a record visible: the transaction committed, and an operator aborted one
    // partition's part of it since.
    expect(publishedFrom([true, false])).toBe('partly');
    expect(publishedFrom([undefined, false])).toBe(false);
    expect(publishedFrom([true, undefined])).toBeUndefined();
    expect(publishedFrom([])).toBeUndefined();
  });

  it('publishes again only the lost part of a committed write that an operator partly aborted, whatever the store shows', () => {
    for (const stored of [committed, offset, older])
      expect(
        commitOutcomes([moving], { write: 'unknown', reason, read: read([stored]), published: 'partly' }),
      ).toEqual(['republish-lost']);
    // Another writer's newer offset is still adopted as such.
    expect(
      kinds(commitOutcomes([moving], { write: 'unknown', reason, read: read([newer]), published: 'partly' })),
    ).toEqual(['superseded']);
  });
});

describe('a split location whose history lane alone moved (review L7)', () => {
  const live = at('2024-05-01T10:00:00Z');
  const withHistory = (watermark: string, until = '2024-05-01T10:00:00Z'): LocationOffset => ({
    ...live,
    history: { since: watermark, cursor: null, watermark, boundary: [], until },
  });
  const h1 = withHistory('2024-04-01T00:00:00Z');
  const h2 = withHistory('2024-04-02T00:00:00Z');
  const h3 = withHistory('2024-04-03T00:00:00Z');

  it('rejects a history page whose write was aborted when the store, read after initialising, shows the page before the committed one', () => {
    // An operator aborted the offsets record of history page 2; page 3's write is unknown and in fact aborted.
    const page: PageAtStake = { committed: h2, offset: h3 };
    expect(
      kinds(commitOutcomes([page], { write: 'unknown', reason, read: read([h1]), published: false })),
    ).toEqual(['rejected']);
    // Never adopted as another writer's newer offset: that would move the history lane back a page.
    expect(commitOutcomes([page], { write: 'unknown', reason, read: read([h1]) })).toEqual(['read-again']);
  });

  it('still adopts a stored history lane ahead of the committed one as superseded', () => {
    const page: PageAtStake = { committed: h1, offset: h2 };
    expect(kinds(commitOutcomes([page], { write: 'unknown', reason, read: read([h3]) }))).toEqual([
      'superseded',
    ]);
  });
});

describe('isBehind', () => {
  it('reads a history lane behind the committed one as behind when the live lanes are at the same instant', () => {
    const lane = (watermark: string, until = '2024-05-01T10:00:00Z') => ({
      since: watermark,
      cursor: null,
      watermark,
      boundary: [],
      until,
    });
    const live = at('2024-05-01T10:00:00Z');
    const h1 = { ...live, history: lane('2024-04-01T00:00:00Z') };
    const h2 = { ...live, history: lane('2024-04-02T00:00:00Z') };
    expect(isBehind(h1, h2)).toBe(true);
    expect(isBehind(h2, h1)).toBe(false);
    expect(isBehind(h2, h2)).toBe(false);
    // The committed page merged the lanes: a stored history lane is an earlier state.
    expect(isBehind(h1, live)).toBe(true);
    // A stored offset without a history lane is merged (or never split): not behind on the history lane.
    expect(isBehind(live, h1)).toBe(false);
    // Another split (another until) is not comparable by its history lane.
    expect(isBehind({ ...live, history: lane('2024-04-01T00:00:00Z', '2024-05-01T11:00:00Z') }, h2)).toBe(
      false,
    );
    // A newer live lane is never behind, whatever its history lane.
    expect(isBehind({ ...at('2024-05-01T11:00:00Z'), history: lane('2024-01-01T00:00:00Z') }, h2)).toBe(
      false,
    );
  });

  it('compares watermarks as instants', () => {
    expect(isBehind(at('2024-05-01T10:00:00+01:00'), at('2024-05-01T09:30:00Z'))).toBe(true);
    expect(isBehind(at('2024-05-01T10:00:00Z'), at('2024-05-01T10:00:00Z', 'x'))).toBe(false);
    expect(isBehind(at(null), at(null))).toBe(false);
    expect(isBehind(at(null), at('2024-05-01T10:00:00Z'))).toBe(true);
  });
});
