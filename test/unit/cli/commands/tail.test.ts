import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { tailLine } from '../../../../src/cli/commands/tail.js';

function message(overrides: Partial<KafkaMessage> = {}): KafkaMessage {
  return {
    key: Buffer.from('call-1'),
    value: Buffer.from('ignored'),
    timestamp: String(Date.parse('2026-03-01T12:00:00.250Z')),
    attributes: 0,
    offset: '42',
    headers: {},
    ...overrides,
  } as KafkaMessage;
}

describe('tailLine', () => {
  it('shows topic, partition, offset, the record timestamp as ISO, the key and the headers as text', () => {
    const line = tailLine(
      'calls',
      2,
      message({
        headers: {
          'calls-connector.source.location': Buffer.from('loc-1'),
          'calls-connector.source.page': Buffer.from('3'),
          repeated: [Buffer.from('a'), Buffer.from('b')],
        },
      }),
      { uid: 'call-1' },
    );
    expect(line).toEqual({
      topic: 'calls',
      partition: 2,
      offset: '42',
      timestamp: '2026-03-01T12:00:00.250Z',
      key: 'call-1',
      headers: {
        'calls-connector.source.location': 'loc-1',
        'calls-connector.source.page': '3',
        repeated: ['a', 'b'],
      },
      value: { uid: 'call-1' },
    });
  });

  it('prints a null key and no headers as such', () => {
    expect(tailLine('calls.dlq', 0, message({ key: null, headers: undefined }), 'x')).toMatchObject({
      key: null,
      headers: {},
    });
  });
});
