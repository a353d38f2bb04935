import { healingOf } from '../../../src/sync/scheduler/health-rule.js';
import { describe, expect, it } from 'vitest';
import { MockAgent } from 'undici';
import { HttpTokenEndpoint, type HttpTokenEndpointOptions } from '../../../src/auth/token-endpoint.js';
import type { ConnectorError } from '../../../src/errors/index.js';
import { ManualClock } from '../../support/clock.js';
import { rejectionOf } from '../../support/rejection.js';

describe('HttpTokenEndpoint error text', () => {
  it("scrubs token-shaped text out of the server's error and error_description, and truncates them", async () => {
    const agent = new MockAgent();
    agent.disableNetConnect();
    agent
      .get('https://auth.test')
      .intercept({ path: '/oauth/token', method: 'POST' })
      .reply(
        400,
        JSON.stringify({
          error: `bad_request refresh_token=rt-leaked-0001 ${'e'.repeat(500)}`,
          error_description: `echo {"access_token":"at-leaked-0002"} Bearer at-leaked-0003 ${'d'.repeat(1000)}`,
        }),
        { headers: { 'content-type': 'application/json' } },
      );
    const endpoint = new HttpTokenEndpoint({
      baseUrl: 'https://auth.test',
      clientId: 'client',
      clientSecret: 'client-secret-0004',
      dispatcher: agent,
      retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    });
    const error = await endpoint.refresh('rt-sent-0005').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    const message = (error as Error).message;
    for (const leaked of ['rt-leaked-0001', 'at-leaked-0002', 'at-leaked-0003', 'client-secret-0004'])
      expect(message).not.toContain(leaked);
    expect(message.length).toBeLessThan(700);
    await agent.close();
  });
});

describe('HttpTokenEndpoint refusals', () => {
  it('names the client credentials only when the service says invalid_client; a bare 401 is a refusal that heals', async () => {
    const answer = async (body: string) => {
      const agent = new MockAgent();
      agent.disableNetConnect();
      agent
        .get('https://auth.test')
        .intercept({ path: '/oauth/token', method: 'POST' })
        .reply(401, body, { headers: { 'content-type': 'application/json' } });
      const endpoint = new HttpTokenEndpoint({
        baseUrl: 'https://auth.test',
        clientId: 'client',
        clientSecret: 'client-secret',
        dispatcher: agent,
        retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
      });
      const error = await endpoint.refresh('rt').catch((e: unknown) => e);
      await agent.close();
      return error;
    };
    expect(await answer(JSON.stringify({ error: 'invalid_client' }))).toMatchObject({
      code: 'AUTH_CLIENT_REJECTED',
    });
    const bare = await answer('{}');
    expect(bare).toMatchObject({ code: 'AUTH_TOKEN_REQUEST_REFUSED' });
    expect(healingOf(bare)).not.toBe('never');
  });
});

/** A mock token endpoint (its interceptor for POST /oauth/token) and an HttpTokenEndpoint on `clock` using it. */
function mockedEndpoint(clock: ManualClock, options: Partial<HttpTokenEndpointOptions>) {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const token = agent.get('https://auth.test').intercept({ path: '/oauth/token', method: 'POST' });
  const endpoint = new HttpTokenEndpoint({
    baseUrl: 'https://auth.test',
    clientId: 'client',
    clientSecret: 'client-secret',
    dispatcher: agent,
    clock,
    ...options,
  });
  return { agent, token, endpoint };
}

describe('HttpTokenEndpoint retries', () => {
  it('waits between attempts on its clock, doubling the delay with jitter from its random numbers', async () => {
    const clock = new ManualClock(0, 0); // jitter at its floor: half the delay
    const { agent, token, endpoint } = mockedEndpoint(clock, {
      retry: { maxAttempts: 3, initialDelayMs: 1_000, maxDelayMs: 10_000 },
    });
    token.reply(503, 'busy').times(3);

    const refreshed = rejectionOf(endpoint.refresh('rt-1'));
    await clock.sleepingFor(500);
    clock.advance(500);
    await clock.sleepingFor(1_000);
    clock.advance(1_000);

    expect(((await refreshed) as ConnectorError).disposition).toBe('retriable');
    const requestDeadline = 30_000; // each attempt's, cancelled when it answers
    expect(clock.sleeps).toEqual([requestDeadline, 500, requestDeadline, 1_000, requestDeadline]);
    await agent.close();
  });

  it('gives up on a request that does not answer within timeoutMs on its clock, as retriable', async () => {
    const clock = new ManualClock();
    const { agent, token, endpoint } = mockedEndpoint(clock, {
      timeoutMs: 3_000,
      retry: { maxAttempts: 1, initialDelayMs: 1, maxDelayMs: 1 },
    });
    token.reply(200, '{}').delay(10_000);

    const refreshed = rejectionOf(endpoint.refresh('rt-1'));
    await clock.sleeping();
    clock.advance(3_000);

    const error = (await refreshed) as ConnectorError;
    expect(error.code).toBe('AUTH_TOKEN_ENDPOINT_UNAVAILABLE');
    expect(error.details).toMatchObject({ reason: 'timeout' });
    await agent.close();
  });
});
