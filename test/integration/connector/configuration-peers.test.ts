/**
 * Instances that run different configurations find out, through the group `<connector.name>-configurations`
 * (kafka/group/configuration-peers.ts), and say so in /status and /metrics, seen from the outside only: two
 * processes of one connector, each with a configuration file of its own, in distributed mode and in single mode
 * (a writer and its standby). Both agree; one reloads with an extra location (SIGHUP) and both report that they
 * differ, naming each fingerprint and its instance; the other reloads the same and both agree again. While they
 * differ, the location only one of them lists runs only where the owner of its partition (single mode: the
 * writer) lists it (docs/operations.md, "Instances that run different configurations"): never on the instance
 * without it.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { configurationFingerprint } from '../../../src/config/config-diff.js';
import { parseConfig } from '../../../src/config/load.js';
import { locationPartition } from '../../../src/kafka/group/location-partition.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import {
  alive,
  diagnostics,
  metricOf,
  startInstance,
  statusOf,
  type Instance,
} from '../../support/distributed.js';
import { eventually } from '../../support/kafka.js';

interface ConfigurationSection {
  fingerprint: string;
  agreement: 'agreed' | 'differs' | 'unknown';
  peers: Array<{ fingerprint: string; instances: number; names: string[] }>;
}

/** Single mode: the instance's role in /status (writer or standby); undefined while it does not answer. */
function roleOf(status: object | undefined): string | undefined {
  return (status as { instance?: { role: string } } | undefined)?.instance?.role;
}

/** /status's `configuration` section; undefined while the instance does not answer. */
async function configurationOf(instance: Instance): Promise<ConfigurationSection | undefined> {
  const status = (await statusOf(instance)) as { configuration?: ConfigurationSection } | undefined;
  return status?.configuration;
}

