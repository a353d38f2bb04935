/** `calls-connector offsets show|reset` against the real broker, through the command functions. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resetOffset, showOffsets } from '../../../src/cli/commands/offsets.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { InstancePresence, runningInstances } from '../../../src/kafka/group/instance-presence.js';
import { kafkaCommandsConfig } from '../../support/config-file.js';
import { loadOffsetsWhen, startTestSession, testKafka, testKafkaConfig } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';

const LOCATION_A = '00000000-0000-4000-8000-00000000000a';
const LOCATION_B = '00000000-0000-4000-8000-00000000000b';

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs a command function, returning its exit code and what it printed on stdout and stderr. */
async function capture(
  run: () => Promise<number>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += chunk.toString();
    return true;
  });
  const code = await run();
  vi.restoreAllMocks();
  return { code, stdout, stderr };
}

describe('offsets command', () => {
  it('shows stored offsets as JSON, resets one with a tombstone and another to a time', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('cli');
    const { session } = await startTestSession({ connectorName, kafka });
    const offset = { since: null, cursor: 'c', watermark: '2024-05-01T10:00:00Z', boundary: ['u1'] };
    await session.sink.commitPage({ locationUid: LOCATION_A, calls: [], deadLetters: [], offset });
    await session.sink.commitPage({ locationUid: LOCATION_B, calls: [], deadLetters: [], offset });
    await loadOffsetsWhen(session.offsetStore, (o) => o.size === 2);
    await session.close();
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A, LOCATION_B]);

    const shown = await capture(() => showOffsets(file, undefined));
    expect(shown.code).toBe(ExitCode.OK);
    expect(JSON.parse(shown.stdout)).toEqual({ [LOCATION_A]: offset, [LOCATION_B]: offset });

    expect((await capture(() => resetOffset(file, LOCATION_A, undefined))).code).toBe(ExitCode.OK);
    expect((await capture(() => resetOffset(file, LOCATION_B, '2024-06-01T00:00:00Z'))).code).toBe(
      ExitCode.OK,
    );

    const afterReset = await capture(() => showOffsets(file, undefined));
    expect(JSON.parse(afterReset.stdout)).toEqual({
      [LOCATION_A]: null,
      [LOCATION_B]: { since: '2024-06-01T00:00:00Z', cursor: null, watermark: null, boundary: [] },
    });
    const one = await capture(() => showOffsets(file, LOCATION_A));
    expect(one.code).toBe(ExitCode.NOT_READY);
    expect(JSON.parse(one.stdout)).toEqual({ [LOCATION_A]: null });
  });

  it('shows no offsets for a connector whose offsets topic does not exist yet, and creates it for a reset --to', async () => {
    const kafka = testKafkaConfig();
    const file = await kafkaCommandsConfig(uniqueName('cli-fresh'), kafka, [LOCATION_A, LOCATION_B]);

    const shown = await capture(() => showOffsets(file, undefined));
    expect(shown.code).toBe(ExitCode.OK);
    expect(JSON.parse(shown.stdout)).toEqual({ [LOCATION_A]: null, [LOCATION_B]: null });
    expect((await capture(() => resetOffset(file, LOCATION_A, undefined))).stdout).toContain(
      'nothing to reset',
    );

    expect((await capture(() => resetOffset(file, LOCATION_A, '2024-06-01T00:00:00Z'))).code).toBe(
      ExitCode.OK,
    );
    expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
      [LOCATION_A]: { since: '2024-06-01T00:00:00Z', cursor: null, watermark: null, boundary: [] },
    });
  });

  it('shows both lanes of a split location and resets its history lane alone', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('cli-lanes');
    const { session } = await startTestSession({ connectorName, kafka });
    const until = '2024-05-02T00:00:00.000Z';
    const split = {
      since: until,
      cursor: 'live-c',
      watermark: '2024-05-02T00:00:05Z',
      boundary: ['u9'],
      history: { since: null, cursor: 'hist-c', watermark: '2024-05-01T10:00:00Z', boundary: ['u1'], until },
    };
    const plain = { since: '2024-05-01T00:00:00Z', cursor: null, watermark: null, boundary: [] };
    await session.sink.commitPage({ locationUid: LOCATION_A, calls: [], deadLetters: [], offset: split });
    await session.sink.commitPage({ locationUid: LOCATION_B, calls: [], deadLetters: [], offset: plain });
    await loadOffsetsWhen(session.offsetStore, (o) => o.size === 2);
    await session.close();
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A, LOCATION_B]);

    expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
      [LOCATION_A]: split,
    });
    const notSplit = await capture(() => resetOffset(file, LOCATION_B, undefined, { history: true }));
    expect(notSplit.code).toBe(ExitCode.NOT_READY);
    expect(notSplit.stderr).toContain('has no history lane');

    const reset = await capture(() =>
      resetOffset(file, LOCATION_A, '2024-05-01T12:00:00Z', { history: true }),
    );
    expect(reset.code).toBe(ExitCode.OK);
    const { history: _history, ...live } = split;
    expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
      [LOCATION_A]: {
        ...live,
        history: { since: '2024-05-01T12:00:00Z', cursor: null, watermark: null, boundary: [], until },
      },
    });
    expect((await capture(() => resetOffset(file, LOCATION_A, until, { history: true }))).stdout).toContain(
      'history lane of',
    );
    expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
      [LOCATION_A]: live,
    });
  });

  it('refuses to reset while an instance of the connector runs (a member of its group), and resets once it left', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('cli-running');
    const { session } = await startTestSession({ connectorName, kafka });
    const offset = { since: null, cursor: null, watermark: '2024-05-01T10:00:00Z', boundary: [] };
    await session.sink.commitPage({ locationUid: LOCATION_A, calls: [], deadLetters: [], offset });
    await session.close();
    const file = await kafkaCommandsConfig(connectorName, kafka, [LOCATION_A, LOCATION_B]);
    const presence = await InstancePresence.join(testKafka(), connectorName, kafka.offsetsTopic);
    try {
      await vi.waitFor(
        async () => expect(await runningInstances(testKafka(), connectorName)).toHaveLength(1),
        { timeout: 30_000, interval: 250 },
      );

      const refused = await capture(() => resetOffset(file, LOCATION_A, undefined));
      expect(refused.code).toBe(ExitCode.NOT_READY);
      expect(refused.stderr).toContain(`1 instance(s) of connector ${connectorName} are running`);
      expect(refused.stderr).toContain(`${connectorName}-instances`);
      expect(refused.stderr).toContain(
        `calls-connector signal reset --config ${file} --location ${LOCATION_A} --wait`,
      );
      expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
        [LOCATION_A]: offset,
      });
    } finally {
      await presence.leave();
    }

    expect((await capture(() => resetOffset(file, LOCATION_A, undefined))).code).toBe(ExitCode.OK);
    expect(JSON.parse((await capture(() => showOffsets(file, LOCATION_A))).stdout)).toEqual({
      [LOCATION_A]: null,
    });
  });

  it('refuses a malformed location or time with the usage exit code before touching Kafka', async () => {
    const file = await kafkaCommandsConfig(uniqueName('cli'), testKafkaConfig(), [LOCATION_A, LOCATION_B]);
    expect((await capture(() => resetOffset(file, 'not-a-uuid', undefined))).code).toBe(ExitCode.USAGE);
    expect((await capture(() => resetOffset(file, LOCATION_A, 'last tuesday'))).code).toBe(ExitCode.USAGE);
    expect((await capture(() => showOffsets(file, 'nope'))).code).toBe(ExitCode.USAGE);
  });
});
