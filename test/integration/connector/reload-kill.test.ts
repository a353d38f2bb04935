/**
 * A reload that a kill -9 interrupts, in both modes: the file is rewritten (a location removed, one added),
 * every instance is sent SIGHUP and killed -9, at once or as soon as its log says the reload was applied (the
 * removed location's page in flight and the added one's first pages under way), and started again on the new
 * file. Whatever the kill cut
 * short (a removal finishing its page, an added location's first page), the restarted instances run the new
 * sources, and a read_committed reader finds every version of the kept and added locations exactly once.
 */
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { publishedCalls } from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { alive, diagnostics, statusOf, type Instance } from '../../support/distributed.js';
import { eventually } from '../../support/kafka.js';

// Two of the four pairings of mode and moment, for CI's time: each mode meets one moment of the kill.
describe.each([
  { mode: 'single', kill: 'at once' },
  { mode: 'distributed', kill: 'once applied' },
] as const)('a reload cut short by kill -9 $kill in $mode mode', ({ mode, kill }) => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      mode,
      sandbox: { data: { seed: 11, locations: 3, callsPerLocation: 40, privateRatio: 0.3 } },
      connector: {
        api: { pageSize: 10 },
        poll: { intervalMs: 1_000 },
        metrics: { enabled: true, port: 0 },
      },
      document: (base, sandbox) => ({ ...base, sources: [{ locations: sandbox.locations.slice(0, 2) }] }),
    });
  });

  afterAll(() => scenario.close());

  const running = async (instances: readonly Instance[]): Promise<string[]> => {
    const views = await Promise.all(instances.map((i) => statusOf(i)));
    return views.flatMap((v) => (v?.tasks ?? []).map((t) => t.id)).sort();
  };

  it('restarts on the new sources and publishes every version of the kept and added locations once', async () => {
    const { sandbox, kafka, config } = scenario;
    const [removed, kept, added] = sandbox.locations as [string, string, string];
    const names = mode === 'single' ? ['i1'] : ['i1', 'i2'];
    let instances = names.map((name) => scenario.startInstance(name));
    const why = () => diagnostics(instances);
    const store = scenario.offsetStore('reload-kill-offsets');
    await eventually(
      caughtUpCheck({ ...sandbox, locations: [removed, kept] }, store),
      90_000,
      'the two configured locations caught up',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));

    // Changes made before the reload, to the location kept and the one added: pages in flight at the kill.
    sandbox.admin.importCalls({ locationUid: kept, count: 15 });
    sandbox.admin.importCalls({ locationUid: added, count: 15 });
    const document = parseYaml(await readFile(scenario.configFile, 'utf8')) as Record<string, unknown>;
    await writeFile(scenario.configFile, stringify({ ...document, sources: [{ locations: [kept, added] }] }));
    for (const instance of instances) expect(alive(instance), `${instance.name} runs\n${why()}`).toBe(true);
    const exits = instances.map((instance) => once(instance.child, 'exit'));
    const before = instances.map((instance) => instance.output().length);
    for (const instance of instances) instance.child.kill('SIGHUP');
    if (kill === 'once applied')
      await eventually(
        () =>
          instances.every((instance, i) =>
            instance.output().slice(before[i]).includes('configuration reloaded: 1 location(s) added'),
          ),
        30_000,
        'every instance applied the reload',
      ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    for (const instance of instances) instance.child.kill('SIGKILL');
    await Promise.all(exits);

    instances = names.map((name) => scenario.startInstance(`${name}-again`));
    await eventually(
      async () => JSON.stringify(await running(instances)) === JSON.stringify([kept, added].sort()),
      60_000,
      'the restarted instances run the new sources',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    await eventually(
      caughtUpCheck({ ...sandbox, locations: [kept, added] }, store),
      120_000,
      'the kept and added locations caught up',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));

    const truth = [kept, added].flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    const ofThem = published.filter((call) => call.locationUid === kept || call.locationUid === added);
    expect(doubledAndMissing(ofThem, truth)).toEqual({ doubled: [], missing: [] });
    for (const instance of instances) expect(alive(instance), why()).toBe(true);
  }, 300_000);
});
