import { describe, expect, it } from 'vitest';
import type { FaultFreshness } from '../../../tools/chaos/freshness.js';
import { freshnessLines } from '../../../tools/chaos/report.js';

const fault: FaultFreshness = {
  kind: 'connector-kill',
  atS: 12,
  changes: 20,
  unpublished: 0,
  p50Ms: 1_500,
  p99Ms: 64_000,
  maxMs: 64_000,
  boundMs: 15_000,
  effectiveIntervalMs: 2_000,
  gaugeMaxMs: 2_000,
  late: 2,
  samples: [],
};

describe("the chaos report's freshness section", () => {
  it('prints each fault with its late changes in bold, and lists the late changes the run only reports', () => {
    const late = 'freshness: connector-kill at +12 s: 2 of 20 changes waited past ...';
    const lines = freshnessLines({ freshness: [fault], lateChanges: [late] });
    expect(lines).toContain(
      '| connector-kill | +12 s | 20 | 1.5 s | 64.0 s | 64.0 s | 15.0 s | 2.0 s (2.0 s) | **2** |',
    );
    expect(lines).toContain(`- ${late}`);
  });

  it('says nothing of late changes when there are none, and nothing at all without freshness figures', () => {
    const lines = freshnessLines({ freshness: [{ ...fault, late: 0 }], lateChanges: [] });
    expect(lines.some((l) => l.startsWith('Late changes'))).toBe(false);
    expect(freshnessLines({ freshness: [], lateChanges: [] })).toEqual([]);
  });
});
