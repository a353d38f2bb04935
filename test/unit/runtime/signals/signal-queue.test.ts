import { describe, expect, it } from 'vitest';
import { SignalQueue } from '../../../../src/runtime/signals/signal-queue.js';
import type { LocationSignal } from '../../../../src/sync/ports.js';

const A = '00000000-0000-4000-8000-00000000000A';
const signal = (id: string, location = A): LocationSignal => ({
  id,
  location,
  acceptedAt: '2024-06-01T00:00:00Z',
  reset: { to: null },
});

function queue(outcomesInPages: boolean) {
  const final = new Set<string>();
  const completed: Array<[string, boolean]> = [];
  const catching = { up: true };
  const q = new SignalQueue({ outcomesInPages });
  q.attach({
    configured: (uid) => uid.toLowerCase() === A.toLowerCase(),
    open: (id) => !final.has(id),
    answering: () => catching.up,
    completed: (id, written) => completed.push([id, written]),
  });
  return { q, final, completed, catching };
}

describe('the signal queue', () => {
  it('keeps each signal once, per location in any letter case, in the order handed in', () => {
    const { q } = queue(true);
    q.carryOut(signal('s1'));
    q.carryOut(signal('s2', A.toLowerCase()));
    q.carryOut(signal('s1'));
    expect(q.pending(A.toLowerCase()).map((s) => s.id)).toEqual(['s1', 's2']);
    expect(q.runs(A.toLowerCase())).toBe(true);
    expect(q.runs('00000000-0000-4000-8000-00000000000b')).toBe(false);
  });

  it('drops a signal once settled, or once its outcome is read final', () => {
    const { q, final, completed } = queue(true);
    q.carryOut(signal('s1'));
    q.carryOut(signal('s2'));
    q.settled(A, 's1', false);
    expect(q.pending(A).map((s) => s.id)).toEqual(['s2']);
    final.add('s2');
    expect(q.pending(A)).toEqual([]);
    expect(completed).toEqual([]);
  });

  it('tells the channel of a completed signal, and whether its page wrote the done', () => {
    const exactlyOnce = queue(true);
    exactlyOnce.q.carryOut(signal('s1'));
    exactlyOnce.q.settled(A, 's1', true);
    expect(exactlyOnce.completed).toEqual([['s1', true]]);
    const atLeastOnce = queue(false);
    atLeastOnce.q.settled(A, 's1', true);
    expect(atLeastOnce.completed).toEqual([['s1', false]]);
  });

  it('hands out nothing while the location is caught up on after a handover, and keeps its signals for afterwards', () => {
    const { q, final, catching } = queue(true);
    q.carryOut(signal('s1'));
    q.carryOut(signal('s2'));
    catching.up = false;
    expect(q.pending(A)).toEqual([]);
    // The previous owner's done of s1, read while catching up: s1 is dropped once the location answers again.
    final.add('s1');
    catching.up = true;
    expect(q.pending(A).map((s) => s.id)).toEqual(['s2']);
  });

  it('runs nothing before it is attached to the signals channel', () => {
    const q = new SignalQueue({ outcomesInPages: true });
    q.carryOut(signal('s1'));
    expect(q.runs(A)).toBe(false);
    expect(q.pending(A)).toEqual([]);
  });
});
