import { describe, expect, it } from 'vitest';
import { DueQueue } from '../../../../src/sync/scheduler/due-queue.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';

interface Item {
  name: string;
  dueAt: number;
  waiting: boolean;
}

const item = (name: string): Item => ({ name, dueAt: 0, waiting: true });

function queue(clock = new ManualClock()) {
  let wakes = 0;
  const due = new DueQueue<Item>({ clock, waiting: (i) => i.waiting, onWake: () => (wakes += 1) });
  return { due, clock, wakes: () => wakes };
}

/** Every item due now, in the order they are taken. */
function takeAll(due: DueQueue<Item>): string[] {
  const names: string[] = [];
  for (let i = due.takeDue(); i !== undefined; i = due.takeDue()) names.push(i.name);
  return names;
}

describe('DueQueue', () => {
  it('takes the item due first, and items due at one time in the order they became due', () => {
    const { due, clock } = queue();
    const [a, b, c] = [item('a'), item('b'), item('c')];
    due.schedule(b, 20);
    due.schedule(c, 10);
    due.schedule(a, 20);
    expect(due.takeDue()).toBeUndefined();
    clock.advance(20);
    expect(takeAll(due)).toEqual(['c', 'b', 'a']);
  });

  it('drops the older entry of an item made due again (lazy deletion)', () => {
    const { due, clock } = queue();
    const a = item('a');
    due.schedule(a, 0);
    due.schedule(a, 50);
    expect(due.anyDue()).toBe(false);
    expect(due.next()?.dueAt).toBe(50);
    clock.advance(50);
    expect(takeAll(due)).toEqual(['a']);
  });

  it('skips an item that is no longer waiting, and leaves out one due never', () => {
    const { due } = queue();
    const [running, never, waiting] = [item('running'), item('never'), item('waiting')];
    due.schedule(running, 0);
    due.schedule(never, Number.POSITIVE_INFINITY);
    due.schedule(waiting, 0);
    running.waiting = false;
    expect(takeAll(due)).toEqual(['waiting']);
    expect(due.next()).toBeUndefined();
    expect(never.dueAt).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps one timer for its parked workers, at the earliest due time, and hands one item to each', async () => {
    const { due, clock, wakes } = queue();
    const [a, b] = [item('a'), item('b')];
    due.schedule(a, 100);
    due.schedule(b, 100);
    const parked = [due.park(), due.park(), due.park()];
    expect(clock.pending).toBe(1);
    expect(clock.sleeps).toEqual([100]);
    clock.advance(100);
    await settles(() => wakes() === 1, 'the timer fired');
    due.handOut(() => due.takeDue());
    due.releaseAll();
    const handed = await Promise.all(parked);
    expect(handed.map((i) => i?.name).sort()).toEqual(['a', 'b', undefined].sort());
    expect(clock.pending).toBe(0);
  });

  it('sets its timer earlier for an item due sooner, and leaves a timer already set earlier', () => {
    const { due, clock } = queue();
    const [late, soon, later] = [item('late'), item('soon'), item('later')];
    due.schedule(late, 500);
    void due.park();
    due.schedule(soon, 100);
    due.handOut(() => undefined);
    due.schedule(later, 900);
    due.handOut(() => undefined);
    // One timer at 500, cancelled for one at 100; the item due later changes nothing.
    expect(clock.sleeps).toEqual([500, 100]);
    expect(clock.pending).toBe(1);
    due.releaseAll();
  });

  it('sets no timer while no worker is parked, and none for nothing due', () => {
    const { due, clock } = queue();
    due.schedule(item('a'), 100);
    due.handOut(() => undefined);
    expect(clock.pending).toBe(0);
    const empty = queue();
    void empty.due.park();
    expect(empty.clock.pending).toBe(0);
    empty.due.releaseAll();
  });
});

