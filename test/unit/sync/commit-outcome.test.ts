import { describe, expect, it } from 'vitest';
import {
  commitOutcomes,
  isBehind,
  type PageAtStake,
  type StoreRead,
  type Verdict,
  type WriteFacts,
} from '../../../src/sync/commit-outcome.js';
import { RetriableError } from '../../../src/errors/index.js';
import type { LocationOffset } from '../../../src/sync/model.js';

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

const kinds = (verdicts: Verdict[]) => verdicts.map((v) => (v === 'read-again' ? v : v.kind));

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
    for (const write of ['aborted', 'unknown'] as const) {
      for (const stored of [older, null]) {
        for (const afterInit of [false, true]) {
          expect(commitOutcomes([moving], { write, reason, read: read([stored], afterInit) })).toEqual([
            'read-again',
          ]);
        }
      }
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

  it('over every combination, moves a location only forward and only on evidence', () => {
    const storedValues = [null, older, committed, offset, newer];
    const pages = [moving, unmoved];
    for (const page of pages)
      for (const other of [null, ...pages])
        for (const write of ['aborted', 'unknown'] as const)
          for (const afterInit of [false, true])
            for (const mine of storedValues)
              for (const theirs of storedValues) {
                const group = other === null ? [page] : [page, other];
                const stored = other === null ? [mine] : [mine, theirs];
                const verdicts = commitOutcomes(group, { write, reason, read: read(stored, afterInit) });
                verdicts.forEach((verdict, i) => {
                  const p = group[i]!;
                  const s = stored[i] ?? null;
                  if (verdict === 'read-again') return;
                  if (verdict.kind === 'superseded') {
                    // Adopted: read after an initialisation, never behind, never a missing offset.
                    expect(afterInit).toBe(true);
                    expect(s).not.toBeNull();
                    expect(isBehind(verdict.stored, p.committed!)).toBe(false);
                    expect(verdict.stored).toBe(s);
                  }
                  // Stored: only when some page of the transaction shows its own offset stored.
                  if (verdict.kind === 'stored') {
                    expect(write).toBe('unknown');
                    expect(
                      group.some(
                        (q, j) => q.offset !== q.committed && stored[j] !== null && stored[j] === q.offset,
                      ),
                    ).toBe(true);
                  }
                  // Rejected after an unknown write: the store shows this location's committed offset.
                  if (verdict.kind === 'rejected' && write === 'unknown') expect(s).toBe(committed);
                });
              }
  });
});

describe('isBehind', () => {
  it('compares watermarks as instants', () => {
    expect(isBehind(at('2024-05-01T10:00:00+01:00'), at('2024-05-01T09:30:00Z'))).toBe(true);
    expect(isBehind(at('2024-05-01T10:00:00Z'), at('2024-05-01T10:00:00Z', 'x'))).toBe(false);
    expect(isBehind(at(null), at(null))).toBe(false);
    expect(isBehind(at(null), at('2024-05-01T10:00:00Z'))).toBe(true);
  });
});
