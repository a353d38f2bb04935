import { describe, expect, it } from 'vitest';
import { holdEndAt } from '../../../../src/sync/scheduler/grant-holds.js';

describe('holdEndAt', () => {
  const scopes = { heldUntil: (scope: string) => (scope === 'G' ? 5_000 : null) };

  it("is the hold's end while the scope is held, null once it has ended or when it is not held", () => {
    expect(holdEndAt(scopes, 'G', 4_999)).toBe(5_000);
    expect(holdEndAt(scopes, 'G', 5_000)).toBeNull();
    expect(holdEndAt(scopes, 'H', 0)).toBeNull();
  });
});
