import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpsDispatcher } from '../../../src/https/dispatcher.js';
import { HttpTokenEndpoint } from '../../../src/auth/token-endpoint.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import { startSandbox, type RunningSandbox } from '../../../packages/sandbox/src/index.js';

describe('HttpTokenEndpoint against the sandbox', () => {
  let sandbox: RunningSandbox;
  const dispatchers: { close(): Promise<void> }[] = [];

  beforeEach(async () => {
    sandbox = await startSandbox({ data: { locations: 1, callsPerLocation: 1 } });
  });
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.close()));
    await sandbox.close();
  });

  function endpoint(
    options: {
      trustSandbox?: boolean;
      clientSecret?: string;
      metrics?: ConnectorMetrics;
      maxResponseBytes?: number;
    } = {},
  ): HttpTokenEndpoint {
    const dispatcher = createHttpsDispatcher(
      options.trustSandbox === false ? {} : { extraCaPem: sandbox.caCertPem ?? undefined },
    );
    dispatchers.push(dispatcher);
    return new HttpTokenEndpoint({
      baseUrl: sandbox.baseUrl,
      clientId: sandbox.client.clientId,
      clientSecret: options.clientSecret ?? sandbox.client.clientSecret,
      dispatcher,
      retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 },
      ...(options.metrics && { metrics: options.metrics }),
      ...(options.maxResponseBytes !== undefined && { maxResponseBytes: options.maxResponseBytes }),
    });
  }

  it('refreshes with a JSON body (the sandbox refuses any other content type)', async () => {
    const { refreshToken } = sandbox.issueTokens();
    const response = await endpoint().refresh(refreshToken);
    expect(response.accessToken).toMatch(/\S+/);
    expect(response.refreshToken).toBe(refreshToken);
    expect(sandbox.admin.stats().byStatus['415']).toBeUndefined();
  });

  it('reports an unknown authorization code as AUTH_INVALID_GRANT telling the person to log in again', async () => {
    await expect(endpoint().redeemCode('not-a-real-code', sandbox.client.redirectUri)).rejects.toMatchObject({
      code: 'AUTH_INVALID_GRANT',
      message: expect.stringContaining('auth login') as unknown,
    });
  });

  it('retries 5xx answers, then gives up with a retriable error', async () => {
    sandbox.admin.setFaults({ serverErrorRate: 1, includeTokenEndpoint: true });
    const metrics = testMetrics();
    await expect(endpoint({ metrics }).refresh(sandbox.issueTokens().refreshToken)).rejects.toMatchObject({
      code: 'AUTH_TOKEN_ENDPOINT_UNAVAILABLE',
      disposition: 'retriable',
    });
    expect(sandbox.admin.stats().tokenRequests).toBe(3);
    const retries = (await metrics.registry.getSingleMetric('calls_connector_api_retries_total')?.get())
      ?.values;
    expect(retries?.reduce((sum, v) => sum + v.value, 0)).toBe(2);
  });

  it('stops reading a response body longer than its limit and fails the attempt as retriable', async () => {
    const error = endpoint({ maxResponseBytes: 16 }).refresh(sandbox.issueTokens().refreshToken);
    await expect(error).rejects.toMatchObject({
      code: 'AUTH_TOKEN_RESPONSE_TOO_LARGE',
      disposition: 'retriable',
      message: expect.stringContaining('exceeds 16 bytes') as unknown,
    });
    expect(sandbox.admin.stats().tokenRequests).toBe(3);
  });

  it('refuses an untrusted certificate as a fatal configuration problem naming api.caFile', async () => {
    await expect(endpoint({ trustSandbox: false }).refresh('whatever')).rejects.toMatchObject({
      code: 'AUTH_ENDPOINT_TLS_UNTRUSTED',
      disposition: 'fatal',
      message: expect.stringContaining('api.caFile') as unknown,
    });
  });

  it('refuses a plain-http base URL at construction', () => {
    const dispatcher = createHttpsDispatcher();
    dispatchers.push(dispatcher);
    expect(
      () =>
        new HttpTokenEndpoint({
          baseUrl: 'http://127.0.0.1:1',
          clientId: 'c',
          clientSecret: 's',
          dispatcher,
        }),
    ).toThrow(/must be reached over https/);
  });
});
