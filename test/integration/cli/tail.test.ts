/** `calls-connector tail` against the real broker and registry, through the built CLI in a child process. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DLQ_HEADERS } from '../../../src/kafka/records/dead-letter-message.js';
import { SOURCE_HEADERS } from '../../../src/kafka/records/source-headers.js';
import { kafkaCommandsConfig } from '../../support/config-file.js';
import { startTestSession, testKafkaConfig } from '../../support/kafka.js';
import { sampleCall } from '../../support/calls.js';
import { uniqueName } from '../../support/stack.js';

const cli = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');
const LOCATION = '00000000-0000-4000-8000-0000000000c1';

async function tail(configFile: string, ...args: string[]): Promise<Record<string, unknown>[]> {
  const child = spawn(process.execPath, [cli, 'tail', '--config', configFile, '--from-beginning', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  expect(code, stderr).toBe(0);
  return stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('calls-connector tail', () => {
  it('prints calls with partition, offset, timestamp and source headers, and reads the dead-letter topic', async () => {
    const kafka = testKafkaConfig();
    const connectorName = uniqueName('tail');
    const { session } = await startTestSession({ connectorName, kafka });
    const call = sampleCall({ locationUid: LOCATION });
    await session.sink.commitPage({
      locationUid: LOCATION,
      calls: [call],
      deadLetters: [
        { locationUid: LOCATION, code: 'CALL_UNMAPPABLE', message: 'no uid', payload: '{"x":1}' },
      ],
      offset: { since: null, cursor: 'c1', watermark: call.updatedAt, boundary: [call.uid] },
      source: { traversalId: 'trav-9', page: 1, since: null, cursor: null },
    });
    await session.close();
    const configFile = await kafkaCommandsConfig(connectorName, kafka, [LOCATION]);

    const [record] = await tail(configFile, '--max', '1');
    expect(record).toMatchObject({
      topic: kafka.topic,
      partition: expect.any(Number) as number,
      offset: '0',
      key: call.uid,
      headers: {
        [SOURCE_HEADERS.connector]: connectorName,
        [SOURCE_HEADERS.location]: LOCATION,
        [SOURCE_HEADERS.traversal]: 'trav-9',
        [SOURCE_HEADERS.page]: '1',
      },
      value: { uid: call.uid, locationUid: LOCATION },
    });
    expect(Date.parse(String(record?.timestamp))).not.toBeNaN();

    const [dead] = await tail(configFile, '--dead-letters', '--max', '1');
    expect(dead).toMatchObject({
      topic: kafka.dlqTopic,
      headers: { [DLQ_HEADERS.code]: 'CALL_UNMAPPABLE', [DLQ_HEADERS.location]: LOCATION },
      value: { x: 1 },
    });
  });
});
