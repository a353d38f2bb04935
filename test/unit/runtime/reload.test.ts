import { EventEmitter } from 'node:events';
import { mkdtemp, mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { ConfigurationDiff } from '../../../src/config/config-diff.js';
import { configurationFingerprint } from '../../../src/config/config-diff.js';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import { ConfigReloader, type ConfigReloaderOptions } from '../../../src/runtime/reload.js';
import { eventually } from '../../support/async.js';
import { ManualClock } from '../../support/clock.js';
import { capturingLogger } from '../../support/logger.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';

function document(locations: string[], overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...MINIMAL_CONFIG, sources: [{ locations }], ...overrides };
}

async function configDir(doc: Record<string, unknown>): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'calls-reload-'));
  const file = join(dir, 'connector.yaml');
  await writeFile(file, stringify(doc));
  return { dir, file };
}

async function infoFingerprint(metrics: ConnectorMetrics): Promise<string[]> {
  return (await metrics.configurationInfo.get()).values.map((v) => String(v.labels.fingerprint));
}

async function reloads(metrics: ConnectorMetrics, result: string): Promise<number> {
  return (
    (await metrics.configurationReloads.get()).values.find((v) => v.labels.result === result)?.value ?? 0
  );
}

function reloader(file: string, overrides: Partial<ConfigReloaderOptions> = {}) {
  const applied: ConfigurationDiff[] = [];
  const metrics = testMetrics();
  const log = capturingLogger();
  const signals = new EventEmitter();
  const clock = new ManualClock();
  const instance = new ConfigReloader({
    file,
    running: parseConfig(document([A]), {}),
    target: {
      applyLocations: (diff) => {
        applied.push(diff);
        return Promise.resolve();
      },
    },
    metrics,
    logger: log.logger,
    clock,
    watch: false,
    signals: signals as unknown as NodeJS.Process,
    ...overrides,
  });
  instance.start();
  return { instance, applied, metrics, log, signals, clock };
}

describe('the configuration reloader', () => {
  it('on SIGHUP applies added and removed locations, then shows the new fingerprint', async () => {
    const { file } = await configDir(document([B]));
    const { instance, applied, metrics, log, signals } = reloader(file);
    const before = configurationFingerprint(parseConfig(document([A]), {}));
    expect(await infoFingerprint(metrics)).toEqual([before]);

    signals.emit('SIGHUP');
    await instance.idle();
    expect(
      applied.map((d) => [
        d.locations.added.map((l) => l.location),
        d.locations.removed.map((l) => l.location),
      ]),
    ).toEqual([[[B], [A]]]);
    expect(await infoFingerprint(metrics)).toEqual([configurationFingerprint(instance.configuration)]);
    expect(instance.configuration.sources[0]?.locations).toEqual([B]);
    expect(await reloads(metrics, 'applied')).toBe(1);
    expect(log.text()).toContain(
      'configuration reloaded: 1 location(s) added, 1 removed, 0 changed, 0 unchanged',
    );
  });

  it('tells the other instances the new fingerprint once a reload is applied, and nothing when none is', async () => {
    const { file } = await configDir(document([A, B]));
    const told: string[] = [];
    const { instance } = reloader(file, { applied: (fingerprint) => told.push(fingerprint) });
    expect(await instance.reload()).toBe('applied');
    expect(told).toEqual([configurationFingerprint(parseConfig(document([A, B]), {}))]);
    expect(await instance.reload()).toBe('unchanged');
    expect(told).toHaveLength(1);
  });

  it('refuses a change of a key that cannot change while running as a whole, naming each key and why', async () => {
    const { file } = await configDir(
      document([A, B], { poll: { intervalMs: '30s' }, auth: { staticToken: 'a-new-secret-value' } }),
    );
    const { instance, applied, metrics, log } = reloader(file);
    expect(await instance.reload()).toBe('refused');
    expect(applied).toEqual([]);
    expect(instance.configuration.sources[0]?.locations).toEqual([A]);
    expect(await reloads(metrics, 'refused')).toBe(1);
    const line = log.lines().find((l) => String(l.msg).startsWith('configuration not reloaded'));
    expect(line?.msg).toBe(
      'configuration not reloaded: auth.staticToken cannot change while running (the token providers are built from it at start); ' +
        "poll.intervalMs cannot change while running (the scheduler's settings are read when it is built). " +
        'The running configuration is kept: restart to apply these keys, or undo them to reload the rest',
    );
    expect(log.text()).not.toContain('a-new-secret-value');
  });

  it('keeps the running configuration when the file does not validate, naming the problem', async () => {
    const { file } = await configDir({ ...document([A]), sources: [{ locations: ['shop-1'] }] });
    const { instance, applied, metrics, log } = reloader(file);
    expect(await instance.reload()).toBe('invalid');
    expect(applied).toEqual([]);
    expect(await reloads(metrics, 'invalid')).toBe(1);
    expect(log.text()).toContain('sources.0.locations.0: a location uid is a UUID');
  });

  it('does nothing for a file that changes nothing, and keeps the configuration when the locations cannot change', async () => {
    const same = await configDir(document([A]));
    const quiet = reloader(same.file);
    expect(await quiet.instance.reload()).toBe('unchanged');
    expect(quiet.applied).toEqual([]);

    const changed = await configDir(document([A, B]));
    const failing = reloader(changed.file, {
      target: { applyLocations: () => Promise.reject(new Error('scheduler stopping')) },
    });
    expect(await failing.instance.reload()).toBe('failed');
    expect(failing.instance.configuration.sources[0]?.locations).toEqual([A]);
    expect(await reloads(failing.metrics, 'failed')).toBe(1);
  });

  it('reads the file once after a burst of directory events has been quiet for the debounce time', async () => {
    const { file } = await configDir(document([A, B]));
    let onChange: () => void = () => undefined;
    let loads = 0;
    const { applied, clock } = reloader(file, {
      watch: true,
      debounceMs: 1_000,
      watchDirectory: (_dir, callback) => {
        onChange = callback;
        return () => undefined;
      },
      load: () => {
        loads += 1;
        return Promise.resolve(parseConfig(document([A, B]), {}));
      },
    });
    onChange();
    clock.advance(600);
    onChange();
    onChange();
    clock.advance(999);
    await Promise.resolve();
    expect(loads).toBe(0);
    clock.advance(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(loads).toBe(1);
    expect(applied.map((d) => d.locations.added.map((l) => l.location))).toEqual([[B]]);
  });

  it('sees a ConfigMap update: the ..data symlink of the mounted directory swapped to a new version', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'calls-configmap-'));
    await mkdir(join(dir, 'v1'));
    await writeFile(join(dir, 'v1', 'connector.yaml'), stringify(document([A])));
    await symlink('v1', join(dir, '..data'));
    await symlink(join('..data', 'connector.yaml'), join(dir, 'connector.yaml'));
    const { instance, applied, clock } = reloader(join(dir, 'connector.yaml'), {
      watch: true,
      debounceMs: 500,
    });

    await mkdir(join(dir, 'v2'));
    await writeFile(join(dir, 'v2', 'connector.yaml'), stringify(document([A, B])));
    await symlink('v2', join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));

    await clock.sleepingFor(500);
    clock.advance(500);
    await eventually(() => applied.length > 0, 10_000, 'the reload after the swap');
    await instance.stop();
    expect(applied.map((d) => d.locations.added.map((l) => l.location))).toEqual([[B]]);
  });
});
