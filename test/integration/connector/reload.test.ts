/**
 * The configuration reloaded while running, in both modes, through the built CLI: `sources` rewritten in the
 * file and SIGHUP sent to every process. The location added is scheduled (from its stored offset, none here: from
 * the beginning) and caught up; the one removed is run by no instance any more; the one kept is not touched
 * (the log says so); a change of a key that cannot change while running is refused as a whole, naming the key.
 * Seen from the outside only: /status, /metrics, the log, the offsets topic and a read_committed reader, which at
 * the end finds every call version of the three locations exactly once. Then signals: a pause stops the location
 * wherever it runs and a resume starts it again from its stored offset (calls made meanwhile published), and a
 * signal for the removed location is refused, each answered.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { publishedCalls } from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { diagnostics, metricOf, statusOf, type Instance } from '../../support/distributed.js';
import { eventually } from '../../support/kafka.js';

const POLL_INTERVAL_MS = 1_000;
const CLI = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

describe.each(['single', 'distributed'] as const)('reloading the configuration in %s mode', (mode) => {
  let scenario: ConnectorScenario;
  let document: Record<string, unknown>;
  let locations: string[];

  beforeAll(async () => {
    scenario = await connectorScenario({
      mode,
      sandbox: { data: { seed: 42, locations: 3, callsPerLocation: 40, privateRatio: 0.3 } },
      connector: {
        api: { pageSize: 20 },
        poll: { intervalMs: POLL_INTERVAL_MS },
        metrics: { enabled: true, port: 0 },
      },
      document: (base, sandbox) => ({ ...base, sources: [{ locations: sandbox.locations.slice(0, 2) }] }),
    });
    // The file as the scenario wrote it (its connector section says the mode).
    document = parseYaml(await readFile(scenario.configFile, 'utf8')) as Record<string, unknown>;
    locations = scenario.sandbox.locations;
  });

  afterAll(() => scenario.close());

  /** The locations the answering instances run now, sorted. */
  const running = async (instances: readonly Instance[]): Promise<string[]> => {
    const views = await Promise.all(instances.map((i) => statusOf(i)));
    return views.flatMap((v) => (v?.tasks ?? []).map((t) => t.id)).sort();
  };

  /** Rewrites the shared config file with `change` applied, then sends every instance SIGHUP. */
  const reload = async (instances: readonly Instance[], change: Record<string, unknown>): Promise<void> => {
    document = { ...document, ...change, logging: { level: 'info', format: 'json' } };
    await writeFile(scenario.configFile, stringify(document));
    for (const instance of instances) instance.child.kill('SIGHUP');
  };

  /** `calls-connector signal <args> --wait` on the shared config file, through the built CLI. */
  const signal = async (args: string[]): Promise<{ code: number | null; stdout: string }> => {
    const child = spawn(
      process.execPath,
      [CLI, 'signal', ...args, '--config', scenario.configFile, '--wait', '--timeout', '30s'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code, stdout };
  };

  it('adds and removes locations without a restart, refuses a fixed key, pauses and resumes a location by signal, and publishes every version once', async () => {
    const { sandbox, kafka, config } = scenario;
    const [first, kept, added] = locations as [string, string, string];
    const instances =
      mode === 'single'
        ? [scenario.startInstance('i1')]
        : [scenario.startInstance('i1'), scenario.startInstance('i2')];
    const why = () => diagnostics(instances);
    for (const instance of instances)
      await eventually(
        () => instance.output().includes('"connector started"'),
        60_000,
        `${instance.name} started`,
      );
    await eventually(
      async () => JSON.stringify(await running(instances)) === JSON.stringify([first, kept].sort()),
      60_000,
      'the two configured locations run',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    const store = scenario.offsetStore('reload-test-offsets');
    /** Each location's stored offset beside its newest call: what a wait for catching up saw last. */
    const offsets = async () =>
      [...(await store.loadAll())]
        .map(
          ([location, offset]) =>
            `${location}: ${JSON.stringify(offset)} (newest call ${sandbox.admin.truth(location).at(-1)?.updatedAt ?? 'none'})`,
        )
        .join('\n');
    const firstTwo = caughtUpCheck({ ...sandbox, locations: [first, kept] }, store);
    await eventually(firstTwo, 60_000, 'the first two locations caught up');
    expect((await store.loadAll()).has(added)).toBe(false);

    await reload(instances, { sources: [{ locations: [kept, added] }] });

    await eventually(
      async () => JSON.stringify(await running(instances)) === JSON.stringify([kept, added].sort()),
      60_000,
      'the reloaded locations run, the removed one nowhere',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    // The removed location is out of the check: a removal between two pages of its poll leaves the cursor of
    // the first stored, where it would resume if it came back.
    const keptAndAdded = () => caughtUpCheck({ ...sandbox, locations: [kept, added] }, store);
    await eventually(keptAndAdded(), 120_000, 'the added location caught up').catch(async (error: unknown) =>
      Promise.reject(new Error(`${String(error)}\n${await offsets()}\n${why()}`)),
    );
    for (const instance of instances) {
      expect(instance.output()).toContain(
        'configuration reloaded: 1 location(s) added, 1 removed, 0 changed, 1 unchanged',
      );
      expect(instance.child.exitCode, instance.output()).toBeNull();
      expect(await metricOf(instance, 'calls_connector_configuration_reloads_total{result="applied"}')).toBe(
        1,
      );
    }

    await reload(instances, { poll: { ...(document.poll as object), intervalMs: 2 * POLL_INTERVAL_MS } });
    for (const instance of instances)
      await eventually(
        async () =>
          (await metricOf(instance, 'calls_connector_configuration_reloads_total{result="refused"}')) === 1,
        30_000,
        `${instance.name} refused the fixed key`,
      );
    for (const instance of instances) {
      expect(instance.output()).toContain('poll.intervalMs cannot change while running');
      expect(instance.child.exitCode, instance.output()).toBeNull();
    }
    expect(await running(instances)).toEqual([kept, added].sort());

    // A pause stops the location on whichever instance owns it, a resume starts it again, and a signal for a
    // location removed is refused: each answered, none left waiting (backfill and reset: signals.test.ts).
    const pause = await signal(['pause', '--location', kept]);
    expect(pause.stdout).toMatch(/\ndone \S+ \S+\n/);
    await eventually(
      async () => JSON.stringify(await running(instances)) === JSON.stringify([added]),
      30_000,
      'the paused location runs nowhere',
    );
    const paused = await Promise.all(instances.map((i) => statusOf(i)));
    expect(
      paused.some((view) => JSON.stringify(view).includes(`"pausedLocations":["${kept.toLowerCase()}"]`)),
    ).toBe(true);
    const unknown = await signal(['pause', '--location', first]);
    expect(unknown.stdout).toMatch(/\nrefused \S+ \S+ LOCATION_NOT_CONFIGURED: /);
    // Calls made while it is paused are published once it is resumed, from where it stopped.
    sandbox.admin.importCalls({ locationUid: kept, count: 5 });
    const resume = await signal(['resume', '--location', kept]);
    expect(resume.stdout).toMatch(/\ndone \S+ \S+\n/);
    await eventually(
      async () => JSON.stringify(await running(instances)) === JSON.stringify([kept, added].sort()),
      30_000,
      'the resumed location runs again',
    );
    await eventually(keptAndAdded(), 120_000, 'every location caught up after the resume').catch(
      async (error: unknown) => Promise.reject(new Error(`${String(error)}\n${await offsets()}\n${why()}`)),
    );

    for (const instance of instances) instance.child.kill('SIGTERM');
    for (const instance of instances) expect(await instance.exited, instance.output()).toBe(0);
    const truth = locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  }, 420_000);
});
