import { describe, expect, it } from 'vitest';
import { describeStoppedLocations } from '../../../../src/cli/commands/run.js';
import type { LocationStatus } from '../../../../src/sync/scheduler/scheduled-location.js';
import { EMPTY_OFFSET } from '../../../../src/sync/model.js';
import { emptyTotals } from '../../../../src/sync/location/location-sync.js';

function stopped(uid: string, code: string, message: string): LocationStatus {
  return {
    locationUid: uid,
    state: 'stopped',
    offset: { ...EMPTY_OFFSET, boundary: [] },
    traversalId: null,
    nextRunAt: null,
    lastSuccessAt: null,
    lastError: { code, message, at: 0 },
    consecutiveFailures: 1,
    stoppedBy: code,
    totals: emptyTotals(),
    backfill: null,
    lane: null,
  };
}

describe('describeStoppedLocations', () => {
  it('names each distinct error once with the locations it stopped, so the last line says what to do', () => {
    const text = describeStoppedLocations([
      stopped(
        'loc-1',
        'AUTH_NO_GRANT',
        'no OAuth grant "default" is stored: run `calls-connector auth login`',
      ),
      stopped(
        'loc-2',
        'AUTH_NO_GRANT',
        'no OAuth grant "default" is stored: run `calls-connector auth login`',
      ),
      stopped('loc-3', 'CURSOR_LOOP', 'the API repeated a cursor'),
    ]);
    expect(text).toBe(
      [
        'every location is stopped by an error only a restart can fix:',
        '  - [AUTH_NO_GRANT] no OAuth grant "default" is stored: run `calls-connector auth login` (2 locations: loc-1, loc-2)',
        '  - [CURSOR_LOOP] the API repeated a cursor (1 location: loc-3)',
      ].join('\n'),
    );
  });

  it('lists at most three uids per error', () => {
    const many = ['a', 'b', 'c', 'd', 'e'].map((uid) => stopped(uid, 'API_FORBIDDEN', 'forbidden'));
    expect(describeStoppedLocations(many)).toContain('(5 locations: a, b, c, and 2 more)');
  });
});
