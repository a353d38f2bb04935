/** Smoke: the broker is a real Kafka that creates topics with configs and reports them back. */
import { ConfigResourceTypes } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { uniqueName } from '../../support/stack.js';
import { createTopics, testKafka } from '../../support/kafka.js';

describe('compacted topic', () => {
  it('is created with cleanup.policy=compact and the broker reports that config back', async () => {
    const kafka = testKafka();
    const topic = uniqueName('smoke-compacted');
    await createTopics(kafka, [{ topic, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }]);

    const admin = kafka.admin();
    await admin.connect();
    try {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }],
      });
      const entries = described.resources[0]?.configEntries ?? [];
      expect(entries.find((e) => e.configName === 'cleanup.policy')?.configValue).toBe('compact');
    } finally {
      await admin.disconnect();
    }
  });
});
