import { describe, expect, it } from 'vitest';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { PreparedPage } from '../../../../src/sync/location/page-pipeline.js';
import type { PageRequest } from '../../../../src/sync/ports.js';
import { ReadAhead, samePageRequest, type PageAhead } from '../../../../src/sync/location/read-ahead.js';

const LOC = 'loc';
const from: LocationOffset = { since: null, cursor: 'c1', watermark: null, boundary: [] };
const next = (cursor: string): PageRequest => ({ kind: 'next', locationUid: LOC, cursor, limit: 3 });

/** Starts a read-ahead whose page never arrives; returns the signal it was read under. */
function started(readAhead: ReadAhead, request: PageRequest, outer?: AbortSignal): () => AbortSignal {
  let seen: AbortSignal | undefined;
  readAhead.start(
    from,
    request,
    (signal): PageAhead => {
      seen = signal;
      return {
        listed: new Promise(() => undefined),
        prepared: Promise.reject<PreparedPage>(new Error('the read failed')),
      };
    },
    outer,
  );
  return () => seen!;
}

describe('ReadAhead', () => {
  it('hands the page over when it starts at the same offset with the same request', () => {
    const readAhead = new ReadAhead();
    const signal = started(readAhead, next('c1'));
    expect(readAhead.take(from, next('c1'))).not.toBeNull();
    expect(signal().aborted).toBe(false);
    expect(readAhead.take(from, next('c1'))).toBeNull(); // taken once
  });

  it('drops and cancels a page read for another request or from another offset', () => {
    for (const [offset, request] of [
      [from, next('c2')],
      [{ ...from }, next('c1')],
    ] as const) {
      const readAhead = new ReadAhead();
      const signal = started(readAhead, next('c1'));
      expect(readAhead.take(offset, request)).toBeNull();
      expect(signal().aborted).toBe(true);
    }
  });

  it('gives no page read under a signal that aborted since', () => {
    const readAhead = new ReadAhead();
    const outer = new AbortController();
    started(readAhead, next('c1'), outer.signal);
    outer.abort(new Error('stopping'));
    expect(readAhead.take(from, next('c1'))).toBeNull();
  });

  it('cancels the page read ahead when dropped, or when another is started', () => {
    const readAhead = new ReadAhead();
    const first = started(readAhead, next('c1'));
    const second = started(readAhead, next('c2'));
    expect(first().aborted).toBe(true);
    readAhead.drop();
    expect(second().aborted).toBe(true);
  });
});

describe('ReadAhead.stateFrom', () => {
  /** Starts a read-ahead whose page is prepared when `finish` is called. */
  function controlled(readAhead: ReadAhead): () => void {
    let finish = (): void => undefined;
    const prepared = new Promise<PreparedPage>((resolve) => {
      finish = () => resolve({} as PreparedPage);
    });
    readAhead.start(from, next('c1'), () => ({ listed: new Promise(() => undefined), prepared }));
    return finish;
  }

  it('is none with nothing read ahead, pending while the page is prepared, then ready', async () => {
    const readAhead = new ReadAhead();
    expect(readAhead.stateFrom(from)).toEqual({ state: 'none' });
    const finish = controlled(readAhead);
    const pending = readAhead.stateFrom(from);
    expect(pending.state).toBe('pending');
    finish();
    if (pending.state === 'pending') await pending.settled;
    expect(readAhead.stateFrom(from)).toEqual({ state: 'ready' });
  });

  it('is ready once a read failed (taking it costs no request), and none for another offset or once dropped', async () => {
    const readAhead = new ReadAhead();
    started(readAhead, next('c1'));
    const state = readAhead.stateFrom(from);
    if (state.state === 'pending') await state.settled;
    expect(readAhead.stateFrom(from)).toEqual({ state: 'ready' });
    expect(readAhead.stateFrom({ ...from })).toEqual({ state: 'none' });
    controlled(readAhead);
    const dropped = readAhead.stateFrom(from);
    readAhead.drop();
    if (dropped.state === 'pending') await dropped.settled; // a dropped page settles its waiters too
    expect(readAhead.stateFrom(from)).toEqual({ state: 'none' });
  });
});

describe('samePageRequest', () => {
  it('compares requests field by field', () => {
    const first: PageRequest = { kind: 'first', locationUid: LOC, since: 'x', order: 'asc', limit: 3 };
    expect(samePageRequest(first, { ...first })).toBe(true);
    expect(samePageRequest(first, { ...first, since: null })).toBe(false);
    expect(samePageRequest(first, { ...first, limit: 4 })).toBe(false);
    expect(samePageRequest(next('c1'), next('c1'))).toBe(true);
    expect(samePageRequest(next('c1'), next('c2'))).toBe(false);
    expect(samePageRequest(next('c1'), first)).toBe(false);
    expect(samePageRequest(first, next('c1'))).toBe(false);
  });
});
