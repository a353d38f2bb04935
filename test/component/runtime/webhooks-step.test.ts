/**
 * The webhook step of the runtime: off by default, and when on, a receiver on its own port that the lifecycle
 * closes, warning loudly at start when signatures are off.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { testMetrics } from '../../support/metrics.js';
import { Lifecycle } from '../../../src/runtime/lifecycle.js';
import { Failures, type StartContext } from '../../../src/runtime/steps/context.js';
import { startWebhooks } from '../../../src/runtime/steps/webhooks.js';
import { systemClock } from '../../../src/time/clock.js';
import { counterValue } from '../../support/counters.js';
import { capturingLogger } from '../../support/logger.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';
import { post } from '../webhooks/post.js';

function context(webhooks: object) {
  const capture = capturingLogger();
  const metrics = testMetrics();
  const config = parseConfig({ ...MINIMAL_CONFIG, webhooks }, {});
  const ctx: StartContext = {
    config,
    logger: capture.logger,
    metrics,
    clock: systemClock,
    startedAt: 0,
    lifecycle: new Lifecycle(capture.logger),
    failures: new Failures('n', metrics, capture.logger),
  };
  return { ctx, capture, metrics };
}

describe('the webhook start-up step', () => {
  it('starts nothing while webhooks are off (the default)', async () => {
    const { ctx } = context({});
    expect(await startWebhooks(ctx, {})).toBeNull();
  });

  it('starts a receiver whose nudges are counted, closed by the lifecycle', async () => {
    const { ctx, metrics, capture } = context({ enabled: true, port: 0, allowUnsigned: true });
    const started = await startWebhooks(ctx, {});
    expect(started?.address.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks\/calls$/);
    const url = started?.address.url ?? '';
    const body = JSON.stringify({
      type: 'call.updated',
      data: { uid: 'c1', locationUid: MINIMAL_CONFIG.sources[0].locations[0] },
    });
    expect((await post(url, { body })).status).toBe(202);
    expect(await counterValue(metrics.webhookNudges, { resolution: 'payload_location' })).toBe(1);
    expect(capture.lines().find((l) => l.level === 40)?.msg).toMatch(/WEBHOOK SIGNATURES ARE NOT CHECKED/);
    await ctx.lifecycle.close();
    await expect(post(url, { body })).rejects.toThrow(/ECONNREFUSED/);
  });

  it('refuses to start without a signing secret', async () => {
    const { ctx } = context({ enabled: true, port: 0 });
    await expect(startWebhooks(ctx, {})).rejects.toMatchObject({ code: 'WEBHOOK_SECRET_MISSING' });
  });
});
