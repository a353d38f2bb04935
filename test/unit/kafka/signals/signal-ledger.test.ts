import { describe, expect, it } from 'vitest';
import { SignalLedger } from '../../../../src/kafka/signals/signal-ledger.js';
import type {
  OutcomeState,
  Signal,
  SignalKind,
  SignalTopicEntry,
} from '../../../../src/kafka/signals/signal-model.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

let next = 0;
function sent(kind: SignalKind, location: string): SignalTopicEntry & { type: 'signal' } {
  next += 1;
  const signal: Signal = {
    id: `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`,
    kind,
    location,
    requestedAt: '2024-06-01T00:00:00Z',
    requestedBy: 'ops@host',
  };
  return { type: 'signal', signal };
}

function answered(entry: { signal: Signal }, state: OutcomeState): SignalTopicEntry {
  return {
    type: 'outcome',
    outcome: {
      signalId: entry.signal.id,
      state,
      at: '2024-06-01T00:00:01Z',
      instance: 'i1',
      ...(state === 'refused' && { reason: { code: 'LOCATION_NOT_CONFIGURED', message: 'x' } }),
    },
  };
}

function ledgerOf(...entries: SignalTopicEntry[]): SignalLedger {
  const ledger = new SignalLedger();
  for (const entry of entries) ledger.apply(entry);
  return ledger;
}

