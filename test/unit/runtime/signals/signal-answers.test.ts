import { describe, expect, it } from 'vitest';
import type { Signal, SignalKind, SignalOutcome } from '../../../../src/kafka/signals/signal-model.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { SignalAnswers } from '../../../../src/runtime/signals/signal-answers.js';
import type { LocationSignal } from '../../../../src/runtime/signals/signal-ports.js';
import { ManualClock } from '../../../support/clock.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const UNKNOWN = '00000000-0000-4000-8000-0000000000ff';

let next = 0;
function signal(kind: SignalKind, location: string, extra: Partial<Signal> = {}): Signal {
  next += 1;
  return {
    id: `00000000-0000-4000-8000-${String(next).padStart(12, '0')}`,
    kind,
    location,
    requestedAt: '2024-06-01T00:00:00Z',
    requestedBy: 'ops@host',
    ...extra,
  };
}

/** An answerer owning partition 0 (location A's and UNKNOWN's), not partition 1 (B's); outcomes read back at once. */
function answerer(
  options: {
    carried?: LocationSignal[];
    failWrites?: number;
    pausedChanged?: () => void;
  } = {},
) {
  const written: Array<{ partition: number; outcome: SignalOutcome }> = [];
  const metrics = testMetrics();
  let failures = options.failWrites ?? 0;
  const answers: SignalAnswers = new SignalAnswers({
    instance: 'i1@host',
    partitionOf: (uid) => (uid === B ? 1 : 0),
    ownsPartition: (partition) => partition === 0,
    configured: (uid) => uid === A || uid === B,
    write: (partition, outcome) => {
      if (failures > 0) {
        failures -= 1;
        return Promise.reject(new Error('broker down'));
      }
      written.push({ partition, outcome });
      answers.onEntry({ type: 'outcome', outcome }, { partition });
      return Promise.resolve();
    },
    target: { runs: (uid) => uid === A, carryOut: (s) => options.carried?.push(s) },
    ...(options.pausedChanged !== undefined && { pausedChanged: options.pausedChanged }),
    clock: new ManualClock(Date.parse('2024-06-01T00:00:05Z')),
    logger: silentLogger(),
    metrics,
  });
  return { answers, written, metrics };
}

const states = (written: Array<{ outcome: SignalOutcome }>) =>
  written.map(({ outcome }) => [outcome.signalId, outcome.state, outcome.reason?.code]);

