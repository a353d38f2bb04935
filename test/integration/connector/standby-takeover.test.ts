/**
 * Issue 32 item 5 (review L4): a single-mode standby takes over once no newer instance is a member of the
 * instances group. A writes; B (same connector.name) starts and fences A, which stands by; B is stopped, as when
 * a blue/green switch is rolled back. A must take over: changes made after B stopped are published by A, every
 * location catches up, and a read_committed reader finds every call version exactly once. Before, A stood by
 * until stopped and nothing was written.
 *
 * The mixed-version case (L4 b): a member without a start stamp (an earlier version, here a plain kafkajs
 * consumer of the group under kafkajs's round-robin protocol) counts as newer at a re-initialisation, and a
 * takeover is one: A stands by while that member is in the group (it lists no call and writes no record), and
 * takes over once it has left. Each case starts its own A.
 *
 * Ordering assertions only (log lines, offsets caught up), no wall-clock bounds; the sandbox keeps changing
 * calls (live mode) and both instances poll every second, so A has pages to write whenever it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { presenceGroupId } from '../../../src/kafka/group/instance-presence.js';
import { publishedCalls } from '../../support/connector.js';
import {
  caughtUpCheck,
  doubledAndMissing,
  explainedBy,
  type ConnectorProcess,
} from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { eventually } from '../../support/kafka.js';

/** Logged at each stand-down (a newer instance fenced this one), by this version and the one before. */
const STANDING_BY = '"a newer instance took over: no more writes"';
const STILL_NEWER = 'standing by: a newer instance is a member of the instances group';
const TOOK_OVER = '"took over: this instance writes"';
/** Logged when a standby found no newer member and begins to take over, before "took over". */
const TAKING_OVER = 'taking over: no newer instance in the group';

