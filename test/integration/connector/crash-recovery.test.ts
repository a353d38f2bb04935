/**
 * Crash safety: the connector process is killed with SIGKILL (kill -9, no shutdown code runs) at random
 * points of a backfill, restarted each time, and finally allowed to finish. A read_committed consumer must
 * then see every call version of the API exactly once: nothing lost, nothing doubled.
 *
 * The crash points are random but driven by real progress: each kill happens after a random number of
 * further requests reached the sandbox, so they land mid-page, mid-enrichment and mid-transaction.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { Kafka } from 'kafkajs';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { KafkaOffsetStore } from '../../../src/kafka/offsets/kafka-offset-store.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { connectorDocument, publishedCalls, startTestSandbox } from '../../support/connector.js';
import {
  caughtUpCheck,
  doubledAndMissing,
  startConnectorProcess as startConnector,
} from '../../support/connector-process.js';
import { eventually, testKafka } from '../../support/kafka.js';

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
  let sandbox: RunningSandbox;
  let kafka: Kafka;
  let config: ConnectorConfig;
  let configFile: string;
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: {
        seed: 11,
        locations: 3,
        callsPerLocation: 300,
        privateRatio: 0.3,
        sameInstantGroups: { count: 1, size: 45 },
      },
      // A little latency so that kills land while pages and transactions are in flight.
      faults: { latency: { medianMs: 2, p99Ms: 20 } },
    });
    kafka = testKafka();
    const document = connectorDocument(sandbox, {
      api: { pageSize: 20 },
      poll: { intervalMs: 60_000, maxLocationsInFlight: 3, pagesPerTurn: 2 },
    });
    config = parseConfig(document, {});
    const dir = await mkdtemp(join(tmpdir(), 'calls-crash-'));
    configFile = join(dir, 'config.yaml');
    await writeFile(configFile, stringify({ ...document, logging: { level: 'info', format: 'json' } }));
  });

  afterAll(async () => {
    await sandbox.close();
  });

  it('resumes after every crash and ends with each call version published exactly once', async () => {
    const random = seededRandom(seed);
    const store = new KafkaOffsetStore({
      kafka,
      topic: config.kafka.offsetsTopic,
      connectorName: config.connector.name,
      groupIdPrefix: 'crash-test-offsets',
      loadTimeoutMs: 30_000,
    });
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const caughtUp = caughtUpCheck(sandbox, store);

    const kills = 4;
    for (let i = 0; i < kills; i++) {
      const connector = startConnector(configFile);
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

    const final = startConnector(configFile);
    await eventually(caughtUp, 120_000, `every location caught up after ${kills} crashes (seed ${seed})`);
    final.child.kill('SIGTERM');
    expect(await final.exited, final.output()).toBe(0);

    const published = await publishedCalls(kafka, config, truth);
    const { doubled, missing } = doubledAndMissing(published, truth);
    expect({ doubled, missing, seed }).toEqual({ doubled: [], missing: [], seed });
    expect(published.length).toBe(truth.length);
  });
});
