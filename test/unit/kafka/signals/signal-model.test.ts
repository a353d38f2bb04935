import { describe, expect, it } from 'vitest';
import {
  checkSignalRequest,
  decodeSignalRecord,
  encodeOutcome,
  encodeSignal,
  outcomeKey,
  signalKey,
  type Signal,
  type SignalOutcome,
} from '../../../../src/kafka/signals/signal-model.js';
import { signalsTopicName } from '../../../../src/kafka/topics/topics.js';

const LOCATION = '00000000-0000-4000-8000-00000000000a';
const ID = '11111111-2222-4333-8444-555555555555';
const NOW = Date.parse('2024-06-01T00:00:00Z');

const signal: Signal = {
  id: ID,
  kind: 'backfill',
  location: LOCATION,
  since: '2024-05-01T00:00:00Z',
  until: '2024-05-02T00:00:00+02:00',
  requestedAt: '2024-06-01T00:00:00.000Z',
  requestedBy: 'ops@host',
};

describe('a signal request', () => {
  it('is accepted for each kind with the options it takes', () => {
    expect(checkSignalRequest({ kind: 'backfill', location: LOCATION, since: signal.since }, NOW)).toEqual({
      ok: true,
      value: { kind: 'backfill', location: LOCATION, since: signal.since },
    });
    expect(checkSignalRequest({ kind: 'pause', location: LOCATION }, NOW).ok).toBe(true);
    expect(checkSignalRequest({ kind: 'resume', location: LOCATION }, NOW).ok).toBe(true);
    expect(
      checkSignalRequest({ kind: 'reset', location: LOCATION, to: '2024-05-01T00:00:00Z' }, NOW),
    ).toEqual({ ok: true, value: { kind: 'reset', location: LOCATION, to: '2024-05-01T00:00:00Z' } });
  });

  it('is refused for an unknown kind, naming the kinds', () => {
    const checked = checkSignalRequest({ kind: 'stop', location: LOCATION }, NOW);
    expect(checked).toEqual({
      ok: false,
      problems: ['kind must be one of backfill, pause, resume, reset; got "stop"'],
    });
  });

  it('names every problem at once: a location that is not a uid, an option of another kind, a bad date', () => {
    const checked = checkSignalRequest(
      { kind: 'pause', location: 'shop-1', since: '2024-05-01T00:00:00Z' },
      NOW,
    );
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.problems).toEqual([
      'location must be a location uid (UUID); got "shop-1"',
      'since does not apply to pause (it takes no option but the location)',
    ]);
    const dates = checkSignalRequest({ kind: 'backfill', location: LOCATION, until: '2024-05-01' }, NOW);
    expect(!dates.ok && dates.problems).toEqual([
      'until must be an RFC 3339 date-time with an offset, e.g. 2024-05-01T00:00:00Z; got "2024-05-01"',
    ]);
  });

  it('refuses a backfill whose since is not before its until, or lies in the future', () => {
    const reversed = checkSignalRequest(
      {
        kind: 'backfill',
        location: LOCATION,
        since: '2024-05-02T00:00:00Z',
        until: '2024-05-02T02:00:00+02:00',
      },
      NOW,
    );
    expect(!reversed.ok && reversed.problems).toEqual([
      'since (2024-05-02T00:00:00Z) must be before until (2024-05-02T02:00:00+02:00)',
    ]);
    const future = checkSignalRequest(
      { kind: 'backfill', location: LOCATION, since: '2024-07-01T00:00:00Z' },
      NOW,
    );
    expect(!future.ok && future.problems).toEqual([
      'since (2024-07-01T00:00:00Z) is in the future: there is nothing to read again yet',
    ]);
  });
});

describe('signal records', () => {
  it('round-trip a signal and an outcome under their keys', () => {
    expect(decodeSignalRecord('c1', Buffer.from(signalKey('c1', ID)), encodeSignal(signal), NOW)).toEqual({
      type: 'signal',
      signal,
    });
    const outcome: SignalOutcome = {
      signalId: ID,
      state: 'refused',
      reason: { code: 'LOCATION_NOT_CONFIGURED', message: 'no instance runs it' },
      at: '2024-06-01T00:00:01.000Z',
      instance: 'c1@host',
    };
    expect(decodeSignalRecord('c1', Buffer.from(outcomeKey('c1', ID)), encodeOutcome(outcome), NOW)).toEqual({
      type: 'outcome',
      outcome,
    });
  });

  it("skip other connectors' records, tombstones, unreadable keys and unreadable outcomes", () => {
    const value = encodeSignal(signal);
    expect(decodeSignalRecord('c2', Buffer.from(signalKey('c1', ID)), value, NOW)).toBeNull();
    expect(decodeSignalRecord('c1', Buffer.from(signalKey('c1', ID)), null, NOW)).toBeNull();
    expect(decodeSignalRecord('c1', null, value, NOW)).toBeNull();
    expect(decodeSignalRecord('c1', Buffer.from('c1/signal/not-an-id'), value, NOW)).toBeNull();
    expect(decodeSignalRecord('c1', Buffer.from(`c1/other/${ID}`), value, NOW)).toBeNull();
    expect(
      decodeSignalRecord('c1', Buffer.from(outcomeKey('c1', ID)), Buffer.from('{"state":"done"}'), NOW),
    ).toBeNull();
  });

  it('read a signal this version cannot act on as invalid, naming why, so it can be refused', () => {
    const key = Buffer.from(signalKey('c1', ID));
    expect(decodeSignalRecord('c1', key, Buffer.from('{not json'), NOW)).toEqual({
      type: 'invalid-signal',
      signalId: ID,
      problems: ['not a JSON object'],
    });
    expect(decodeSignalRecord('c1', key, Buffer.from('{"v":2,"kind":"pause"}'), NOW)).toEqual({
      type: 'invalid-signal',
      signalId: ID,
      problems: ['unknown version 2'],
    });
    expect(
      decodeSignalRecord('c1', key, Buffer.from(`{"v":1,"kind":"stop","location":"${LOCATION}"}`), NOW),
    ).toEqual({
      type: 'invalid-signal',
      signalId: ID,
      problems: ['kind must be one of backfill, pause, resume, reset; got "stop"'],
    });
  });

  it('live in the offsets topic’s -signals topic', () => {
    expect(signalsTopicName('calls-connector-offsets')).toBe('calls-connector-offsets-signals');
  });
});