describe.each(['distributed', 'single'] as const)(
  'instances that run different configurations in %s mode',
  (mode) => {
    let scenario: ConnectorScenario;
    let fileOf: Map<string, string>;
    let documentText: string;
    const own: Instance[] = [];

    beforeAll(async () => {
      scenario = await connectorScenario({
        mode,
        sandbox: { data: { seed: 7, locations: 3, callsPerLocation: 5, privateRatio: 0 } },
        connector: { poll: { intervalMs: 1_000 }, metrics: { enabled: true, port: 0 } },
        document: (base, sandbox) => ({ ...base, sources: [{ locations: sandbox.locations.slice(0, 2) }] }),
      });
      documentText = await readFile(scenario.configFile, 'utf8');
      const second = `${scenario.configFile}.i2.yaml`;
      await copyFile(scenario.configFile, second);
      fileOf = new Map([
        ['i1', scenario.configFile],
        ['i2', second],
      ]);
    });

    afterAll(async () => {
      for (const instance of own)
        if (alive(instance)) {
          instance.child.kill('SIGKILL');
          await instance.exited;
        }
      await scenario.close();
    });

    it('agree, report "differs" in /status, the metric and the log once one reloads other sources, and agree again once the other reloads the same', async () => {
      const { sandbox, config } = scenario;
      const [first, second, added] = sandbox.locations as [string, string, string];
      const i1 = scenario.startInstance('i1');
      // Single mode: i2 starts once i1 writes, so that i2, the newer, takes over as the writer (a standby lists its
      // configured locations in /status but polls none: the rule below needs the writer to be the one that lists
      // the added location). Started together, either may write first.
      if (mode === 'single')
        await eventually(async () => roleOf(await statusOf(i1)) === 'writer', 60_000, 'i1 writing');
      const i2 = startInstance('i2', fileOf.get('i2')!);
      own.push(i2);
      const instances = [i1, i2];
      const why = () => diagnostics(instances);
      const fingerprintOf = (locations: string[]) =>
        configurationFingerprint(
          parseConfig({ ...(parseYaml(documentText) as object), sources: [{ locations }] }, {}),
        );
      const before = fingerprintOf([first, second]);
      const after = fingerprintOf([first, second, added]);

      /** Every instance's /status `configuration` satisfies `holds`, and its agreement metric says `state`. */
      const allSay = async (
        state: 'agreed' | 'differs',
        holds: (section: ConfigurationSection, instance: Instance) => boolean,
        what: string,
      ) =>
        eventually(
          async () => {
            for (const instance of instances) {
              const section = await configurationOf(instance);
              if (section === undefined || section.agreement !== state || !holds(section, instance))
                return false;
              const metric = `calls_connector_configuration_agreement{state="${state}"}`;
              if ((await metricOf(instance, metric)) !== 1) return false;
            }
            return true;
          },
          90_000,
          what,
        ).catch(async (error: unknown) => {
          const sections = await Promise.all(
            instances.map(async (i) => JSON.stringify(await configurationOf(i))),
          );
          throw new Error(`${String(error)}\n${sections.join('\n')}\n${why()}`);
        });

      /** Rewrites `instance`'s own file with `locations` as its sources, then sends it SIGHUP. */
      const reload = async (instance: Instance, locations: string[]) => {
        const document = { ...(parseYaml(documentText) as object), sources: [{ locations }] };
        await writeFile(fileOf.get(instance.name)!, stringify(document));
        instance.child.kill('SIGHUP');
      };

      await allSay(
        'agreed',
        (s) =>
          s.fingerprint === before &&
          s.peers.length === 1 &&
          s.peers[0]!.fingerprint === before &&
          s.peers[0]!.instances === 2,
        'both instances agree on the first configuration',
      );
      for (const instance of instances)
        expect(await metricOf(instance, `calls_connector_configuration_peers{fingerprint="${before}"}`)).toBe(
          2,
        );

      await reload(i2, [first, second, added]);
      await allSay(
        'differs',
        (s, instance) =>
          s.fingerprint === (instance === i2 ? after : before) &&
          JSON.stringify(s.peers.map((p) => [p.fingerprint, p.instances]).sort()) ===
            JSON.stringify(
              [
                [before, 1],
                [after, 1],
              ].sort(),
            ),
        'both instances report that their configurations differ',
      );
      for (const instance of instances) {
        expect(await metricOf(instance, `calls_connector_configuration_peers{fingerprint="${before}"}`)).toBe(
          1,
        );
        expect(await metricOf(instance, `calls_connector_configuration_peers{fingerprint="${after}"}`)).toBe(
          1,
        );
        expect(await metricOf(instance, 'calls_connector_configuration_agreement{state="agreed"}')).toBe(0);
        const warning = instance
          .output()
          .split('\n')
          .find((line) => line.includes('run different configurations'));
        expect(warning, instance.output()).toContain('"level":40');
        expect(warning).toContain(before);
        expect(warning).toContain(after);
      }
      const names = (await configurationOf(i1))!.peers.flatMap((p) => p.names);
      expect(names).toHaveLength(2);
      expect(names.every((name) => /^.+:\d+@\d{4}-\d\d-\d\dT/.test(name))).toBe(true);

      // The rule while they differ: the added location runs only where the owner of its partition (single mode: the
      // writer) lists it; never on i1, which does not.
      const partition = locationPartition(config.connector.name, added, config.kafka.offsetsTopicPartitions);
      await eventually(
        async () => {
          const [s1, s2] = await Promise.all([statusOf(i1), statusOf(i2)]);
          if (s1 === undefined || s2 === undefined) return false;
          expect(s1.tasks.map((t) => t.id)).not.toContain(added);
          // Single mode: i2 took over as the writer (started after i1 wrote), so it runs the location.
          if (mode === 'single') return roleOf(s2) === 'writer' && s2.tasks.some((t) => t.id === added);
          const owner = s2.assignment.partitions.includes(partition);
          return s2.tasks.some((t) => t.id === added) === owner;
        },
        60_000,
        'the added location runs only where the owner of its partition lists it',
      );

      await reload(i1, [first, second, added]);
      await allSay(
        'agreed',
        (s) => s.fingerprint === after && s.peers.length === 1 && s.peers[0]!.instances === 2,
        'both instances agree again on the new configuration',
      );
      for (const instance of instances) {
        expect(
          await metricOf(instance, `calls_connector_configuration_peers{fingerprint="${before}"}`),
        ).toBeUndefined();
        expect(instance.output()).toContain('run one configuration again');
      }
      // Every instance runs the added location's partition's owner's way now: it runs somewhere.
      await eventually(
        async () => {
          const views = await Promise.all(instances.map((i) => statusOf(i)));
          return views.some((v) => v?.tasks.some((t) => t.id === added) === true);
        },
        60_000,
        'the added location runs once both list it',
      );

      for (const instance of instances) instance.child.kill('SIGTERM');
      for (const instance of instances) expect(await instance.exited, instance.output()).toBe(0);
    }, 360_000);
  },
);
