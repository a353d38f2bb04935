import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import * as demo from '../../../src/demo/demo-webhooks.js';
import { testMetrics } from '../../support/metrics.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

describe("the demo's webhooks", () => {
  it('turns the receiver on at the port given, the secret from the demo file, reconciling every 30 s', () => {
    const { webhooks } = parseConfig(
      { ...MINIMAL_CONFIG, webhooks: demo.demoWebhooksSection(40_123, '/demo/secrets/webhook-secret') },
      {},
    );
    expect(webhooks).toMatchObject({
      enabled: true,
      host: '127.0.0.1',
      port: 40_123,
      reconcileIntervalMs: demo.RECONCILE_INTERVAL_MS,
      signature: { secretEnv: [], secretFiles: ['/demo/secrets/webhook-secret'] },
    });
  });

  it('counts the changes that came by webhook and by reconciliation poll, over every instance', async () => {
    const metrics = [testMetrics(), testMetrics()];
    expect(await demo.webhookArrivals(metrics)).toEqual({ webhook: 0, poll: 0 });
    metrics[0]?.webhookNudgeToPublished.observe(0.4);
    metrics[0]?.webhookNudgeToPublished.observe(1.2);
    metrics[1]?.webhookNudgeToPublished.observe(0.2);
    metrics[1]?.webhookMissedDeliveries.inc(2);
    expect(await demo.webhookArrivals(metrics)).toEqual({ webhook: 3, poll: 2 });
  });
});
