/**
 * What the webhook integration tests (single and distributed mode, issue 33) share: a sandbox that sends
 * signed call.* deliveries, the connector document with the receiver on, a forged delivery, and the figures
 * they check (deliveries by outcome, each version published once).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { ConnectorConfig } from '../../src/config/schema.js';
import type { ConnectorMetrics } from '../../src/metrics/metrics.js';
import type { RunningSandbox } from '../../packages/sandbox/src/index.js';
import {
  connectorDocument,
  publishedCalls,
  startTestSandbox,
  versionId,
  type ExpectedVersion,
} from './connector.js';
import { counterValue, testKafka } from './kafka.js';

/** The environment variable the receiver reads its secret from (webhooks.signature.secretEnv's default). */
export const WEBHOOK_SECRET_ENV = 'CALLS_CONNECTOR_WEBHOOK_SECRET';

export interface WebhookSandbox {
  sandbox: RunningSandbox;
  /** The connector's environment: the sandbox's signing secret. */
  env: Record<string, string>;
}

/**
 * A sandbox with `data` whose deliveries retry fast (a refused one is sent again within milliseconds) and whose
 * delayed, reordered and replayed ones wait `faultDelayMs`.
 */
export async function startWebhookSandbox(
  data: { seed: number; locations: number; callsPerLocation: number },
  faultDelayMs = 30,
): Promise<WebhookSandbox> {
  const sandbox = await startTestSandbox({
    data,
    webhooks: { retry: { initialDelayMs: 5, maxDelayMs: 20 }, faults: { delayMs: faultDelayMs } },
  });
  return { sandbox, env: { [WEBHOOK_SECRET_ENV]: sandbox.admin.webhooks.secret } };
}

/**
 * A connector document on `sandbox` with its receiver on `port` (loopback), reconciling every
 * `reconcileIntervalMs`; unsplit, as a split location's first traversal completes only at the live poll after
 * its history merged. `extra` adds to the document (connector, kafka).
 */
export function webhookDocument(
  sandbox: RunningSandbox,
  receiver: { port: number; reconcileIntervalMs: number; missedGraceMs?: number },
  kafka: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    ...connectorDocument(sandbox, { lanes: { enabled: false }, kafka }),
    webhooks: {
      enabled: true,
      host: '127.0.0.1',
      port: receiver.port,
      reconcileIntervalMs: receiver.reconcileIntervalMs,
      ...(receiver.missedGraceMs !== undefined && { missedGraceMs: receiver.missedGraceMs }),
    },
  };
}

/** The receiver's URL on `port`. */
export const receiverUrl = (port: number): string => `http://127.0.0.1:${port}/webhooks/calls`;

/** A forgery: a well-formed, fresh call.updated delivery signed with a key that is not the sandbox's. */
export function sendForgedDelivery(
  url: string,
  call: { uid: string; locationUid: string },
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': `msg_forged_${randomBytes(4).toString('hex')}`,
      'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
      'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
    },
    body: JSON.stringify({ type: 'call.updated', data: call }),
  });
}

/** Deliveries the receiver counted with `outcome` (accepted, bad_signature, replayed, ...). */
export const deliveries = (metrics: ConnectorMetrics, outcome: string): Promise<number> =>
  counterValue(metrics.webhookDeliveries, { outcome });

/** Exactly the expected versions, each once, as a read_committed consumer sees them (0 lost, 0 duplicated). */
export async function expectEachVersionOnce(
  config: ConnectorConfig,
  expected: readonly ExpectedVersion[],
): Promise<void> {
  const calls = await publishedCalls(testKafka(), config, expected);
  expect(calls.map(versionId).sort()).toEqual(expected.map(versionId).sort());
}
