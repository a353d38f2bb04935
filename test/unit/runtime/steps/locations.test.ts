import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { Lifecycle } from '../../../../src/runtime/lifecycle.js';
import type { Api, Grant, Source } from '../../../../src/runtime/steps/api.js';
import { Failures, type StartContext } from '../../../../src/runtime/steps/context.js';
import { buildLocations } from '../../../../src/runtime/steps/locations.js';
import { ManualClock } from '../../../support/clock.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

const A = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const B = '7a2d3d47-0a60-4a4f-9b64-4d2a2f1d7b22';
const C = '8b3e4e58-1b71-4b5a-8c75-5e3b3a2e8c33';

function setup() {
  const config = parseConfig({ ...MINIMAL_CONFIG, sources: [{ locations: [A, B] }] });
  const metrics = testMetrics();
  const ctx: StartContext = {
    config,
    logger: silentLogger(),
    metrics,
    clock: new ManualClock(0),
    startedAt: 0,
    lifecycle: new Lifecycle(silentLogger()),
    failures: new Failures('n', metrics, silentLogger()),
  };
  const asked: string[] = [];
  const api = {
    grant: (name: string) => {
      asked.push(name);
      return {} as Grant;
    },
    grantOf: () => 'static',
  } as unknown as Api;
  const locations = buildLocations(ctx, api, { boundaryMaxBytes: 100_000, dynamic: false });
  return { locations, config, asked };
}

const sources = (...lists: string[][]): Source[] =>
  lists.map((locations) => ({ locations }) as unknown as Source);

describe('buildLocations', () => {
  it("takes a reload's sources as the configured ones, and says which locations came and went", () => {
    const { locations } = setup();
    expect(locations.configured).toEqual([A, B]);

    expect(locations.reconfigure(sources([B], [C]))).toEqual({ added: [C], removed: [A] });

    expect(locations.configured).toEqual([B, C]);
    expect([...locations.sourceOf.keys()]).toEqual([B, C]);
  });

  it('knows a configured location in any letter case, and forgets one a reload removed', () => {
    const { locations } = setup();
    expect(locations.isConfigured(A.toUpperCase())).toBe(true);
    expect(locations.isConfigured(C)).toBe(false);

    locations.reconfigure(sources([B, C.toUpperCase()]));

    expect(locations.isConfigured(A)).toBe(false);
    expect(locations.isConfigured(C)).toBe(true);
  });

  it('refuses sources listing a location twice, keeping the ones it runs', () => {
    const { locations } = setup();
    expect(() => locations.reconfigure(sources([A, C], [C]))).toThrow(/listed twice/);
    expect(locations.configured).toEqual([A, B]);
  });

  it('builds no LocationSync for a location a reload removed', () => {
    const { locations } = setup();
    locations.reconfigure(sources([B]));
    expect(() =>
      locations.syncFor(A, undefined, {
        commitPage: () => Promise.reject(new Error('unused')),
        close: () => Promise.resolve(),
      }),
    ).toThrow(/not configured/);
  });
});
