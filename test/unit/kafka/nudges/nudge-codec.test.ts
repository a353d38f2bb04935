import { describe, expect, it } from 'vitest';
import { decodeNudge, encodeNudge, nudgeTopicName } from '../../../../src/kafka/nudges/nudge-topic.js';

describe('nudge records', () => {
  it('round-trip a nudge', () => {
    const nudge = { location: 'L1', uid: 'c1', event: 'call.updated' };
    expect(decodeNudge(encodeNudge(nudge))).toEqual(nudge);
  });

  it('skip what is not a nudge (a tombstone, other JSON, not JSON)', () => {
    expect(decodeNudge(null)).toBeNull();
    expect(decodeNudge(Buffer.from('{"location":"L1","uid":7,"event":"call.updated"}'))).toBeNull();
    expect(decodeNudge(Buffer.from('"text"'))).toBeNull();
    expect(decodeNudge(Buffer.from('{not json'))).toBeNull();
  });

  it('live in the offsets topic’s -nudges topic', () => {
    expect(nudgeTopicName('calls-connector-offsets')).toBe('calls-connector-offsets-nudges');
  });
});
