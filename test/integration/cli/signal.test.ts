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
import { SignalTopicWriter } from '../../../src/kafka/signals/signal-topic.js';
import { signalsTopicName, topicPartitionCount } from '../../../src/kafka/topics/topics.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { SignalAnswers } from '../../../src/runtime/signals/signal-answers.js';
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

  it('with --wait prints the refusal an instance answers for a location it is not configured with', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('signal-wait');
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A]);
    const topic = signalsTopicName(kafka.offsetsTopic);
    // A first signal creates the topic before the answering instance starts reading it.
    capture(process.stdout);
    capture(process.stderr);
    expect(await sendSignal(file, 'pause', { location: LOCATION_A })).toBe(ExitCode.OK);
    vi.restoreAllMocks();

    const writer = await SignalTopicWriter.connect(testKafka(), { topic, connectorName, partitionCount: 24 });
    opened.push(() => writer.disconnect());
    const answers = new SignalAnswers({
      instance: 'test-instance',
      partitionOf: (uid) => writer.partitionOf(uid),
      ownsPartition: () => true,
      configured: (uid) => uid === LOCATION_A,
      write: (partition, outcome) => writer.answerAt(partition, outcome),
      target: null,
      clock: systemClock,
      logger: silentLogger(),
    });
    await startReader(topic, connectorName, (entry, at) => answers.onEntry(entry, at));
    await answers.caughtUp();
    await eventually(() => answers.isPaused(LOCATION_A), 20_000, 'the pause done and read back');

    const stdout = capture(process.stdout);
    const stderr = capture(process.stderr);
    const code = await sendSignal(file, 'resume', {
      location: NOT_CONFIGURED,
      wait: true,
      timeoutMs: 30_000,
    });
    vi.restoreAllMocks();
    expect(stderr.text()).toContain(`location ${NOT_CONFIGURED} is not in this configuration's sources`);
    expect(code).toBe(ExitCode.NOT_READY);
    const [id, outcome] = stdout.text().trim().split('\n');
    expect(outcome).toMatch(
      new RegExp(
        `^refused \\S+ test-instance LOCATION_NOT_CONFIGURED: location ${NOT_CONFIGURED} is not in the configuration`,
      ),
    );
    expect(answers.ledger.outcome(id ?? '')?.state).toBe('refused');
  });
});
