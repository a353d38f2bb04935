/**
 * kafka.sasl.mechanism: oauthbearer against a broker that validates tokens as managed Kafka does (KIP-768):
 * a broker of its own (test/support/oauth-broker.ts, started and stopped here) whose OAUTHBEARER listener checks
 * RS256 JWTs against the JWKS of a loopback identity provider (test/support/jwt-issuer.ts). The connector's
 * Kafka layer creates its topics, writes a page in a transaction and reads it back through that listener with
 * one token; a wrong client secret stops it with an error that says what to fix, and the secret is in no log.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kafkaSchema, schemaRegistrySchema } from '../../../../src/config/schema.js';
import { FatalError } from '../../../../src/errors/index.js';
import { createKafka } from '../../../../src/kafka/client/kafkajs-client.js';
import { createLogger, silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { startJwtIssuer, type JwtIssuer } from '../../../support/jwt-issuer.js';
import { commitTwoCalls, readCommittedAtLeast, startKafkaSession } from '../../../support/kafka.js';
import { startOAuthBroker, type OAuthBroker } from '../../../support/oauth-broker.js';
import { rejectionOf } from '../../../support/rejection.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

const CLIENT_ID = 'calls-connector';
const CLIENT_SECRET = 'oauth-client-secret-4f1e9a';
const AUDIENCE = 'kafka-cluster';

let issuer: JwtIssuer;
let broker: OAuthBroker;

beforeAll(async () => {
  issuer = await startJwtIssuer({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, audience: AUDIENCE });
  broker = await startOAuthBroker({
    jwksUrl: issuer.jwksUrl,
    tokenUrl: issuer.tokenUrl,
    issuer: issuer.issuer,
    audience: AUDIENCE,
  });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  await issuer?.close();
});

function kafkaConfig(clientSecret: string, tokenEndpointUrl = issuer.tokenUrl) {
  return kafkaSchema.parse({
    brokers: [broker.saslBroker],
    sasl: {
      mechanism: 'OAUTHBEARER',
      tokenEndpointUrl,
      clientId: CLIENT_ID,
      clientSecret,
      scope: 'kafka:write',
    },
    topic: uniqueName('calls'),
    offsetsTopic: uniqueName('offsets'),
    dlqTopic: uniqueName('dlq'),
    topicPartitions: 1,
    offsetsTopicPartitions: 1,
  });
}

describe('SASL/OAUTHBEARER with a client credentials token endpoint', () => {
  it('creates the topics, writes a page in a transaction and reads it back through a validating broker, with one token', async () => {
    const kafka = kafkaConfig(CLIENT_SECRET);
    const issuedBefore = issuer.issued();
    const session = await startKafkaSession({
      config: {
        connector: { name: uniqueName('oauth') },
        kafka,
        schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
      },
      logger: silentLogger(),
      metrics: testMetrics(),
    });
    try {
      const calls = await commitTwoCalls(session.sink, '00000000-0000-4000-8000-000000000768');
      const records = await readCommittedAtLeast(session.kafka, kafka.topic, 2);

      expect(records.map((r) => r.key?.toString()).sort()).toEqual(calls.map((c) => c.uid).sort());
      // Every connection (admin, producer, transaction coordinator, consumer) authenticated with one cached token.
      expect(issuer.issued() - issuedBefore).toBe(1);
      expect(issuer.lastRequest()?.get('scope')).toBe('kafka:write');
    } finally {
      await session.close();
    }
  }, 45_000);

  it('stops at a wrong client secret with an error naming what to fix, and logs no secret', async () => {
    const wrongSecret = 'not-the-secret-7c2d';
    const logged: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        logged.push(chunk.toString());
        done();
      },
    });
    const logger = createLogger({ level: 'trace', format: 'json', destination });
    const admin = createKafka({
      config: kafkaConfig(wrongSecret),
      connectorName: 'oauth-test',
      logger,
    }).admin();

    const error = await rejectionOf(admin.connect());
    await admin.disconnect();

    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('KAFKA_OAUTH_CLIENT_REJECTED');
    expect((error as FatalError).message).toContain('invalid_client');
    expect((error as FatalError).message).toContain('kafka.sasl.clientSecret');
    expect((error as FatalError).message).not.toContain(wrongSecret);
    expect(logged.join('')).not.toContain(wrongSecret);
  });

  it('stops with an error naming the token when the broker refuses it (signed by a key its JWKS does not have)', async () => {
    const stranger = await startJwtIssuer({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      audience: AUDIENCE,
    });
    const config = kafkaConfig(CLIENT_SECRET, stranger.tokenUrl);
    const admin = createKafka({ config, connectorName: 'oauth-test', logger: silentLogger() }).admin();
    try {
      const error = await rejectionOf(admin.connect());

      expect(stranger.issued()).toBeGreaterThan(0);
      expect(error).toBeInstanceOf(FatalError);
      expect((error as FatalError).code).toBe('KAFKA_OAUTH_TOKEN_REJECTED');
      expect((error as FatalError).message).toContain('invalid_token');
    } finally {
      await admin.disconnect();
      await stranger.close();
    }
  });
});
