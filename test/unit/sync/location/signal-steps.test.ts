/**
 * SignalSteps: which of a location's pending signals is committed next and what that commit is, the signals its
 * offset names already settled on the way, a backfill behind a history lane waiting, and a stored step settled.
 */
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import { SignalSteps } from '../../../../src/sync/location/signal-steps.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { LocationSignal, LocationSignals } from '../../../../src/sync/ports.js';
import { PendingSignals } from '../../../support/sync/pending-signals.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const PUBLISHED: LocationOffset = {
  since: '2026-11-24T10:00:00Z',
  cursor: null,
  watermark: '2026-11-24T11:00:00Z',
  boundary: ['c1'],
};
const reset = (n: number, to: string | null = null): LocationSignal => ({
  id: id(n),
  location: LOC,
  acceptedAt: '2026-11-24T12:00:00Z',
  reset: { to },
});
const backfill = (n: number): LocationSignal => ({
  id: id(n),
  location: LOC,
  acceptedAt: '2026-11-24T12:00:00Z',
  backfill: { since: '2026-11-24T09:00:00Z', until: null },
});

const steps = (signals: LocationSignals | undefined) =>
  new SignalSteps({ locationUid: LOC, signals, startSince: null, logger: silentLogger() });

describe('the signal steps of a location', () => {
  it('has nothing to commit when signals are not taken or none is pending', () => {
    expect(steps(undefined).next(PUBLISHED, PUBLISHED)).toBeNull();
    expect(steps(new PendingSignals([])).next(PUBLISHED, PUBLISHED)).toBeNull();
  });

  it('commits a reset as an offset with no records, its done in the same commit, against the stored offset', () => {
    const signals = new PendingSignals([reset(1, '2026-11-01T00:00:00Z')]);
    const committed = { ...PUBLISHED, cursor: 'stored' };
    const step = steps(signals).next(PUBLISHED, committed);
    expect(step).toMatchObject({ done: true, reset: true, signal: { id: id(1) } });
    expect(step?.commit).toEqual({
      locationUid: LOC,
      calls: [],
      deadLetters: [],
      offset: { since: '2026-11-01T00:00:00Z', cursor: null, watermark: null, boundary: [], signal: id(1) },
      committed,
      signalDone: id(1),
    });
    // Nothing is settled before the commit is stored.
    expect(signals.settledLog).toEqual([]);
  });

  it('commits a backfill as a history lane without its done, and settles it incomplete once stored', () => {
    const signals = new PendingSignals([backfill(1)]);
    const subject = steps(signals);
    const step = subject.next(PUBLISHED, PUBLISHED);
    expect(step).toMatchObject({ done: false, reset: false });
    expect(step?.commit.signalDone).toBeUndefined();
    expect(step?.commit.offset.history).toMatchObject({ since: '2026-11-24T09:00:00Z', signal: id(1) });
    if (step === null) throw new Error('no step');
    subject.stored(step);
    expect(signals.settledLog).toEqual([[id(1), false]]);
  });

  it('settles the signals the offset names already, complete unless their history lane is still read, then gives the next', () => {
    const reading: LocationOffset = {
      ...PUBLISHED,
      signal: id(2),
      history: { since: null, cursor: null, watermark: null, boundary: [], until: 'x', signal: id(2) },
    };
    const signals = new PendingSignals([reset(1), backfill(2), reset(3)]);
    const step = steps(signals).next({ ...reading, signal: id(1) }, reading);
    // id(1) is the offset's last signal, id(2) the lane's: settled, the first complete, the second not.
    expect(signals.settledLog).toEqual([
      [id(1), true],
      [id(2), false],
    ]);
    expect(step?.signal.id).toBe(id(3));
  });

  it('waits behind a history lane: a backfill then gives nothing, and no later signal is looked at', () => {
    const reading: LocationOffset = {
      ...PUBLISHED,
      history: { since: null, cursor: null, watermark: null, boundary: [], until: 'x' },
    };
    const signals = new PendingSignals([backfill(1), reset(2)]);
    expect(steps(signals).next(reading, reading)).toBeNull();
    expect(signals.settledLog).toEqual([]);
  });

  it('completes a backfill when the page that merged its lane is stored', () => {
    const signals = new PendingSignals([]);
    steps(signals).merged(id(4));
    expect(signals.settledLog).toEqual([[id(4), true]]);
  });
});
