/**
 * `calls-connector signal` against the real broker: the CLI creates the signals topic, writes the signal to its
 * location's partition, and a reader of the topic sees it; with --wait it prints the outcome an answering
 * instance writes.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sendSignal } from '../../../src/cli/commands/signal.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { locationPartition } from '../../../src/kafka/group/location-partition.js';
import type { SignalTopicEntry } from '../../../src/kafka/signals/signal-model.js';
import { SignalTopicReader } from '../../../src/kafka/signals/signal-reader.js';
import { signalsTopicName, topicPartitionCount } from '../../../src/kafka/topics/topics.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { openSignals } from '../../../src/runtime/signals/signal-service.js';
import { systemClock } from '../../../src/time/clock.js';
import { capture } from '../../support/capture.js';
import { kafkaCommandsConfig } from '../../support/config-file.js';
import { eventually, testKafka, testKafkaConfig } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';

const LOCATION_A = '00000000-0000-4000-8000-00000000000a';
const NOT_CONFIGURED = '00000000-0000-4000-8000-0000000000ff';

const opened: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const close of opened.splice(0).reverse()) await close();
});

/** Runs a command function, returning its exit code and what it printed. */
async function run(
  command: () => Promise<number>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = capture(process.stdout);
  const stderr = capture(process.stderr);
  try {
    const code = await command();
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    vi.restoreAllMocks();
  }
}

async function startReader(
  topic: string,
  connectorName: string,
  each: (entry: SignalTopicEntry, at: { partition: number; offset: string }) => void,
): Promise<SignalTopicReader> {
  const reader = new SignalTopicReader(testKafka(), {
    topic,
    connectorName,
    groupIdPrefix: uniqueName('signal-test'),
    loadTimeoutMs: 30_000,
    each,
    logger: silentLogger(),
  });
  await reader.start();
  opened.push(() => reader.stop());
  return reader;
}

describe('signal command', () => {
  it('creates the signals topic, writes the signal to its location’s partition, and a reader sees it', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('signal-cli');
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A]);
    const topic = signalsTopicName(kafka.offsetsTopic);

    const stdout = capture(process.stdout);
    capture(process.stderr);
    const code = await sendSignal(file, 'backfill', {
      location: LOCATION_A,
      since: '2024-05-01T00:00:00Z',
      until: '2024-05-02T00:00:00Z',
    });
    vi.restoreAllMocks();
    expect(code).toBe(ExitCode.OK);
    const id = stdout.text().trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    // The offsets topic does not exist yet: the signals topic takes the configured count (24 by default).
    expect(await topicPartitionCount(testKafka(), topic)).toBe(24);
    const seen: Array<{ entry: SignalTopicEntry; partition: number }> = [];
    await startReader(topic, connectorName, (entry, at) => seen.push({ entry, partition: at.partition }));
    expect(seen).toEqual([
      {
        partition: locationPartition(connectorName, LOCATION_A, 24),
        entry: {
          type: 'signal',
          signal: expect.objectContaining({
            id,
            kind: 'backfill',
            location: LOCATION_A,
            since: '2024-05-01T00:00:00Z',
            until: '2024-05-02T00:00:00Z',
          }) as unknown,
        },
      },
    ]);
  });

  it('with --wait prints the outcomes a running instance answers: a pause done, a location it does not run refused', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('signal-wait');
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A]);
    const signalsOf = async () => {
      const signals = openSignals(testKafka(), {
        config: { connector: { name: connectorName, mode: 'single' }, kafka },
        instance: 'test-instance',
        ownsPartition: () => true,
        configured: (uid) => uid === LOCATION_A,
        // The scheduler's side, which runs every location and takes what it is handed.
        target: { runs: () => true, carryOut: () => undefined },
        metrics: testMetrics(),
        logger: silentLogger(),
        clock: systemClock,
      });
      opened.push(() => signals.close());
      return signals;
    };
    const instance = await signalsOf();
    await instance.ready();

    const paused = await run(() =>
      sendSignal(file, 'pause', { location: LOCATION_A, wait: true, timeoutMs: 30_000 }),
    );
    expect(paused.code).toBe(ExitCode.OK);
    const [pauseId, pauseOutcome] = paused.stdout.trim().split('\n');
    expect(pauseOutcome).toMatch(/^done \S+ test-instance$/);
    await eventually(() => instance.paused.isPaused(LOCATION_A), 20_000, 'the pause read back');

    const refused = await run(() =>
      sendSignal(file, 'resume', { location: NOT_CONFIGURED, wait: true, timeoutMs: 30_000 }),
    );
    expect(refused.stderr).toContain(`location ${NOT_CONFIGURED} is not in this configuration's sources`);
    expect(refused.code).toBe(ExitCode.NOT_READY);
    expect(refused.stdout.trim().split('\n')[1]).toMatch(
      new RegExp(
        `^refused \\S+ test-instance LOCATION_NOT_CONFIGURED: location ${NOT_CONFIGURED} is not in the configuration`,
      ),
    );

    // Another instance (a restart, a handover) reads the paused state back from the topic, and answers nothing again.
    const next = await signalsOf();
    await next.ready();
    expect(next.paused.isPaused(LOCATION_A)).toBe(true);
    expect(pauseId).toMatch(/^[0-9a-f-]{36}$/);
  });
});
