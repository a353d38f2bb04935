import { describe, expect, it } from 'vitest';
import { locationDirectory } from '../../../src/webhooks/location-directory.js';
import { resolveNudge } from '../../../src/webhooks/nudge-resolution.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';

const L1 = '6F1C2C36-9F59-4F3E-8A53-3C1F1E0C6A11';
const L2 = '7a2d3d47-0a6a-4f4f-9b64-4d2a2f1d7b22';
const L3 = '8b3e4e58-1b7b-4a5a-8c75-5e3b3a2e8c33';
const directory = locationDirectory([
  { grant: 'alpha', locations: [L1, L2] },
  { grant: 'beta', locations: [L3] },
]);
const event = 'call.updated';

describe('which locations a nudge concerns', () => {
  it('takes the payload location when it is one of ours, in its configured spelling', () => {
    const index = new LruUidLocations(10);
    expect(resolveNudge({ event, uid: 'c1', location: L1.toLowerCase() }, null, directory, index)).toEqual({
      event,
      uid: 'c1',
      locations: [L1],
      resolution: 'payload_location',
    });
  });

  it('ignores a payload location this connector does not sync, even when the index knows the uid', () => {
    const index = new LruUidLocations(10);
    index.recordPublished('c1', L2);
    expect(resolveNudge({ event, uid: 'c1', location: 'elsewhere' }, null, directory, index)).toBeNull();
  });

  it('falls back to the location the uid was published for', () => {
    const index = new LruUidLocations(10);
    index.recordPublished('c1', L3);
    expect(resolveNudge({ event, uid: 'c1', location: null }, 'alpha', directory, index)).toMatchObject({
      locations: [L3],
      resolution: 'indexed_uid',
    });
  });

  it("fans out to the delivery's grant, or to every location when the delivery names no grant", () => {
    const index = new LruUidLocations(10);
    expect(resolveNudge({ event, uid: 'c1', location: null }, 'alpha', directory, index)).toMatchObject({
      locations: [L1, L2],
      resolution: 'grant_fanout',
    });
    expect(resolveNudge({ event, uid: 'c1', location: null }, null, directory, index)).toMatchObject({
      locations: [L1, L2, L3],
      resolution: 'grant_fanout',
    });
    expect(resolveNudge({ event, uid: 'c1', location: null }, 'unknown', directory, index)).toBeNull();
  });

  it('knows the grants by their configured names', () => {
    expect(directory.hasGrant('alpha')).toBe(true);
    expect(directory.hasGrant('gamma')).toBe(false);
  });
});
