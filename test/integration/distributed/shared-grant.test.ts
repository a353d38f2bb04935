/**
 * One OAuth grant shared by three connector processes in distributed mode (issue 14 point 3), through the
 * Kafka token store, while the sandbox rotates the refresh token on every refresh (each refresh retires the
 * one it used). The connectors believe their access tokens live one minute (oauth.accessTokenLifetimeMs) and
 * refresh them seconds after they are issued, so refreshes of the three instances keep crossing; then the
 * sandbox's clock jumps past the tokens' real expiry, so the requests still carrying one meet 401s, and every
 * instance needs a token issued after the jump to keep polling.
 *
 * The grant must survive all of it: no instance declares it revoked, none keeps answering 401s, every
 * location keeps completing traversals, and the refresh token rotates many times.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreKey } from '../../../src/auth/store/encryption.js';
import { TokenTopicBackend } from '../../../src/kafka/token-store/token-topic-backend.js';
import { TokenStore } from '../../../src/auth/store/token-store.js';
import { connectorScenario, type ConnectorScenario } from '../../support/connector-scenario.js';
import {
  awaitSettled,
  diagnostics,
  metricOf,
  traversedSince,
  type Instance,
} from '../../support/distributed.js';
import { eventually } from '../../support/kafka.js';
import { uniqueName } from '../../support/stack.js';

const KEY_ENV = 'SHARED_GRANT_TOKEN_KEY';
const SECRET_ENV = 'SHARED_GRANT_CLIENT_SECRET';
const HOUR = 3600_000;
/** Rotations of the refresh token the run must see (counted from the instances' logs). */
const ROTATIONS = 12;

/** What an instance's token manager logged: its own refreshes, those that rotated, pairs adopted from the store. */
function refreshesOf(instance: Instance): { refreshes: number; rotations: number; adopted: number } {
  const lines = instance.output().split('\n');
  const refreshed = lines.filter((l) => l.includes('"msg":"access token refreshed"'));
  return {
    refreshes: refreshed.length,
    rotations: refreshed.filter((l) => l.includes('"refreshTokenRotated":true')).length,
    adopted: lines.filter((l) => l.includes('rotated by another instance')).length,
  };
}

