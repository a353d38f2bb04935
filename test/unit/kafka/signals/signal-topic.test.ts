import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { SignalTopicWriter } from '../../../../src/kafka/signals/signal-topic.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { rejectionOf } from '../../../support/rejection.js';

describe('the signals topic writer', () => {
  it('disconnects its producer when the connect fails', async () => {
    let disconnected = false;
    const kafka = {
      producer: () => ({
        connect: () => Promise.reject(protocolError('CLUSTER_AUTHORIZATION_FAILED')),
        disconnect: () => {
          disconnected = true;
          return Promise.resolve();
        },
      }),
    } as unknown as Kafka;
    const error = await rejectionOf(
      SignalTopicWriter.connect(kafka, { topic: 'offsets-signals', connectorName: 'c', partitionCount: 3 }),
    );
    expect(error).toMatchObject({ type: 'CLUSTER_AUTHORIZATION_FAILED' });
    expect(disconnected).toBe(true);
  });
});
