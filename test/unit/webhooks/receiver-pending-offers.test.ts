import { describe, expect, it } from 'vitest';
import { PendingOffers } from '../../../src/webhooks/pending-offers.js';

describe('the offers pending in the receiver', () => {
  it('gives a duplicate the pending offer of its key, and forgets the key once it settles', async () => {
    const pending = new PendingOffers<string>();
    let settle: (outcome: string) => void = () => undefined;
    const first = pending.run('id-1', () => new Promise((resolve) => (settle = resolve)));
    expect(pending.get('id-1')).toBe(first);
    expect(pending.get('id-2')).toBeUndefined();
    settle('unavailable');
    expect(await pending.get('id-1')).toBe('unavailable');
    expect(pending.get('id-1')).toBeUndefined();
    expect(pending.size).toBe(0);
  });
});
