/**
 * Crash safety: the connector process is killed with SIGKILL (kill -9, no shutdown code runs) at random
 * points of a backfill, restarted each time, and finally allowed to finish. A read_committed consumer must
 * then see every call version of the API exactly once: nothing lost, nothing doubled.
 *
 * The crash points are random but driven by real progress: each kill happens after a random number of
 * further requests reached the sandbox, so they land mid-page, mid-enrichment and mid-transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedCalls } from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { eventually } from '../../support/kafka.js';

/** A deterministic-per-run but varied random source, so a failure can be replayed from the printed seed. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('a connector killed with SIGKILL at random points', () => {
  let scenario: ConnectorScenario;
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    scenario = await connectorScenario({
      sandbox: {
        data: {
          seed: 11,
          locations: 3,
          callsPerLocation: 300,
          privateRatio: 0.3,
          sameInstantGroups: { count: 1, size: 45 },
        },
        // A little latency so that kills land while pages and transactions are in flight.
        faults: { latency: { medianMs: 2, p99Ms: 20 } },
      },
      connector: {
        api: { pageSize: 20 },
        poll: { intervalMs: 60_000, maxLocationsInFlight: 3, pagesPerTurn: 2 },
      },
    });
  });

  afterAll(() => scenario.close());

  it('resumes after every crash and ends with each call version published exactly once', async () => {
    const { sandbox, kafka, config } = scenario;
    const random = seededRandom(seed);
    const store = scenario.offsetStore('crash-test-offsets');
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const caughtUp = caughtUpCheck(sandbox, store);

    const kills = 4;
    for (let i = 0; i < kills; i++) {
      const connector = scenario.start();
      const target = sandbox.admin.stats().requests + 10 + Math.floor(random() * 90);
      await eventually(
        () => sandbox.admin.stats().requests >= target || connector.child.exitCode !== null,
        60_000,
        `request ${target} (crash ${i + 1}, seed ${seed})`,
      );
      expect(connector.child.exitCode, connector.output()).toBeNull();
      connector.child.kill('SIGKILL');
      await connector.exited;
    }
    // The crashes must not have let the backfill finish before the last restart, or they proved little.
    expect(await caughtUp()).toBe(false);

    const final = scenario.start();
    await eventually(caughtUp, 120_000, `every location caught up after ${kills} crashes (seed ${seed})`);
    final.child.kill('SIGTERM');
    expect(await final.exited, final.output()).toBe(0);

    const published = await publishedCalls(kafka, config, truth);
    const { doubled, missing } = doubledAndMissing(published, truth);
    expect({ doubled, missing, seed }).toEqual({ doubled: [], missing: [], seed });
    expect(published.length).toBe(truth.length);
  });
});
