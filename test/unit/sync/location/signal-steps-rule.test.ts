import { describe, expect, it } from 'vitest';
import { signalStep } from '../../../../src/sync/location/signal-steps-rule.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { LocationSignal } from '../../../../src/sync/ports.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const ID = '00000000-0000-4000-8000-000000000001';
const caughtUp: LocationOffset = {
  since: '2024-06-01T10:00:00Z',
  cursor: null,
  watermark: '2024-06-01T10:00:00Z',
  boundary: ['c9'],
};
const signal = (extra: Partial<LocationSignal>): LocationSignal => ({
  id: ID,
  location: LOC,
  acceptedAt: '2024-06-01T10:05:00Z',
  ...extra,
});

describe('signalStep', () => {
  it('resets the offset to start at `to`, dropping lanes and boundary, complete with that commit', () => {
    const split: LocationOffset = {
      ...caughtUp,
      history: { ...EMPTY_OFFSET, boundary: [], until: '2024-06-01T09:00:00Z' },
    };
    expect(signalStep(split, signal({ reset: { to: '2024-05-01T00:00:00Z' } }), null)).toEqual({
      kind: 'commit',
      offset: { since: '2024-05-01T00:00:00Z', cursor: null, watermark: null, boundary: [], signal: ID },
      done: true,
    });
    expect(signalStep(caughtUp, signal({ reset: { to: null } }), '2024-01-01T00:00:00Z')).toMatchObject({
      offset: { since: null, signal: ID },
    });
  });

  it('starts a backfill as a history lane tagged with the signal, up to when it was accepted by default', () => {
    expect(
      signalStep(caughtUp, signal({ backfill: { since: '2024-05-01T00:00:00Z', until: null } }), null),
    ).toEqual({
      kind: 'commit',
      offset: {
        ...caughtUp,
        signal: ID,
        history: {
          since: '2024-05-01T00:00:00Z',
          cursor: null,
          watermark: null,
          boundary: [],
          until: '2024-06-01T10:05:00Z',
          signal: ID,
        },
      },
      done: false,
    });
  });

  it('reads a backfill without since from the location start', () => {
    const step = signalStep(
      caughtUp,
      signal({ backfill: { since: null, until: null } }),
      '2024-02-01T00:00:00Z',
    );
    expect(step).toMatchObject({ kind: 'commit', offset: { history: { since: '2024-02-01T00:00:00Z' } } });
  });

  it('completes at once a backfill with nothing to read again: nothing published, or an empty range', () => {
    const empty = signalStep(EMPTY_OFFSET, signal({ backfill: { since: null, until: null } }), null);
    expect(empty).toEqual({ kind: 'commit', offset: { ...EMPTY_OFFSET, signal: ID }, done: true });
    const after = signalStep(
      caughtUp,
      signal({ backfill: { since: '2024-06-02T00:00:00Z', until: null } }),
      null,
    );
    expect(after).toEqual({ kind: 'commit', offset: { ...caughtUp, signal: ID }, done: true });
  });

  it('holds a backfill while the location reads history already', () => {
    const split: LocationOffset = {
      ...caughtUp,
      history: { ...EMPTY_OFFSET, boundary: [], until: '2024-06-01T09:00:00Z' },
    };
    expect(signalStep(split, signal({ backfill: { since: null, until: null } }), null)).toEqual({
      kind: 'wait',
    });
  });

  it('settles a signal the offset names, started or carried out, never carrying it out twice', () => {
    const reset = signal({ reset: { to: null } });
    expect(signalStep({ ...caughtUp, signal: ID }, reset, null)).toEqual({ kind: 'settled' });
    const running: LocationOffset = {
      ...caughtUp,
      signal: ID,
      history: { ...EMPTY_OFFSET, boundary: [], until: '2024-06-01T09:00:00Z', signal: ID },
    };
    expect(signalStep(running, signal({ backfill: { since: null, until: null } }), null)).toEqual({
      kind: 'settled',
    });
  });
});
