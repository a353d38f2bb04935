/**
 * Backfill and reset signals carried out by a running connector, in both modes, through the built CLI and seen
 * from the outside (the offsets topic, /status and a read_committed reader of the calls topic):
 * - a backfill of a range of one location, with every instance killed -9 while its history lane is half read
 *   and started again: the range is published once more, completely and exactly once, each re-read record
 *   naming the signal in a header; nothing outside it is published again;
 * - a reset of another location to an instant, with `--wait`: done, and the calls from that instant on are
 *   published again, the earlier ones not.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_HEADERS } from '../../../src/kafka/records/source-headers.js';
import { versionId } from '../../support/connector.js';
import { caughtUpCheck } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { alive, diagnostics, statusOf, type Instance } from '../../support/distributed.js';
import { eventually, readCommitted } from '../../support/kafka.js';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';

const CLI = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

/** A call record as a read_committed consumer sees it: its version and the signal header, if any. */
interface SeenRecord {
  location: string;
  version: string;
  signal: string | null;
}

describe.each([
  { mode: 'single', exactlyOnce: true },
  { mode: 'distributed', exactlyOnce: true },
  { mode: 'single', exactlyOnce: false },
] as const)('signals carried out in $mode mode, exactlyOnce $exactlyOnce', ({ mode, exactlyOnce }) => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      mode,
      sandbox: {
        data: {
          seed: 7,
          locations: 2,
          callsPerLocation: 60,
          privateRatio: 0.3,
          // Distinct instants: the ranges below split the calls where the test says.
          sameInstantGroups: { count: 0, size: 0 },
        },
      },
      connector: {
        api: { pageSize: 20 },
        poll: { intervalMs: 1_000 },
        metrics: { enabled: true, port: 0 },
        kafka: { exactlyOnce },
        // Short history pages: a backfill takes many commits, so the kill lands while it is half read.
        lanes: { historyPageSize: 2 },
      },
    });
  });

  afterAll(() => scenario.close());

  /** `calls-connector signal <args>` on the shared config file, through the built CLI. */
  const signal = async (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => {
    const child = spawn(process.execPath, [CLI, 'signal', ...args, '--config', scenario.configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A CLI that hangs fails the step, saying what it printed, rather than the test at its timeout.
    const hung = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(hung);
    return { code, stdout, stderr };
  };

  const start = (names: string[]): Instance[] => names.map((name) => scenario.startInstance(name));

  /** Every call record in the calls topic, read_committed. */
  const seen = async (): Promise<SeenRecord[]> => {
    const registry = new SchemaRegistry({ host: scenario.config.schemaRegistry.url });
    const records: SeenRecord[] = [];
    for (const record of await readCommitted(scenario.kafka, scenario.config.kafka.topic)) {
      if (record.value === null) continue;
      const value = (await registry.decode(record.value)) as {
        uid: string;
        locationUid: string;
        updatedAtIso: string;
      };
      const header = record.headers?.[SOURCE_HEADERS.signal];
      records.push({
        location: value.locationUid,
        version: `${value.uid}@${new Date(value.updatedAtIso).toISOString()}`,
        signal: header === undefined ? null : String(header),
      });
    }
    return records;
  };

  const count = (versions: readonly string[]): Map<string, number> => {
    const counts = new Map<string, number>();
    for (const v of versions) counts.set(v, (counts.get(v) ?? 0) + 1);
    return counts;
  };

  it('re-reads a backfill range once through a kill -9, and resets a location while running', async () => {
    const { sandbox } = scenario;
    const [backfilled, reset] = sandbox.locations as [string, string];
    const byTime = (location: string) =>
      [...sandbox.admin.truth(location)].sort((a, b) => Date.parse(a.updatedAt) - Date.parse(b.updatedAt));
    const names = mode === 'single' ? ['i1'] : ['i1', 'i2'];
    let instances = start(names);
    const why = () => diagnostics(instances);
    const store = scenario.offsetStore('signals-test-offsets');
    await eventually(caughtUpCheck(sandbox, store), 90_000, 'both locations caught up').catch(
      (error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)),
    );

    // Backfill [since, until) of the first location: 40 calls, read 2 per history page.
    const truth = byTime(backfilled);
    const since = truth[10]?.updatedAt ?? '';
    const until = truth[50]?.updatedAt ?? '';
    const inRange = truth
      .filter(
        (c) => Date.parse(c.updatedAt) >= Date.parse(since) && Date.parse(c.updatedAt) < Date.parse(until),
      )
      .map(versionId);
    expect(inRange.length).toBeGreaterThan(30);
    // Slow answers while the backfill is read (about a quarter second a page): the kill below lands while it is
    // half read, whatever the machine's speed; lifted once it landed.
    sandbox.admin.setFaults({ latency: { medianMs: 80, p99Ms: 160 } });
    const sent = await signal(['backfill', '--location', backfilled, '--since', since, '--until', until]);
    expect(sent.code, `${sent.stdout}${sent.stderr}\n${why()}`).toBe(0);
    const id = sent.stdout.trim().split('\n')[0] ?? '';
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    // Kill -9 every instance once the backfill's history lane has committed a page, and start them again.
    await eventually(
      async () => {
        const history = (await store.loadAll()).get(backfilled)?.history;
        return history?.signal === id && history.watermark !== null;
      },
      60_000,
      'the backfill read its first pages',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    for (const instance of instances) expect(alive(instance), `${instance.name} runs\n${why()}`).toBe(true);
    const exits = instances.map((instance) => once(instance.child, 'exit'));
    for (const instance of instances) instance.child.kill('SIGKILL');
    await Promise.all(exits);
    const atKill = (await store.loadAll()).get(backfilled);
    expect(atKill?.history?.signal, 'the kill landed while the backfill was half read').toBe(id);
    sandbox.admin.setFaults({ latency: null });
    instances = start(names.map((n) => `${n}-again`));

    await eventually(
      async () => {
        const offset = (await store.loadAll()).get(backfilled);
        return offset !== undefined && offset.history === undefined && offset.signal === id;
      },
      120_000,
      'the backfill finished after the restart',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));
    await eventually(
      async () => {
        const views = await Promise.all(instances.map((i) => statusOf(i)));
        return views.every((v) => v !== undefined && JSON.stringify(v).includes('"running":[]'));
      },
      30_000,
      'no signal running any more (its done read back)',
    );

    // Reset the second location to the updatedAt of its 31st call, waiting for the outcome.
    const resetTruth = byTime(reset);
    const to = resetTruth[30]?.updatedAt ?? '';
    const resetDone = await signal(['reset', '--location', reset, '--to', to, '--wait', '--timeout', '60s']);
    expect(resetDone.code, `${resetDone.stdout}${resetDone.stderr}\n${why()}`).toBe(0);
    expect(resetDone.stdout).toMatch(/\ndone \S+ \S+\n/);
    const again = resetTruth.filter((c) => Date.parse(c.updatedAt) >= Date.parse(to)).map(versionId);
    const once_ = resetTruth.filter((c) => Date.parse(c.updatedAt) < Date.parse(to)).map(versionId);
    let records: SeenRecord[] = [];
    await eventually(
      async () => {
        records = await seen();
        const counts = count(records.filter((r) => r.location === reset).map((r) => r.version));
        return again.every((v) => counts.get(v) === 2);
      },
      60_000,
      'the reset location published its calls from `to` again',
    ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}\n${why()}`)));

    // The backfill: the range once more, each record naming the signal; exactly once through the kill when
    // transactions are on, at least once (a page whose offset the kill lost is read again) when they are off.
    const reRead = records.filter((r) => r.signal !== null);
    expect(new Set(reRead.map((r) => r.signal))).toEqual(new Set([id]));
    if (exactlyOnce) expect(reRead.map((r) => r.version).sort()).toEqual([...inRange].sort());
    else expect([...new Set(reRead.map((r) => r.version))].sort()).toEqual([...inRange].sort());
    const changes = count(
      records.filter((r) => r.location === backfilled && r.signal === null).map((r) => r.version),
    );
    expect(truth.map(versionId).filter((v) => changes.get(v) !== 1)).toEqual([]);
    // The reset: from `to` twice (before and after), before it once.
    const resetCounts = count(records.filter((r) => r.location === reset).map((r) => r.version));
    expect(again.filter((v) => resetCounts.get(v) !== 2)).toEqual([]);
    expect(once_.filter((v) => resetCounts.get(v) !== 1)).toEqual([]);
  }, 420_000);
});