describe('a single-mode instance standing by after a newer one fenced it', () => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      sandbox: { data: { seed: 41, locations: 3, callsPerLocation: 200, privateRatio: 0.3 } },
      connector: {
        api: { pageSize: 20, requestsPerSecond: 1_000, enrich: false },
        poll: { intervalMs: 1_000, maxLocationsInFlight: 3 },
      },
    });
  });

  afterAll(() => scenario.close());

  /** Resolves once `line` is in the process's log; fails with every process's last log lines. */
  const logged = (connector: ConnectorProcess, line: string, what: string) =>
    explainedBy(
      eventually(() => connector.output().includes(line), 60_000, what),
      scenario.processes.map((p, i) => [`process ${i + 1}`, p] as const),
    );
  const occurrences = (connector: ConnectorProcess, line: string) =>
    connector.output().split(line).length - 1;
  /** Stops the live changes, waits until A alone caught up, and reads every call version exactly once. */
  const caughtUpExactlyOnce = async (a: ConnectorProcess, reader: string) => {
    const { sandbox, kafka, config } = scenario;
    sandbox.admin.setLive(false);
    const store = scenario.offsetStore(`${reader}-offsets`);
    await explainedBy(
      eventually(caughtUpCheck(sandbox, store), 120_000, 'every location caught up by A alone'),
      [['A', a]],
    );
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  };
  const versions = () =>
    scenario.sandbox.locations.reduce((n, l) => n + scenario.sandbox.admin.truth(l).length, 0);

  it('takes over once the newer instance is stopped: 0 lost, 0 duplicated (L4 a)', async () => {
    const { sandbox, progress, start } = scenario;
    sandbox.admin.setLive({ updatesPerSecond: 4, createsPerSecond: 2 });

    const a = start();
    await logged(a, '"connector started"', 'A started');
    await progress(30, 'A at work');

    const b = start();
    await logged(b, '"connector started"', 'B started');
    await logged(a, STANDING_BY, 'A fenced by B, standing by');
    expect(a.output()).not.toContain(TOOK_OVER);
    await progress(30, 'B at work while A stands by');

    b.child.kill('SIGTERM');
    expect(await b.exited, b.output()).toBe(0);
    const versionsAtStop = versions();
    // Changes made after B stopped can only be written by A.
    await eventually(() => versions() >= versionsAtStop + 10, 60_000, 'changes made after B stopped');
    await caughtUpExactlyOnce(a, 'takeover-a');
    expect(a.child.exitCode).toBeNull();
    expect(occurrences(a, TOOK_OVER)).toBe(1);
    a.child.kill('SIGTERM');
    expect(await a.exited, a.output()).toBe(0);
  }, 180_000);

  it('stands by while a member without a start stamp is in the group, and takes over once it left (L4 b)', async () => {
    const { sandbox, kafka, config, progress, start } = scenario;
    sandbox.admin.setLive({ updatesPerSecond: 4, createsPerSecond: 2 });
    const a = start();
    await logged(a, '"connector started"', 'A started');
    await progress(30, 'A at work');

    // An earlier version's member: kafkajs's round-robin protocol, no start stamp in its metadata.
    const unstamped = kafka.consumer({
      groupId: presenceGroupId(config.connector.name),
      sessionTimeout: 6_000,
      heartbeatInterval: 1_000,
    });
    await unstamped.connect();
    await unstamped.subscribe({ topic: config.kafka.offsetsTopic, fromBeginning: false });
    let joined = false;
    unstamped.on(unstamped.events.GROUP_JOIN, () => (joined = true));
    await unstamped.run({ autoCommit: false, eachMessage: async () => {} });
    await eventually(() => joined, 60_000, 'the unstamped member joined');

    // C fences A (a first initialisation: the unstamped member counts as older), then stops.
    const standingBy = occurrences(a, STANDING_BY);
    const c = start();
    await logged(c, '"connector started"', 'C started');
    await eventually(() => occurrences(a, STANDING_BY) > standingBy, 60_000, 'A fenced by C');
    await progress(20, 'C at work');
    const stillNewer = occurrences(a, STILL_NEWER);
    const tookOver = occurrences(a, TOOK_OVER);
    c.child.kill('SIGTERM');
    expect(await c.exited, c.output()).toBe(0);

    // A asks again after C left: the unstamped member counts as newer at a re-initialisation.
    await eventually(() => occurrences(a, STILL_NEWER) > stillNewer, 60_000, 'A asked after C left');
    // Standing by is nothing written: with C gone and changes made all along, A neither lists calls nor
    // publishes while the member is in the group, for as long as the sandbox takes to make 20 more versions
    // (several of A's poll intervals).
    const admin = kafka.admin();
    await admin.connect();
    const written = async () =>
      (await admin.fetchTopicOffsets(config.kafka.topic)).reduce((n, p) => n + BigInt(p.high), 0n);
    try {
      const listedBefore = sandbox.admin.stats().listRequests;
      const writtenBefore = await written();
      const versionsBefore = versions();
      await eventually(() => versions() >= versionsBefore + 20, 60_000, 'changes made while A stands by');
      expect(sandbox.admin.stats().listRequests, 'calls listed while A stood by').toBe(listedBefore);
      expect(await written(), 'records written while A stood by').toBe(writtenBefore);
    } finally {
      await admin.disconnect();
    }
    const beforeLeave = a.output().length;
    expect(a.output()).not.toContain(TAKING_OVER);
    expect(occurrences(a, TOOK_OVER)).toBe(tookOver);

    await unstamped.disconnect();
    await eventually(() => occurrences(a, TOOK_OVER) > tookOver, 60_000, 'A took over once it left');
    // The takeover began after the member left, not before: its first line follows what A had logged then.
    expect(a.output().indexOf(TAKING_OVER)).toBeGreaterThanOrEqual(beforeLeave);
    const versionsAtLeave = versions();
    await eventually(() => versions() >= versionsAtLeave + 10, 60_000, 'changes made after it left');

    await caughtUpExactlyOnce(a, 'takeover-b');
    expect(a.child.exitCode).toBeNull();
    a.child.kill('SIGTERM');
    expect(await a.exited, a.output()).toBe(0);
  }, 240_000);
});
