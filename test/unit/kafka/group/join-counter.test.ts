import { describe, expect, it } from 'vitest';
import { JoinCounter } from '../../../../src/kafka/group/join-counter.js';

describe('JoinCounter', () => {
  it('counts the completed joins', () => {
    const counter = new JoinCounter();
    expect(counter.joins).toBe(0);
    counter.joined();
    counter.joined();
    expect(counter.joins).toBe(2);
  });

  it('resolves a wait at once when a join after the one seen already completed', async () => {
    const counter = new JoinCounter();
    counter.joined();
    await expect(counter.rejoined(0, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('resolves a wait only once a join after the one seen completes', async () => {
    const counter = new JoinCounter();
    counter.joined();
    let resolved = false;
    const wait = counter.rejoined(1, new AbortController().signal).then(() => {
      resolved = true;
    });
    await Promise.resolve();
    expect(resolved).toBe(false);
    counter.joined();
    await wait;
    expect(resolved).toBe(true);
  });

  it("rejects a wait with the signal's reason when it aborts, before or during the wait", async () => {
    const counter = new JoinCounter();
    const reason = new Error('stopping');
    await expect(counter.rejoined(0, AbortSignal.abort(reason))).rejects.toBe(reason);
    const controller = new AbortController();
    const wait = counter.rejoined(0, controller.signal);
    controller.abort(reason);
    await expect(wait).rejects.toBe(reason);
    counter.joined(); // an aborted wait no longer listens
    expect(counter.joins).toBe(1);
  });
});
