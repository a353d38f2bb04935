import { describe, expect, it } from 'vitest';
import { counterSum } from '../../../tools/chaos/fleet-counters.js';

const TEXT = [
  '# HELP calls_connector_api_rate_limit_granted_total Request starts',
  '# TYPE calls_connector_api_rate_limit_granted_total counter',
  'calls_connector_api_rate_limit_granted_total{scope="default",priority="live"} 40',
  'calls_connector_api_rate_limit_granted_total{scope="default",priority="backfill"} 7',
  'calls_connector_api_rate_limit_granted_total{scope="second",priority="backfill"} 3',
  'calls_connector_api_rate_limit_granted_totally_other{priority="backfill"} 100',
].join('\n');

describe('counterSum', () => {
  it("sums a counter's samples whose labels include every pair asked for", () => {
    expect(counterSum(TEXT, 'calls_connector_api_rate_limit_granted_total', { priority: 'backfill' })).toBe(
      10,
    );
    expect(counterSum(TEXT, 'calls_connector_api_rate_limit_granted_total', {})).toBe(50);
  });

  it('reads 0 for a counter the exposition does not have', () => {
    expect(counterSum(TEXT, 'calls_connector_missing_total', {})).toBe(0);
  });
});