describe('the signal ledger', () => {
  it('pauses a location once its pause is done, and not before', () => {
    const pause = sent('pause', A);
    expect(ledgerOf(pause).isPaused(A)).toBe(false);
    expect(ledgerOf(pause, answered(pause, 'accepted')).isPaused(A)).toBe(false);
    expect(ledgerOf(pause, answered(pause, 'done')).isPaused(A)).toBe(true);
    expect(ledgerOf(pause, answered(pause, 'done')).isPaused(B)).toBe(false);
  });

  it('takes the last done pause or resume of a location in the order they were sent', () => {
    const pause = sent('pause', A);
    const resume = sent('resume', A);
    const pauseAgain = sent('pause', A);
    // Outcomes in another order than the signals: the signals' order decides.
    const ledger = ledgerOf(
      pause,
      resume,
      pauseAgain,
      answered(pauseAgain, 'done'),
      answered(resume, 'done'),
    );
    expect(ledger.isPaused(A)).toBe(true);
    expect(ledgerOf(pause, resume, answered(pause, 'done'), answered(resume, 'done')).isPaused(A)).toBe(
      false,
    );
  });

  it('ignores a refused pause, and compares location uids whatever their case', () => {
    const refused = sent('pause', A);
    expect(ledgerOf(refused, answered(refused, 'refused')).pausedLocations().size).toBe(0);
    const pause = sent('pause', A.toUpperCase());
    expect(ledgerOf(pause, answered(pause, 'done')).isPaused(A)).toBe(true);
  });

  it('lists the signals without an outcome, and those accepted and not done, in the order sent', () => {
    const first = sent('backfill', A);
    const second = sent('reset', B);
    const third = sent('pause', B);
    const ledger = ledgerOf(first, second, third, answered(second, 'accepted'), answered(third, 'done'));
    expect(ledger.unanswered().map((s) => s.id)).toEqual([first.signal.id]);
    expect(ledger.running().map((s) => s.id)).toEqual([second.signal.id]);
  });

  it('keeps the unanswered ones in the order first read as entries come: a signal read again, an outcome read before its signal', () => {
    const first = sent('backfill', A);
    const second = sent('reset', B);
    const third = sent('pause', A);
    const compacted = sent('resume', B);
    const ledger = ledgerOf(answered(compacted, 'done'), first, second, third);
    expect(ledger.unanswered().map((s) => s.id)).toEqual([first, second, third].map((e) => e.signal.id));
    // Read again (a reader that rejoined), it keeps its place; one with an outcome read first never joins.
    ledger.apply(first);
    ledger.apply(compacted);
    expect(ledger.unanswered().map((s) => s.id)).toEqual([first, second, third].map((e) => e.signal.id));
    ledger.apply(answered(second, 'accepted'));
    expect(ledger.unanswered().map((s) => s.id)).toEqual([first, third].map((e) => e.signal.id));
    ledger.apply(answered(first, 'refused'));
    ledger.apply(answered(third, 'done'));
    expect(ledger.unanswered()).toEqual([]);
  });

  it('keeps a final outcome when a late accepted arrives after it', () => {
    const backfill = sent('backfill', A);
    const ledger = ledgerOf(backfill, answered(backfill, 'done'), answered(backfill, 'accepted'));
    expect(ledger.outcome(backfill.signal.id)?.state).toBe('done');
  });

  it('lists the invalid signal records still to be refused', () => {
    const invalid: SignalTopicEntry = {
      type: 'invalid-signal',
      signalId: 'x',
      problems: ['not a JSON object'],
    };
    expect(ledgerOf(invalid).unansweredInvalid()).toEqual([
      { signalId: 'x', problems: ['not a JSON object'] },
    ]);
    expect(
      ledgerOf(invalid, {
        type: 'outcome',
        outcome: { signalId: 'x', state: 'refused', at: 't', instance: 'i' },
      }).unansweredInvalid(),
    ).toEqual([]);
  });

  it('keeps its running count as signals are accepted, done, refused and answered late, equal to running()', () => {
    const ledger = new SignalLedger();
    const counted = () => {
      expect(ledger.runningCount).toBe(ledger.running().length);
      return ledger.runningCount;
    };
    const backfill = sent('backfill', A);
    const reset = sent('reset', B);
    const pause = sent('pause', A);
    ledger.apply(backfill);
    ledger.apply(reset);
    ledger.apply(pause);
    expect(counted()).toBe(0);
    ledger.apply(answered(backfill, 'accepted'));
    ledger.apply(answered(reset, 'accepted'));
    expect(counted()).toBe(2);
    // Accepted again (a takeover's answer): still one.
    ledger.apply(answered(backfill, 'accepted'));
    expect(counted()).toBe(2);
    ledger.apply(answered(backfill, 'done'));
    expect(counted()).toBe(1);
    // A former owner's late `accepted` after the final outcome counts for nothing.
    ledger.apply(answered(backfill, 'accepted'));
    expect(counted()).toBe(1);
    ledger.apply(answered(reset, 'refused'));
    expect(counted()).toBe(0);
    ledger.apply(answered(pause, 'done'));
    expect(counted()).toBe(0);
  });

  it('counts a signal read after its accepted outcome (compaction keeps the later record) once it is read, once', () => {
    const ledger = new SignalLedger();
    const backfill = sent('backfill', A);
    ledger.apply(answered(backfill, 'accepted'));
    expect(ledger.runningCount).toBe(0);
    ledger.apply(backfill);
    ledger.apply(backfill);
    expect(ledger.runningCount).toBe(1);
    expect(ledger.running().map((s) => s.id)).toEqual([backfill.signal.id]);
  });

  it('folds the paused set again when a pause or resume is answered, however many other entries came between', () => {
    const ledger = new SignalLedger();
    const pause = sent('pause', A);
    ledger.apply(pause);
    expect(ledger.isPaused(A)).toBe(false);
    for (let i = 0; i < 3; i++) {
      const backfill = sent('backfill', A);
      ledger.apply(backfill);
      ledger.apply(answered(backfill, 'done'));
      expect(ledger.isPaused(A)).toBe(false);
    }
    ledger.apply(answered(pause, 'done'));
    expect(ledger.isPaused(A)).toBe(true);
    const resume = sent('resume', A);
    ledger.apply(resume);
    expect(ledger.isPaused(A)).toBe(true);
    ledger.apply(answered(resume, 'done'));
    expect(ledger.isPaused(A)).toBe(false);
  });
});