describe('DueQueue groups (rate-limit scopes, issue 32)', () => {
  interface Grouped extends Item {
    group: string;
  }
  const grouped = (name: string, group: string): Grouped => ({ ...item(name), group });

  function groupedQueue(heldUntil: (group: string) => number | null = () => null) {
    const clock = new ManualClock();
    const parked: Array<[string, number]> = [];
    const due = new DueQueue<Grouped>({
      clock,
      waiting: (i) => i.waiting,
      onWake: () => undefined,
      groupOf: (i) => i.group,
      heldUntil,
      parked: (i, until) => parked.push([i.name, until]),
    });
    return { due, clock, parked };
  }

  it('takes the items due from the groups in turn, each group in due order', () => {
    const { due, clock } = groupedQueue();
    for (const [name, group, at] of [
      ['g2', 'G', 20],
      ['g1', 'G', 10],
      ['g3', 'G', 30],
      ['h1', 'H', 40],
      ['h2', 'H', 50],
    ] as const)
      due.schedule(grouped(name, group), at);
    clock.advance(50);
    const taken: string[] = [];
    for (let i = due.takeDue(); i !== undefined; i = due.takeDue()) taken.push(i.name);
    // A grant with many due does not go first for all of them: one of each grant in turn.
    expect(taken).toEqual(['g1', 'h1', 'g2', 'h2', 'g3']);
  });

  it('parks the items due of a held group at the hold’s end, gives none of them, and gives the others', () => {
    const { due, clock, parked } = groupedQueue((group) => (group === 'G' ? 3_600_000 : null));
    const [g1, g2, h1] = [grouped('g1', 'G'), grouped('g2', 'G'), grouped('h1', 'H')];
    due.schedule(g1, 0);
    due.schedule(g2, 0);
    due.schedule(h1, 0);
    expect(due.takeDue()?.name).toBe('h1');
    expect(due.takeDue()).toBeUndefined();
    expect(parked).toEqual([
      ['g1', 3_600_000],
      ['g2', 3_600_000],
    ]);
    expect([g1.dueAt, g2.dueAt]).toEqual([3_600_000, 3_600_000]);
    expect(due.next()?.dueAt).toBe(3_600_000);
    expect(clock.now()).toBe(0);
  });
});

describe('DueQueue kinds (scheduled and nudged polls, issue 33)', () => {
  interface Kinded extends Item {
    kind: string;
  }
  const kinded = (name: string, kind: string): Kinded => ({ ...item(name), kind });

  it('tells the kinds apart: due now of each kind, taken by kind, an item moving kind with its schedule', () => {
    const clock = new ManualClock();
    const due = new DueQueue<Kinded>({
      clock,
      waiting: (i) => i.waiting,
      onWake: () => undefined,
      kindOf: (i) => i.kind,
    });
    const [s1, s2, n1] = [kinded('s1', 'live'), kinded('s2', 'live'), kinded('n1', 'nudge')];
    due.schedule(s1, 0);
    due.schedule(s2, 0);
    due.schedule(n1, 10);
    expect([due.anyDue('live'), due.anyDue('nudge'), due.anyDue()]).toEqual([true, false, true]);
    // s2 is nudged: it moves to the nudges, keeping its due time; its scheduled entry is void.
    s2.kind = 'nudge';
    due.schedule(s2, 0);
    expect(due.takeDue('nudge')?.name).toBe('s2');
    expect(due.takeDue('nudge')).toBeUndefined();
    expect(due.takeDue('live')?.name).toBe('s1');
    expect(due.takeDue('live')).toBeUndefined();
    clock.advance(10);
    expect([due.anyDue('live'), due.anyDue('nudge')]).toEqual([false, true]);
    expect(due.next()?.item.name).toBe('n1');
    expect(due.takeDue()?.name).toBe('n1');
  });

  it('wakes its parked workers at a time asked for with no item due then (wakeAt), one timer for both', async () => {
    const { due, clock, wakes } = queue();
    const a = item('a');
    due.schedule(a, 5_000);
    void due.park();
    due.wakeAt(1_000);
    expect(clock.pending).toBe(1);
    clock.advance(1_000);
    await settles(() => wakes() === 1, 'woken at the time asked');
    // The wake-up is spent: the timer is armed for the item's due time next.
    due.handOut(() => undefined);
    clock.advance(3_999);
    await Promise.resolve();
    expect(wakes()).toBe(1);
    clock.advance(1);
    await settles(() => wakes() === 2, 'woken when the item is due');
  });
});
