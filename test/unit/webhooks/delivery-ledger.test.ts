import { describe, expect, it } from 'vitest';
import { DeliveryLedger } from '../../../src/webhooks/delivery-ledger.js';
import { ManualClock } from '../../support/clock.js';

function ledger(options: { maxEntries?: number; since?: number } = {}) {
  const clock = new ManualClock(1_000_000);
  const latencies: number[] = [];
  let missed = 0;
  const subject = new DeliveryLedger({
    clock,
    graceMs: 60_000,
    maxEntries: options.maxEntries ?? 100,
    since: options.since ?? 0,
    metrics: {
      nudgeToPublished: { observe: (seconds) => latencies.push(seconds) },
      missedDeliveries: { inc: (value = 1) => (missed += value) },
    },
  });
  return { subject, clock, latencies, missed: () => missed };
}

describe('the delivery ledger', () => {
  it('times a change from its delivery to its publish, once', () => {
    const { subject, clock, latencies, missed } = ledger();
    subject.announced('c1');
    subject.announced('c1'); // a second delivery of the same change: timed from the first
    clock.advance(1_500);
    subject.published('c1', clock.now());
    subject.published('c1', clock.now()); // a later publish no delivery announced is pending, not timed
    expect(latencies).toEqual([1.5]);
    expect(missed()).toBe(0);
  });

  it('counts a published change no delivery announced within the grace as missed', () => {
    const { subject, clock, missed } = ledger();
    subject.published('c1', clock.now());
    clock.advance(59_999);
    subject.announced('other');
    expect(missed()).toBe(0);
    clock.advance(1);
    subject.announced('other-2');
    expect(missed()).toBe(1);
    expect(subject.pending.unannounced).toBe(0);
  });

  it('does not count a change whose delivery comes late, after the poll published it', () => {
    const { subject, clock, missed, latencies } = ledger();
    subject.published('c1', clock.now());
    clock.advance(5_000);
    subject.announced('c1');
    clock.advance(120_000);
    subject.published('c2', 0); // settles: nothing pending
    expect(missed()).toBe(0);
    expect(latencies).toEqual([]);
    // The late delivery is not kept as an announcement that would time a later change.
    expect(subject.pending.announcements).toBe(0);
  });

  it('never counts changes made before the receiver listened (a backfill, a poll after a downtime)', () => {
    const { subject, clock, missed } = ledger({ since: 500_000 });
    subject.published('old', 499_999);
    subject.published('new', 500_000);
    clock.advance(60_000);
    subject.published('another', 0);
    expect(missed()).toBe(1);
  });

  it('forgets an announcement no publish followed within the grace', () => {
    const { subject, clock, latencies } = ledger();
    subject.announced('c1');
    clock.advance(60_000);
    subject.published('c1', clock.now());
    expect(latencies).toEqual([]);
  });

  it('holds at most maxEntries pending changes, counting the ones it drops as missed', () => {
    const { subject, clock, missed } = ledger({ maxEntries: 2 });
    for (const uid of ['a', 'b', 'c']) subject.published(uid, clock.now());
    expect(subject.pending.unannounced).toBe(2);
    expect(missed()).toBe(1);
  });
});
