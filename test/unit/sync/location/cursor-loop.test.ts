import { describe, expect, it } from 'vitest';
import { CursorLoopDetector } from '../../../../src/sync/location/cursor-loop.js';

describe('CursorLoopDetector', () => {
  it('flags an empty page that returns the cursor just sent', () => {
    const detector = new CursorLoopDetector();
    detector.sent('c1');
    expect(detector.isLoop('c1')).toBe(true);
  });

  it('flags a cursor that comes back later in the traversal', () => {
    const detector = new CursorLoopDetector();
    for (const c of ['a', 'b', 'c']) detector.sent(c);
    expect(detector.isLoop('a')).toBe(true);
    expect(detector.isLoop('d')).toBe(false);
    expect(detector.isLoop(null)).toBe(false);
  });

  it('catches a loop longer than its exact window within about twice the loop length', () => {
    const detector = new CursorLoopDetector(4);
    const loop = Array.from({ length: 50 }, (_, i) => `c${i}`);
    let steps = 0;
    let current = 'start';
    let next = loop[0] ?? '';
    while (!detector.isLoop(next)) {
      detector.sent(current);
      current = next;
      steps += 1;
      next = loop[steps % loop.length] ?? '';
      if (steps > 1_000) break;
    }
    expect(steps).toBeLessThanOrEqual(3 * loop.length);
  });

  it('forgets everything on reset', () => {
    const detector = new CursorLoopDetector();
    detector.sent('c1');
    detector.reset();
    expect(detector.isLoop('c1')).toBe(false);
  });

  it('does not flag a long traversal without repeats', () => {
    const detector = new CursorLoopDetector(8);
    for (let i = 0; i < 1_000; i++) {
      detector.sent(`c${i}`);
      expect(detector.isLoop(`c${i + 1}`)).toBe(false);
    }
  });
});
