import { describe, expect, it } from 'vitest';
import { configurationDiff } from '../../../src/config/config-diff.js';
import { parseConfig } from '../../../src/config/load.js';
import type { Source } from '../../../src/runtime/steps/api.js';
import { locationReload } from '../../../src/runtime/location-reload.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const A = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const B = '7a2d3d47-0a60-4a4f-9b64-4d2a2f1d7b22';

const config = (sources: Array<{ locations: string[]; startSince?: string }>) =>
  parseConfig({ ...MINIMAL_CONFIG, sources });

/** Records the sources each step takes and when the ownership applies them. */
function recorder() {
  const steps: string[] = [];
  const locations = {
    reconfigure: (sources: readonly Source[]) => {
      steps.push(`sources ${sources.flatMap((s) => s.locations).join(',')}`);
      return { added: [], removed: [] };
    },
  };
  const ownership = {
    reconfigure: () => {
      steps.push('apply');
      return Promise.resolve({ added: [], removed: [] });
    },
  };
  return { steps, port: locationReload(locations, ownership) };
}

describe('locationReload', () => {
  it('takes the new sources and applies them once when locations are only added or removed', async () => {
    const { steps, port } = recorder();
    const before = config([{ locations: [A] }]);
    const after = config([{ locations: [B] }]);
    await port.applyLocations(configurationDiff(before, after), after);
    expect(steps).toEqual([`sources ${B}`, 'apply']);
  });

  it('stops a location read another way first, then starts it under its new source', async () => {
    const { steps, port } = recorder();
    const before = config([{ locations: [A, B] }]);
    const after = config([{ locations: [A] }, { locations: [B], startSince: '2026-01-01T00:00:00Z' }]);
    await port.applyLocations(configurationDiff(before, after), after);
    expect(steps).toEqual([`sources ${A}`, 'apply', `sources ${A},${B}`, 'apply']);
  });
});
