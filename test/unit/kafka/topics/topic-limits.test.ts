import { describe, expect, it } from 'vitest';
import { maxCallValueBytes, RECORD_OVERHEAD_BYTES } from '../../../../src/kafka/topics/topic-limits.js';

describe('maxCallValueBytes', () => {
  it("keeps a call's value under the calls topic's max.message.bytes, with room for key and headers", () => {
    expect(
      maxCallValueBytes({
        codecDefault: 900_000,
        maxBytesPerTransaction: 800_000,
        topicMaxMessageBytes: 100_000,
      }),
    ).toBe(100_000 - RECORD_OVERHEAD_BYTES);
  });

  it('keeps the other bounds when the topic allows more or its limit cannot be read', () => {
    const limits = { codecDefault: 900_000, maxBytesPerTransaction: 800_000 };
    expect(maxCallValueBytes({ ...limits, topicMaxMessageBytes: 5_000_000 })).toBe(800_000);
    expect(maxCallValueBytes({ ...limits, topicMaxMessageBytes: undefined })).toBe(800_000);
  });
});
