/**
 * The Kafka token-store backend on a real broker: compacted topic, last value wins, read to end at load,
 * encrypted values, and two connector instances sharing one grant while the service rotates refresh tokens.
 */
import { randomBytes } from 'node:crypto';
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, describe, expect, it } from 'vitest';
import { StoreKey } from '../../../src/auth/store/encryption.js';
import { TokenTopicBackend } from '../../../src/kafka/token-store/token-topic-backend.js';
import { TokenStore, type GrantRecord } from '../../../src/auth/store/token-store.js';
import { TokenManager } from '../../../src/auth/token-manager.js';
import { readCommitted, testKafka } from '../../support/kafka.js';
import { startOAuthFixture } from '../../support/auth/oauth-fixture.js';
import { uniqueName } from '../../support/stack.js';

const HOUR = 3600_000;
const kafka = testKafka('token-store-test');
const stores: TokenStore[] = [];

function kafkaStore(topic: string, key: StoreKey): TokenStore {
  const store = new TokenStore(
    new TokenTopicBackend({
      kafka,
      topic,
      groupIdPrefix: 'token-store-test-reader',
      replicationFactor: 1,
      createTopic: true,
    }),
    key,
  );
  stores.push(store);
  return store;
}

const record: GrantRecord = {
  grant: 'default',
  clientId: 'client',
  accessToken: 'at-PLAINTEXT-MARKER-1',
  refreshToken: 'rt-PLAINTEXT-MARKER-1',
  accessTokenExpiresAt: 10 * HOUR,
  obtainedAt: 0,
  scopes: ['read_phones'],
};

afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

describe('Kafka token store', () => {
  it('creates a compacted topic; another instance reads the last value written for each grant', async () => {
    const topic = uniqueName('tokens');
    const key = new StoreKey(randomBytes(32));
    const writer = kafkaStore(topic, key);
    await writer.writeGrant(record);
    await writer.writeGrant({ ...record, accessToken: 'at-2', refreshToken: 'rt-2' });
    await writer.writeGrant({ ...record, grant: 'other' });

    const reader = kafkaStore(topic, key);
    expect(await reader.readGrant('default')).toMatchObject({ accessToken: 'at-2', refreshToken: 'rt-2' });
    expect((await reader.listGrants()).sort()).toEqual(['default', 'other']);

    const admin = kafka.admin();
    await admin.connect();
    try {
      const described = await admin.describeConfigs({
        resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }],
        includeSynonyms: false,
      });
      expect(described.resources[0]?.configEntries[0]?.configValue).toBe('compact');
    } finally {
      await admin.disconnect();
    }
  });

  it('keys records by entry name and stores values that are unreadable without the key', async () => {
    const topic = uniqueName('tokens');
    const store = kafkaStore(topic, new StoreKey(randomBytes(32)));
    await store.writeGrant(record);
    const records = await readCommitted(kafka, topic);
    // The grant, and the sealed map of latest generations (replay defence).
    expect(records.map((r) => r.key?.toString()).sort()).toEqual(['grant:default', 'meta:generations']);
    expect(records[0]?.value?.includes(Buffer.from('PLAINTEXT-MARKER'))).toBe(false);
    await expect(kafkaStore(topic, new StoreKey(randomBytes(32))).readGrant('default')).rejects.toMatchObject(
      {
        code: 'AUTH_STORE_KEY_MISMATCH',
      },
    );
  });

  it('carries an authorization state between instances and refuses its reuse', async () => {
    const topic = uniqueName('tokens');
    const key = new StoreKey(randomBytes(32));
    const pending = {
      grant: 'default',
      redirectUri: 'https://127.0.0.1/cb',
      scopes: ['read_phones'],
      createdAt: 0,
      expiresAt: Date.now() + 60_000,
    };
    await kafkaStore(topic, key).rememberState('StateFromUrl1', pending);
    expect(await kafkaStore(topic, key).consumeState('StateFromUrl1', Date.now())).toMatchObject({
      status: 'accepted',
    });
    expect(await kafkaStore(topic, key).consumeState('StateFromUrl1', Date.now())).toEqual({
      status: 'reused',
    });
  });

  it('two instances sharing a grant keep working while the service rotates refresh tokens', async () => {
    const fx = await startOAuthFixture({ sandbox: { rotateRefreshTokens: true } });
    try {
      const topic = uniqueName('tokens');
      const key = new StoreKey(randomBytes(32));
      const oauth = await fx.open();
      const issued = fx.sandbox.issueTokens();
      const now = Date.now();
      await kafkaStore(topic, key).writeGrant({
        ...record,
        ...issued,
        accessTokenExpiresAt: now + 10 * HOUR,
        obtainedAt: now,
      });
      const instance = (): TokenManager =>
        new TokenManager({
          grant: 'default',
          store: kafkaStore(topic, key),
          endpoint: oauth.endpoint,
          refreshBeforeExpiryMs: 60_000,
          rotationGraceMs: 2_000,
        });
      const [a, b] = [instance(), instance()];
      const first = await a.accessToken();
      expect(await b.accessToken()).toBe(first);

      // Sequential: A refreshes and stores the rotated pair; B, on its 401, adopts it without a token request.
      fx.sandbox.admin.advanceClock(10 * HOUR + 1000);
      const before = fx.sandbox.admin.stats().tokenRequests;
      const fromA = await a.refreshAfterRejection(first);
      expect(await b.refreshAfterRejection(first)).toBe(fromA);
      expect(fx.sandbox.admin.stats().tokenRequests - before).toBe(1);
      expect(await fx.listCalls(fromA)).toBe(200);

      // Simultaneous: both refresh with the same refresh token; the loser's invalid_grant is reconciled from
      // the store (the winner's rotated pair), not reported as a revoked grant.
      fx.sandbox.admin.advanceClock(10 * HOUR + 1000);
      const [ta, tb] = await Promise.all([a.refreshAfterRejection(fromA), b.refreshAfterRejection(fromA)]);
      expect(await fx.listCalls(ta)).toBe(200);
      expect(await fx.listCalls(tb)).toBe(200);
    } finally {
      await fx.close();
    }
  });
});
