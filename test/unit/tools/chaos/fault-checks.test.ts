import { describe, expect, it } from 'vitest';
import { firstTraversalsDone, type OffsetView } from '../../../../tools/chaos/fault-checks.js';

const view = (over: Partial<OffsetView>): OffsetView => ({
  records: 3,
  watermark: '2026-11-29T05:00:00.000Z',
  cursor: null,
  history: null,
  ...over,
});

describe('the first traversals of a chaos run', () => {
  it('are done once every location has an offset with no cursor left, a history lane allowed', () => {
    const reading = new Map([
      ['a', view({})],
      ['b', view({ history: '{"until":"2026-01-01T00:00:00.000Z"}' })],
    ]);
    expect(firstTraversalsDone(reading, ['a', 'b'])).toBe(true);
  });

  it('are not done while a location has no offset yet or is still paging', () => {
    expect(firstTraversalsDone(new Map([['a', view({})]]), ['a', 'b'])).toBe(false);
    expect(firstTraversalsDone(new Map([['a', view({ cursor: 'c2' })]]), ['a'])).toBe(false);
  });
});
