import { describe, expect, it } from 'vitest';
import { createRandom } from '../../../src/random.js';
import {
  DEFAULT_WEBHOOK_FAULTS,
  drawFaults,
  mergeWebhookFaults,
  type WebhookFault,
} from '../../../src/webhooks/faults.js';

describe('webhook faults', () => {
  it('draws none by default', () => {
    const random = createRandom(1);
    for (let i = 0; i < 100; i++) expect(drawFaults(DEFAULT_WEBHOOK_FAULTS, [], random).size).toBe(0);
  });

  it('draws a fault at its rate, reproducibly from a seed', () => {
    const settings = mergeWebhookFaults(DEFAULT_WEBHOOK_FAULTS, { rates: { drop: 0.3 } });
    const draw = (seed: number) => {
      const random = createRandom(seed);
      return Array.from({ length: 1000 }, () => drawFaults(settings, [], random).has('drop'));
    };
    const drops = draw(7).filter(Boolean).length;
    expect(drops).toBeGreaterThan(240);
    expect(drops).toBeLessThan(360);
    expect(draw(7)).toEqual(draw(7));
  });

  it('applies every queued one-shot fault to the next delivery only', () => {
    const once: WebhookFault[] = ['duplicate', 'badSignature'];
    const random = createRandom(1);
    expect([...drawFaults(DEFAULT_WEBHOOK_FAULTS, once, random)].sort()).toEqual([
      'badSignature',
      'duplicate',
    ]);
    expect(drawFaults(DEFAULT_WEBHOOK_FAULTS, once, random).size).toBe(0);
  });

  it('changes some settings, keeps the others, and refuses rates outside 0..1', () => {
    const changed = mergeWebhookFaults(DEFAULT_WEBHOOK_FAULTS, { rates: { delay: 1 }, delayMs: 20 });
    expect(changed).toEqual({ rates: { ...DEFAULT_WEBHOOK_FAULTS.rates, delay: 1 }, delayMs: 20 });
    expect(() => mergeWebhookFaults(changed, { rates: { replay: 2 } })).toThrow(RangeError);
    expect(() => mergeWebhookFaults(changed, { delayMs: -1 })).toThrow(RangeError);
  });
});