describe('the signal answerer', () => {
  it('answers nothing before the first read is complete, then each signal of its partitions in order', async () => {
    const { answers, written, metrics } = answerer();
    const pause = signal('pause', A);
    const other = signal('pause', B);
    answers.onEntry({ type: 'signal', signal: pause }, { partition: 0 });
    answers.onEntry({ type: 'signal', signal: other }, { partition: 1 });
    await answers.answerPending();
    expect(written).toEqual([]);

    await answers.caughtUp();
    expect(states(written)).toEqual([[pause.id, 'done', undefined]]);
    expect(written[0]).toMatchObject({
      partition: 0,
      outcome: { at: '2024-06-01T00:00:05.000Z', instance: 'i1@host' },
    });
    expect(answers.isPaused(A)).toBe(true);
    expect(answers.isPaused(B)).toBe(false);
    expect((await metrics.pausedLocations.get()).values[0]?.value).toBe(1);
    // Every kind and state has a series from the start; only the pause's done counted.
    expect((await metrics.signalOutcomes.get()).values.filter((v) => v.value > 0)).toEqual([
      expect.objectContaining({ labels: { kind: 'pause', state: 'done' }, value: 1 }),
    ]);
  });

  it('refuses a signal for a location no configuration lists, saying what to do', async () => {
    const { answers, written } = answerer();
    const lost = signal('backfill', UNKNOWN);
    await answers.caughtUp();
    answers.onEntry({ type: 'signal', signal: lost }, { partition: 0 });
    await answers.answerPending();
    expect(states(written)).toEqual([[lost.id, 'refused', 'LOCATION_NOT_CONFIGURED']]);
    expect(written[0]?.outcome.reason?.message).toContain('add it to sources[].locations');
  });

  it('accepts a backfill once and hands it to the target with its range and the time it was accepted', async () => {
    const carried: LocationSignal[] = [];
    const { answers, written } = answerer({ carried });
    const backfill = signal('backfill', A, { since: '2024-05-01T00:00:00Z' });
    answers.onEntry({ type: 'signal', signal: backfill }, { partition: 0 });
    await answers.caughtUp();
    await answers.answerPending();
    expect(states(written)).toEqual([[backfill.id, 'accepted', undefined]]);
    // Handed again at each answer while it runs: the target keeps it once (signal-queue.ts).
    expect(carried.length).toBeGreaterThan(0);
    for (const handed of carried)
      expect(handed).toEqual({
        id: backfill.id,
        location: A,
        acceptedAt: '2024-06-01T00:00:05.000Z',
        backfill: { since: '2024-05-01T00:00:00Z', until: null },
      });
    expect(answers.status()).toEqual({
      pausedLocations: [],
      running: [{ ...backfill, acceptedBy: 'i1@host' }],
    });
  });

  it('hands a signal accepted before a restart to the scheduler again, without a second answer', async () => {
    const carried: LocationSignal[] = [];
    const { answers, written } = answerer({ carried });
    const reset = signal('reset', A, { to: '2024-05-01T00:00:00Z' });
    answers.onEntry({ type: 'signal', signal: reset }, { partition: 0 });
    answers.onEntry(
      { type: 'outcome', outcome: { signalId: reset.id, state: 'accepted', at: 't', instance: 'i0@old' } },
      { partition: 0 },
    );
    await answers.caughtUp();
    expect(written).toEqual([]);
    expect(carried).toEqual([
      { id: reset.id, location: A, acceptedAt: 't', reset: { to: '2024-05-01T00:00:00Z' } },
    ]);
  });

  it('accepts the next backfill or reset of a location only once the one before is done, in the order sent', async () => {
    const carried: LocationSignal[] = [];
    const { answers, written, metrics } = answerer({ carried });
    const running = async () => (await metrics.signalsRunning.get()).values[0]?.value;
    const first = signal('backfill', A);
    const second = signal('reset', A);
    const third = signal('backfill', A);
    const pause = signal('pause', A);
    for (const s of [first, second, third, pause])
      answers.onEntry({ type: 'signal', signal: s }, { partition: 0 });
    await answers.caughtUp();
    await answers.answerPending();
    // A pause is no offset change: answered at once, whatever runs.
    expect(states(written)).toEqual([
      [first.id, 'accepted', undefined],
      [pause.id, 'done', undefined],
    ]);
    expect(new Set(carried.map((s) => s.id))).toEqual(new Set([first.id]));
    expect(await running()).toBe(1);

    await answers.completed(first.id, false);
    await answers.answerPending();
    expect(states(written).slice(2)).toEqual([
      [first.id, 'done', undefined],
      [second.id, 'accepted', undefined],
    ]);
    expect(new Set(carried.map((s) => s.id))).toEqual(new Set([first.id, second.id]));
  });

  it('writes the done of a signal completed outside its page once, and never after a final outcome', async () => {
    const { answers, written } = answerer();
    const reset = signal('reset', A);
    answers.onEntry({ type: 'signal', signal: reset }, { partition: 0 });
    await answers.caughtUp();
    await answers.completed(reset.id, false);
    await answers.completed(reset.id, false);
    expect(states(written)).toEqual([
      [reset.id, 'accepted', undefined],
      [reset.id, 'done', undefined],
    ]);
    expect(answers.isOpen(reset.id)).toBe(false);
  });

  it('counts a done its page wrote in the transaction without writing it again', async () => {
    const { answers, written, metrics } = answerer();
    const backfill = signal('backfill', A);
    answers.onEntry({ type: 'signal', signal: backfill }, { partition: 0 });
    await answers.caughtUp();
    await answers.completed(backfill.id, true);
    expect(states(written)).toEqual([[backfill.id, 'accepted', undefined]]);
    const done = (await metrics.signalOutcomes.get()).values.find(
      (v) => v.labels.kind === 'backfill' && v.labels.state === 'done',
    );
    expect(done?.value).toBe(1);
  });

  it('carries out pause and resume at once, whatever runs, and says each time the paused set changes', async () => {
    let changes = 0;
    const { answers, written } = answerer({ pausedChanged: () => (changes += 1) });
    const pause = signal('pause', A);
    const backfill = signal('backfill', A);
    const resume = signal('resume', A);
    await answers.caughtUp();
    answers.onEntry({ type: 'signal', signal: pause }, { partition: 0 });
    await answers.answerPending();
    expect(answers.isPaused(A)).toBe(true);
    expect(changes).toBe(1);
    answers.onEntry({ type: 'signal', signal: backfill }, { partition: 0 });
    answers.onEntry({ type: 'signal', signal: resume }, { partition: 0 });
    await answers.answerPending();
    expect(states(written)).toEqual([
      [pause.id, 'done', undefined],
      [backfill.id, 'accepted', undefined],
      [resume.id, 'done', undefined],
    ]);
    expect(answers.isPaused(A)).toBe(false);
    expect(changes).toBe(2);
  });

  it('refuses an unreadable signal record from the partition it was read from', async () => {
    const { answers, written } = answerer();
    answers.onEntry(
      { type: 'invalid-signal', signalId: 'bad-1', problems: ['unknown version 2'] },
      { partition: 0 },
    );
    answers.onEntry(
      { type: 'invalid-signal', signalId: 'bad-2', problems: ['unknown version 2'] },
      { partition: 1 },
    );
    await answers.caughtUp();
    expect(states(written)).toEqual([['bad-1', 'refused', 'SIGNAL_INVALID']]);
    expect(written[0]?.outcome.reason?.message).toBe(
      'not a signal this version can act on: unknown version 2',
    );
  });

  it('tries a failed answer again at the next call', async () => {
    const { answers, written } = answerer({ failWrites: 1 });
    const pause = signal('pause', A);
    answers.onEntry({ type: 'signal', signal: pause }, { partition: 0 });
    await answers.caughtUp();
    expect(written).toEqual([]);
    await answers.answerPending();
    expect(states(written)).toEqual([[pause.id, 'done', undefined]]);
  });
});
