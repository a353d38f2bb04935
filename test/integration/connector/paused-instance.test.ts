/**
 * Issue 20: an instance paused (SIGSTOP) for longer than kafka.transactionTimeoutMs mid-backfill, while a
 * supervisor starts its replacement. When the old one wakes up it must not fence the replacement back (it
 * used to take the fencing for its own transaction's timeout and rebuild its producer): the replacement is
 * still writing at the end, after the old one was resumed and then stopped, and a read_committed reader finds
 * every call version of the sandbox exactly once.
 *
 * The sandbox keeps changing calls (live mode) and both instances poll every second, so the old instance has
 * pages to write after it wakes up whatever the replacement did meanwhile: it must meet the fencing and stand
 * by. (Without live changes an old instance that woke after the replacement had caught up reloaded the
 * replacement's offsets, found nothing to do and never wrote again, so the test proved nothing.)
 *
 * Phases wait for observable conditions (requests served, log lines, offsets caught up), never for time alone;
 * the one wait on elapsed time is the pause itself, which must outlast the transaction timeout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishedCalls } from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing } from '../../support/connector-process.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import { eventually } from '../../support/kafka.js';
import { pauseInsideTransaction, wakeToFaultPath } from '../../support/pause.js';

const TRANSACTION_TIMEOUT_MS = 10_000;

describe('a single-mode instance paused past its transaction timeout while its replacement runs', () => {
  let scenario: ConnectorScenario;

  beforeAll(async () => {
    scenario = await connectorScenario({
      sandbox: { data: { seed: 31, locations: 4, callsPerLocation: 2_500, privateRatio: 0.3 } },
      connector: {
        // Kafka is the bottleneck (no enrichment, no rate limit, one page per transaction): the sink always has
        // pages queued and is inside a transaction nearly all the time, so the pause catches one open, with
        // pages prepared from offsets the replacement will move past. That is the case the age rule got wrong.
        api: { pageSize: 10, requestsPerSecond: 1_000, enrich: false },
        // Polled every second: once caught up, each instance lists the live changes at once (see above).
        poll: { intervalMs: 1_000, maxLocationsInFlight: 4, pagesPerTurn: 2 },
        kafka: { transactionTimeoutMs: TRANSACTION_TIMEOUT_MS, maxPagesPerTransaction: 1 },
      },
    });
  });

  afterAll(() => scenario.close());

  it('leaves the replacement writing after the old one wakes up and is stopped, nothing doubled or lost', async () => {
    const { sandbox, kafka, config, progress } = scenario;
    sandbox.admin.setLive({ updatesPerSecond: 4, createsPerSecond: 2 });
    const store = scenario.offsetStore('paused-test-offsets');
    const caughtUpNow = () => caughtUpCheck(sandbox, store)(); // the truth grows while live mode runs

    const admin = kafka.admin();
    await admin.connect();
    const old = scenario.start();
    await progress(100, 'the first instance at work');
    // Inside a transaction: the case the age rule got wrong (between two transactions the old code stood by).
    const topicPartitions = (await admin.fetchTopicMetadata({ topics: [config.kafka.topic] })).topics[0];
    const pausedOutput = old.output().length;
    await pauseInsideTransaction(
      old.child,
      config.kafka.topic,
      (topicPartitions?.partitions ?? []).map((p) => p.partitionId),
    );
    const stoppedAt = Date.now();
    expect(await caughtUpNow()).toBe(false); // paused mid-backfill, or the pause proved little

    const replacement = scenario.start();
    await eventually(
      () => replacement.output().includes('"connector started"'),
      60_000,
      'the replacement started',
    );
    await progress(60, 'the replacement at work while the old one is paused');
    await eventually(
      () => Date.now() - stoppedAt > TRANSACTION_TIMEOUT_MS + 2_000,
      60_000,
      'the pause outlasted kafka.transactionTimeoutMs',
    );

    // Woken, the fault path: the old instance meets the fencing on its next request and stands by (it must not
    // fence back).
    await wakeToFaultPath(old, pausedOutput, 'KAFKA_FENCED_BY_ANOTHER_INSTANCE', 'the old instance stood by');
    await progress(60, 'the replacement still at work after the old one woke up');
    old.child.kill('SIGTERM');
    expect(await old.exited, old.output()).toBe(0);

    // Changes made after the old instance stopped can only be written by the replacement.
    const versions = () => sandbox.locations.reduce((n, l) => n + sandbox.admin.truth(l).length, 0);
    const versionsAtStop = versions();
    await eventually(
      () => versions() >= versionsAtStop + 10,
      60_000,
      'changes made after the old one stopped',
    );
    sandbox.admin.setLive(false);
    const caughtUp = caughtUpCheck(sandbox, store);
    await eventually(caughtUp, 120_000, 'every location caught up by the replacement alone');
    expect(replacement.child.exitCode).toBeNull();
    expect(replacement.output()).not.toContain('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    replacement.child.kill('SIGTERM');
    expect(await replacement.exited, replacement.output()).toBe(0);

    await admin.disconnect();
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  }, 240_000);
});
