/**
 * The session's start-up refusals that need no broker. Issue 20: without the kafkajs read_committed fix an
 * aborted offset record can be read as committed (a location then skips pages never published), so exactly-once
 * refuses to start instead of warning.
 */
import { describe, expect, it, vi } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { prepareKafka } from '../../../src/kafka/session.js';
import { sinkSettings } from '../../../src/runtime/steps/kafka.js';

vi.mock('../../../src/kafka/client/kafkajs-read-committed-fix.js', () => ({
  readCommittedFixInstalled: () => false,
}));

function config(exactlyOnce: boolean) {
  return parseConfig(
    {
      connector: { name: 'orders' },
      api: { baseUrl: 'https://api.example.com' },
      auth: { staticToken: 'token' },
      sources: [{ locations: ['11111111-1111-1111-1111-111111111111'] }],
      // Nothing listens here: a start that went past the check would fail differently (KAFKA_UNAVAILABLE).
      kafka: { brokers: ['127.0.0.1:1'], exactlyOnce },
      schemaRegistry: { url: 'http://127.0.0.1:1' },
    },
    {},
  );
}

describe('prepareKafka', () => {
  it('refuses exactly-once at once when the kafkajs read_committed fix is not installed', async () => {
    await expect(
      prepareKafka({
        config: config(true),
        sinks: sinkSettings(config(true).kafka),
        logger: silentLogger(),
        metrics: testMetrics(),
      }),
    ).rejects.toMatchObject({ code: 'KAFKA_READ_COMMITTED_FIX_MISSING' });
  });
});
