import { describe, expect, it } from 'vitest';
import {
  asPublished,
  compareVersion,
  leaksNumber,
  type PublishedCall,
  type TruthCall,
} from '../../../tools/chaos/checker.js';

const truth: TruthCall = {
  uid: 'c1',
  locationUid: 'l1',
  updatedAt: '2026-01-02T03:04:05.678Z',
  locationPhoneNumber: '+15550001111',
  customerPhoneNumber: '+15550002222',
  startedAt: '2026-01-02T03:00:00.000Z',
  endedAt: '2026-01-02T03:04:00.000Z',
  isPrivate: false,
  conversationUid: 'conv-1',
};

/** A record as the registry decodes it: times in microseconds. */
function decoded(overrides: Record<string, unknown> = {}): PublishedCall {
  return asPublished({
    uid: 'c1',
    locationUid: 'l1',
    updatedAt: Date.parse(truth.updatedAt) * 1000,
    updatedAtIso: truth.updatedAt,
    locationPhoneNumber: '+15550001111',
    customerPhoneNumber: '+15550002222',
    startedAt: Date.parse(truth.startedAt) * 1000,
    endedAt: Date.parse(truth.endedAt) * 1000,
    isPrivate: false,
    conversationUid: 'conv-1',
    enriched: true,
    customerPhoneNumberRedacted: false,
    ingestedAt: 1,
    ...overrides,
  });
}

describe('the chaos checker', () => {
  it('accepts a record equal to the truth of its version', () => {
    expect(compareVersion(decoded(), truth)).toEqual([]);
    expect(leaksNumber(decoded(), truth)).toBe(false);
  });

  it('names the fields of a record enriched from another version', () => {
    const mixed = decoded({ isPrivate: true, customerPhoneNumber: null, conversationUid: 'conv-2' });
    expect(compareVersion(mixed, truth)).toEqual(['isPrivate', 'conversationUid', 'customerPhoneNumber']);
  });

  it('flags a customer number published for a private version or without enrichment', () => {
    expect(leaksNumber(decoded(), { ...truth, isPrivate: true })).toBe(true);
    const unenriched = decoded({ enriched: false, startedAt: null, endedAt: null, isPrivate: null });
    expect(leaksNumber(unenriched, truth)).toBe(true);
    expect(leaksNumber({ ...unenriched, customerPhoneNumber: null }, truth)).toBe(false);
  });

  it('flags an unenriched record that carries enrichment values', () => {
    expect(compareVersion(decoded({ enriched: false, customerPhoneNumber: null }), truth)).toEqual([
      'unenriched with values',
    ]);
  });
});