describe('three connector processes sharing one OAuth grant whose refresh token rotates', () => {
  let scenario: ConnectorScenario;
  const key = randomBytes(32).toString('base64');
  const store = { topic: uniqueName('tokens') };

  beforeAll(async () => {
    scenario = await connectorScenario({
      mode: 'distributed',
      sandbox: {
        rotateRefreshTokens: true,
        data: { seed: 53, locations: 24, callsPerLocation: 10, privateRatio: 0.3 },
        live: { updatesPerSecond: 2, createsPerSecond: 2 },
      },
      connector: {
        poll: { intervalMs: 500, maxLocationsInFlight: 3 },
        kafka: { offsetsTopicPartitions: 6, groupSessionTimeoutMs: 6000, groupHeartbeatIntervalMs: 1000 },
      },
      // The OAuth grant in place of the static token: a Kafka token store, key and client secret from the env.
      document: ({ auth: _static, ...base }, sandbox) => ({
        ...base,
        oauth: {
          clientId: sandbox.client.clientId,
          clientSecret: `\${${SECRET_ENV}}`,
          redirectUri: sandbox.client.redirectUri,
          store: { type: 'kafka', topic: store.topic },
          keyEnv: KEY_ENV,
          // Tokens believed to live a minute and due for refresh 1-2 s after issue: the instances refresh all
          // along, and a pair one of them stores is soon due for the others too (they race to refresh it).
          accessTokenLifetimeMs: 60_000,
          refreshBeforeExpiryMs: 58_000,
          refreshJitterMs: 1_000,
        },
      }),
      env: (sandbox) => ({ [KEY_ENV]: key, [SECRET_ENV]: sandbox.client.clientSecret }),
    });
    const { sandbox, kafka } = scenario;

    // The grant as `auth login` would have stored it, in the Kafka token store the instances share.
    const tokens = new TokenStore(
      new TokenTopicBackend({
        kafka,
        topic: store.topic,
        groupIdPrefix: 'shared-grant-test',
        replicationFactor: 1,
        createTopic: true,
      }),
      new StoreKey(Buffer.from(key, 'base64')),
    );
    const now = Date.now();
    await tokens.writeGrant({
      grant: 'default',
      clientId: sandbox.client.clientId,
      ...sandbox.issueTokens(),
      accessTokenExpiresAt: now + 60_000,
      obtainedAt: now,
      scopes: ['read_phones'],
    });
    await tokens.close();
  });

  afterAll(() => scenario.close());

  it('keeps the grant valid on every instance, without 401 loops, while every location keeps syncing', async () => {
    const { sandbox, instances } = scenario;
    const tokenRequestsAtStart = sandbox.admin.stats().tokenRequests;
    for (const name of ['g1', 'g2', 'g3']) scenario.startInstance(name);
    const names = instances.map((i) => i.name);
    const settled = await awaitSettled(instances, sandbox.locations, names);
    // Each instance polls locations, so each one uses (and refreshes) the grant.
    for (const [name, status] of settled)
      expect(status.tasks.length, `${name} owns locations`).toBeGreaterThan(0);
    const rotations = () => instances.reduce((sum, i) => sum + refreshesOf(i).rotations, 0);

    // Proactive refreshes of the three instances cross each other for a while.
    await eventually(() => rotations() >= ROTATIONS / 2, 60_000, `${ROTATIONS / 2} rotations`).catch(
      (error: unknown) => {
        throw new Error(`${String(error)}\n${diagnostics(instances)}`);
      },
    );

    // Every access token expires at once on the service: the requests still carrying one are answered 401, and
    // every location completes a traversal after the jump, so each instance got a token the service accepts.
    const expiredAt = Date.now();
    const unauthorizedAtJump = sandbox.admin.stats().byStatus['401'] ?? 0;
    sandbox.admin.advanceClock(10 * HOUR + 60_000);
    await awaitSettled(instances, sandbox.locations, names, traversedSince(sandbox.locations, expiredAt));
    expect(sandbox.admin.stats().byStatus['401'] ?? 0, '401s after the jump').toBeGreaterThan(
      unauthorizedAtJump,
    );
    await eventually(() => rotations() >= ROTATIONS, 60_000, `${ROTATIONS} rotations`);
    // The rotations the instances logged are refreshes the service answered: one token request each at least.
    expect(sandbox.admin.stats().tokenRequests - tokenRequestsAtStart).toBeGreaterThanOrEqual(rotations());

    // No 401 loop: once everyone refreshed, a full round of every location adds no 401.
    const unauthorized = sandbox.admin.stats().byStatus['401'] ?? 0;
    const roundFrom = Date.now();
    await awaitSettled(instances, sandbox.locations, names, traversedSince(sandbox.locations, roundFrom));
    const afterRound = sandbox.admin.stats().byStatus['401'] ?? 0;

    const figures = instances.map((i) => `${i.name} ${JSON.stringify(refreshesOf(i))}`).join(', ');
    console.info(
      `shared grant: ${rotations()} rotations (${figures}); ${afterRound} responses 401 in all, ` +
        `${sandbox.admin.stats().tokenRequests} token requests`,
    );
    // The sandbox never invalidates an access token early: every 401 of that round would be a token the
    // service no longer knows, i.e. an instance stuck on a pair another one's refresh replaced.
    expect(afterRound - unauthorized, diagnostics(instances)).toBe(0);
    for (const instance of instances) {
      expect(instance.output(), instance.name).not.toContain('AUTH_GRANT_REVOKED');
      expect(await metricOf(instance, 'calls_connector_grant_valid{grant="default"}'), instance.name).toBe(1);
    }
    for (const instance of instances) instance.child.kill('SIGTERM');
    for (const instance of instances) expect(await instance.exited, instance.output()).toBe(0);
  });
});
