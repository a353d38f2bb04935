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
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { KafkaOffsetStore } from '../../../src/kafka/offsets/kafka-offset-store.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { connectorDocument, publishedCalls, startTestSandbox } from '../../support/connector.js';
import {
  caughtUpCheck,
  doubledAndMissing,
  explainedBy,
  startConnectorProcess,
  type ConnectorProcess,
} from '../../support/connector-process.js';
import { eventually, testKafka } from '../../support/kafka.js';

describe('rolling restarts of one connector name', () => {
  let sandbox: RunningSandbox;
  let kafka: Kafka;
  let config: ConnectorConfig;
  let configFile: string;
  const running: ConnectorProcess[] = [];

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 23, locations: 3, callsPerLocation: 300, privateRatio: 0.3 },
      faults: { latency: { medianMs: 4, p99Ms: 25 } },
    });
    kafka = testKafka();
    const document = connectorDocument(sandbox, {
      // A rate limit spreads the backfill (about 1,000 requests at 40 per second) over the first handovers;
      // live changes and 1 s polls keep pages flowing after it (see above).
      api: { pageSize: 10, requestsPerSecond: 40 },
      poll: { intervalMs: 1_000, maxLocationsInFlight: 3, pagesPerTurn: 2 },
    });
    config = parseConfig(document, {});
    const dir = await mkdtemp(join(tmpdir(), 'calls-rolling-'));
    configFile = join(dir, 'config.yaml');
    await writeFile(configFile, stringify({ ...document, logging: { level: 'info', format: 'json' } }));
  });

  afterAll(async () => {
    for (const connector of running) if (connector.child.exitCode === null) connector.child.kill('SIGKILL');
    await sandbox.close();
  });

  it('leaves the newest instance writing after each handover, one instance at the end, and nothing doubled or lost', async () => {
    sandbox.admin.setLive({ updatesPerSecond: 3, createsPerSecond: 1 });
    const store = new KafkaOffsetStore({
      kafka,
      topic: config.kafka.offsetsTopic,
      connectorName: config.connector.name,
      groupIdPrefix: 'rolling-test-offsets',
      loadTimeoutMs: 30_000,
    });
    const progress = (more: number, what: string) => {
      const target = sandbox.admin.stats().requests + more;
      return eventually(() => sandbox.admin.stats().requests >= target, 60_000, what);
    };

    let old = startConnectorProcess(configFile);
    running.push(old);
    await progress(40, 'the first instance at work');
    const handovers = 4;
    for (let i = 1; i <= handovers; i++) {
      const next = startConnectorProcess(configFile);
      running.push(next);
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
    expect(running.filter((c) => c.child.exitCode === null)).toEqual([old]);
    expect(old.output()).not.toContain('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    old.child.kill('SIGTERM');
    expect(await old.exited, old.output()).toBe(0);

    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    // Each version once (live changes also publish versions that a later change replaced in the truth).
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  }, 240_000);
});
