import { describe, expect, it } from 'vitest';
import {
  arrivalsText,
  fitToTerminal,
  formatLag,
  publishRate,
  renderFrame,
  type ViewFrame,
} from '../../../src/demo/live-view.js';
import { locationStatus as status } from './location-status.js';

describe('the demo live view', () => {
  it('computes the publish rate from two snapshots', () => {
    const a: ViewFrame = { at: 1_000, locations: [status('a', 10), status('b', 0)] };
    const b: ViewFrame = { at: 3_000, locations: [status('a', 30), status('b', 20)] };
    expect(publishRate(null, a)).toBe(0);
    expect(publishRate(a, b)).toBe(20);
  });

  it('formats lag in seconds, minutes and hours', () => {
    expect(formatLag(null)).toBe('-');
    expect(formatLag(12_400)).toBe('12s');
    expect(formatLag(184_000)).toBe('3m04s');
    expect(formatLag(7_500_000)).toBe('2h05m');
  });

  it('shows one line per location with its counts, lag and position', () => {
    const now = new Date('2026-01-01T00:00:30.000Z').getTime();
    const lines = renderFrame(null, {
      at: now,
      locations: [
        status('loc-1', 5, {
          offset: { since: null, cursor: 'c1', watermark: '2026-01-01T00:00:00.000Z', boundary: [] },
        }),
        status('loc-2', 7, {
          state: 'stopped',
          lastError: { code: 'CURSOR_LOOP', message: 'loop', at: now },
        }),
      ],
    });
    expect(lines[0]).toContain('published 12 records');
    expect(lines[2]).toMatch(/loc-1\s+running\s+5\s+2\s+3\s+1\s+30s\s+mid-traversal/);
    expect(lines[3]).toMatch(/loc-2\s+stopped\s+7 .* error CURSOR_LOOP/);
  });

  it("shows both lanes of a split location: the live lane's state and the history lane's way to T0", () => {
    const now = new Date('2026-01-01T00:00:30.000Z').getTime();
    const backfill = {
      untilMs: now - 60_000,
      positionMs: now - 7_260_000,
      startedAtMs: now - 100_000,
      startPositionMs: now - 10_000_000,
      records: 420,
      remainingSeconds: 7_200,
      rate: 27.4,
      etaSeconds: 263,
    };
    const lines = renderFrame(null, {
      at: now,
      locations: [
        status('loc-1', 5, { backfill }),
        status('loc-2', 5, {
          backfill: { ...backfill, remainingSeconds: null, rate: null, etaSeconds: null },
        }),
      ],
    });
    expect(lines[2]).toMatch(
      /loc-1 .* live caught up \| history 2h00m left to T0, eta 4m23s \(420 records\)/,
    );
    expect(lines[3]).toMatch(/loc-2 .* history starting to T0 \(420 records\)/);
  });

  it('fits a frame to the terminal: lines cut below its width, rows past its height summed up in the last line', () => {
    const lines = ['x'.repeat(100), 'b', 'c', 'd', 'e'];
    expect(fitToTerminal(lines, 40, 24)).toEqual(['x'.repeat(39), 'b', 'c', 'd', 'e']);
    expect(fitToTerminal(lines, 200, 4)).toEqual([
      'x'.repeat(100),
      'b',
      '… 3 more lines (the whole table: /status)',
    ]);
    expect(fitToTerminal(lines, undefined, undefined)).toEqual(lines);
    expect(fitToTerminal(lines, 0, 0)).toEqual(lines);
  });
  it('shows which instance owns each location, and how many each owns, when the demo runs several', () => {
    const lines = renderFrame(null, {
      at: 0,
      locations: [
        { ...status('loc-1', 5), instance: 1 },
        { ...status('loc-2', 7), instance: 2 },
        { ...status('loc-3', 1), instance: 2 },
      ],
    });
    expect(lines[0]).toContain('owned by instance #1 1, #2 2');
    expect(lines[1]).toMatch(/location\s+inst\s+state/);
    expect(lines[3]).toMatch(/loc-2\s+#2\s+running\s+7/);
  });

  it('has no owner column with one instance', () => {
    const lines = renderFrame(null, { at: 0, locations: [status('loc-1', 5)] });
    expect(lines[0]).not.toContain('owned by');
    expect(lines[1]).not.toContain('inst');
  });

  it('says how the changes came with webhooks on, in the first line, and nothing of it without', () => {
    const locations = [status('a', 10)];
    const withWebhooks = renderFrame(null, { at: 1_000, locations, arrivals: { webhook: 42, poll: 3 } });
    expect(arrivalsText({ webhook: 42, poll: 3 })).toBe('changes by webhook 42, by reconciliation poll 3');
    expect(withWebhooks[0]).toMatch(
      /^published 10 records .* {3}changes by webhook 42, by reconciliation poll 3$/,
    );
    const without = renderFrame(null, { at: 1_000, locations });
    expect(without.join('\n')).not.toContain('by webhook');
    expect(without.slice(1)).toEqual(withWebhooks.slice(1));
  });
});
