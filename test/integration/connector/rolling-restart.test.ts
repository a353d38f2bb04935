/**
 * Rolling restarts, as a Kubernetes Deployment does them: a new instance of the same connector name starts
 * while the old one runs, and only then is the old one sent SIGTERM. The newest instance must win: its
 * producer fences the old one, which stands by (writes nothing more, not ready) instead of fencing back,
 * and exits 0 on SIGTERM. Repeated four times; at the end exactly one instance runs, and a read_committed
 * reader sees every call version of the sandbox exactly once.
 *
 * The sandbox keeps changing calls (live mode) and the instances poll every second, so every handover finds
 * pages in flight, and the old instance has a page to commit after the new one took the producer: each
 * handover must show the old one meeting the fencing. (With a fixed backlog alone, the backfill sometimes
 * ended before the last handover, and with nothing left to list the test waited for requests that never came.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedCalls } from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing, explainedBy } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { eventually } from '../../support/kafka.js';

describe('rolling restarts of one connector name', () => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      sandbox: {
        data: { seed: 23, locations: 3, callsPerLocation: 300, privateRatio: 0.3 },
        faults: { latency: { medianMs: 4, p99Ms: 25 } },
      },
      connector: {
        // A rate limit spreads the backfill (about 1,000 requests at 40 per second) over the first handovers;
        // live changes and 1 s polls keep pages flowing after it (see above).
        api: { pageSize: 10, requestsPerSecond: 40 },
        poll: { intervalMs: 1_000, maxLocationsInFlight: 3, pagesPerTurn: 2 },
      },
    });
  });

  afterAll(() => scenario.close());

  it('leaves the newest instance writing after each handover, one instance at the end, and nothing doubled or lost', async () => {
    const { sandbox, kafka, config, progress } = scenario;
    sandbox.admin.setLive({ updatesPerSecond: 3, createsPerSecond: 1 });
    const store = scenario.offsetStore('rolling-test-offsets');

    let old = scenario.start();
    await progress(40, 'the first instance at work');
    const handovers = 4;
    for (let i = 1; i <= handovers; i++) {
      const next = scenario.start();
      const pair = [
        [`instance ${i}`, old],
        [`instance ${i + 1}`, next],
      ] as const;
      await explainedBy(
        eventually(() => next.output().includes('"connector started"'), 60_000, `instance ${i + 1} started`),
        pair,
      );
      // Both run for a while: the old one meets the fencing on its next commit and must not fence back.
      await explainedBy(progress(30, `instance ${i + 1} at work beside instance ${i}`), pair);
      // The old instance commits a page after the new one took the producer, meets the fencing, and stands by.
      await explainedBy(
        eventually(
          () => old.output().includes('KAFKA_FENCED_BY_ANOTHER_INSTANCE'),
          60_000,
          `instance ${i} stood by`,
        ),
        pair,
      );
      expect(next.child.exitCode, next.output()).toBeNull();
      old.child.kill('SIGTERM');
      expect(await old.exited, old.output()).toBe(0);
      expect(old.output()).not.toContain('KAFKA_FENCED_BY_ANOTHER_INSTANCE","msg":"connector stopping');
      old = next;
    }
    sandbox.admin.setLive(false);
    const caughtUp = caughtUpCheck(sandbox, store); // the truth no longer grows

    await explainedBy(eventually(caughtUp, 120_000, 'every location caught up after the rolling restarts'), [
      ['the last instance', old],
    ]);
    expect(scenario.processes.filter((c) => c.child.exitCode === null)).toEqual([old]);
    expect(old.output()).not.toContain('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    old.child.kill('SIGTERM');
    expect(await old.exited, old.output()).toBe(0);

    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    // Each version once (live changes also publish versions that a later change replaced in the truth).
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  }, 240_000);
});
